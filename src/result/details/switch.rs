//! Details of a `switch` result: the wake line, and every lost wake and why.

use super::Details;
use serde::{Deserialize, Serialize};

/// The `details` of a switch result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchDetails {
    /// The wake mechanism (`--via`).
    pub via: String,
    /// Wakees were forked processes (else threads).
    pub processes: bool,
    /// Lost wakes of all pairs; absent until the run has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// One record per pair, in pair order; empty until the run has ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairDetails>,
}

impl Details for SwitchDetails {}

/// What one pair's waker counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairDetails {
    pub name: String,
    /// Periods without a sample: `wakee_busy + waker_late`.
    pub lost: u64,
    /// Periods lost because the wakee had not completed the previous wake.
    pub wakee_busy: u64,
    /// Periods lost because the waker itself woke a whole period late.
    pub waker_late: u64,
    /// Lost periods after the last sample (in `lost`, not in the summary's overruns).
    pub unrecorded: u64,
    /// Wakes rung.
    pub rung: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::details::keys_read_back;

    #[test]
    fn keys_are_those_of_the_result_file() {
        let d = SwitchDetails {
            via: "futex".into(),
            processes: false,
            lost: Some(3),
            pairs: vec![PairDetails {
                name: "pair0".into(),
                lost: 3,
                wakee_busy: 1,
                waker_late: 2,
                unrecorded: 0,
                rung: 10,
            }],
        };
        assert_eq!(keys_read_back(&d), ["lost", "pairs", "processes", "via"]);
        let m = d.to_map();
        let p = m["pairs"][0].as_object().expect("a pair");
        let mut keys: Vec<&str> = p.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "lost",
                "name",
                "rung",
                "unrecorded",
                "wakee_busy",
                "waker_late"
            ]
        );
        // Before the run ends: only the line.
        let early = SwitchDetails {
            lost: None,
            pairs: Vec::new(),
            ..d
        };
        assert_eq!(early.to_map().len(), 2);
    }
}
