//! The files `rtlat trend` reads: the paths given, and under each directory
//! the `*.json` files down to [`MAX_DEPTH`] levels, each directory once
//! (a symlink loop or a second link to a directory is not walked again),
//! in name order so that the same tree always gives the same list.

use crate::error::{Error, Result};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How deep under a given directory results are looked for (a suite of
/// several targets is two levels deep; an archive by year/month/board, four).
pub const MAX_DEPTH: usize = 8;

/// A file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrendFile {
    pub path: PathBuf,
    /// The file was named on the command line (not found in a directory).
    pub named: bool,
}

/// Every file to read under `paths`, in order; a path that does not exist
/// is an error naming it (exit 2).
pub fn files(paths: &[PathBuf]) -> Result<Vec<TrendFile>> {
    let mut out = Vec::new();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            Error::usage(format!(
                "cannot read {}: {e}; give result files or directories holding them",
                p.display()
            ))
            .because(e)
        })?;
        if meta.is_dir() {
            walk(p, 0, &mut seen, &mut out);
        } else {
            out.push(TrendFile {
                path: p.clone(),
                named: true,
            });
        }
    }
    Ok(out)
}

fn walk(dir: &Path, depth: usize, seen: &mut HashSet<(u64, u64)>, out: &mut Vec<TrendFile>) {
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    if depth > MAX_DEPTH || !seen.insert((meta.dev(), meta.ino())) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            walk(&p, depth + 1, seen, out);
        } else if m.is_file()
            && p.extension().is_some_and(|x| x == "json")
            && p.file_name()
                .is_some_and(|n| n != crate::suite::manifest::FILE)
        {
            out.push(TrendFile {
                path: p,
                named: false,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_walked_in_order_each_directory_once_and_not_too_deep() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("b/c")).unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        for f in [
            "a/2.json",
            "a/1.json",
            "b/c/3.json",
            "b/notes.txt",
            "b/suite.json",
        ] {
            std::fs::write(root.join(f), "{}").unwrap();
        }
        // A loop back to the top, and a tree deeper than MAX_DEPTH.
        std::os::unix::fs::symlink(root, root.join("b/c/loop")).unwrap();
        let mut deep = root.join("deep");
        for _ in 0..=MAX_DEPTH {
            deep = deep.join("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("far.json"), "{}").unwrap();
        let got: Vec<String> = files(&[root.to_path_buf()])
            .unwrap()
            .into_iter()
            .map(|f| {
                assert!(!f.named);
                f.path.strip_prefix(root).unwrap().display().to_string()
            })
            .collect();
        assert_eq!(got, ["a/1.json", "a/2.json", "b/c/3.json"]);
        let missing = files(&[root.join("nope")]).unwrap_err();
        assert!(missing.message().contains("nope"), "{}", missing.message());
    }
}
