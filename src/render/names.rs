//! Names that tell things apart: results and boards are named by a few
//! parts (host, kernel …); where two names collide, the next part whose
//! values differ among them is added, so a name grows only as much as the
//! set being shown needs.

use std::collections::{BTreeMap, BTreeSet};

/// Each item's name: its parts at `always` (those it has); then, while
/// names collide, the next part of `extra` whose values differ within a
/// colliding group is added to that group's names. Parts show in index
/// order, joined with spaces.
pub fn distinct(items: &[Vec<Option<String>>], always: &[usize], extra: &[usize]) -> Vec<String> {
    let mut chosen: Vec<BTreeSet<usize>> = vec![always.iter().copied().collect(); items.len()];
    let name = |i: usize, chosen: &[BTreeSet<usize>]| {
        chosen[i]
            .iter()
            .filter_map(|&k| items[i].get(k).cloned().flatten())
            .collect::<Vec<_>>()
            .join(" ")
    };
    for &k in extra {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for i in 0..items.len() {
            groups.entry(name(i, &chosen)).or_default().push(i);
        }
        for group in groups.values().filter(|g| g.len() > 1) {
            let values: BTreeSet<Option<&String>> = group
                .iter()
                .map(|&i| items[i].get(k).and_then(Option::as_ref))
                .collect();
            if values.len() > 1 {
                for &i in group {
                    chosen[i].insert(k);
                }
            }
        }
    }
    (0..items.len()).map(|i| name(i, &chosen)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(p: &[Option<&str>]) -> Vec<Option<String>> {
        p.iter().map(|s| s.map(String::from)).collect()
    }

    #[test]
    fn a_part_is_added_only_where_names_collide_and_it_differs() {
        let items = [
            parts(&[Some("vm"), Some("armv7l"), Some("6.6")]),
            parts(&[Some("vm"), Some("ppc"), Some("6.6")]),
            parts(&[Some("vm"), Some("x86_64"), Some("6.6")]),
            parts(&[Some("pi"), Some("aarch64"), Some("6.6")]),
        ];
        assert_eq!(
            distinct(&items, &[0, 2], &[1]),
            ["vm armv7l 6.6", "vm ppc 6.6", "vm x86_64 6.6", "pi 6.6"]
        );
        // The same architecture says nothing: the next part that differs is used.
        let items = [
            parts(&[Some("vm"), Some("x86_64"), Some("a")]),
            parts(&[Some("vm"), Some("x86_64"), Some("b")]),
            parts(&[Some("vm"), Some("x86_64"), None]),
        ];
        assert_eq!(distinct(&items, &[0], &[1, 2]), ["vm a", "vm b", "vm"]);
        assert_eq!(distinct(&items[..1], &[0], &[1, 2]), ["vm"]);
    }
}
