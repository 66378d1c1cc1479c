//! Details of a `cruncher` result: the calibration and how far runs stretched.

use super::Details;
use serde::{Deserialize, Serialize};

/// The `details` of a cruncher result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CruncherDetails {
    /// Fastest calibration run: the ideal duration of the computation.
    pub ideal_ns: u64,
    /// The length asked for (`--work`).
    pub work_ns: u64,
    /// Steps of the computation, sized at calibration.
    pub iterations: u64,
    pub calibration_runs: u32,
    /// Slowest calibration run (how quiet calibration was).
    pub calibration_slowest_ns: u64,
    /// As a fraction (0.05 = 5 %).
    pub tolerance: f64,
    /// Runs longer than ideal × (1 + tolerance); absent until the run has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_tolerance: Option<u64>,
    /// Longest run over the ideal; absent until the run has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretch: Option<f64>,
}

impl Details for CruncherDetails {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::details::keys_read_back;

    #[test]
    fn keys_are_those_of_the_result_file() {
        let d = CruncherDetails {
            ideal_ns: 1000,
            work_ns: 1000,
            iterations: 5,
            calibration_runs: 20,
            calibration_slowest_ns: 1100,
            tolerance: 0.05,
            beyond_tolerance: Some(2),
            stretch: Some(1.5),
        };
        assert_eq!(
            keys_read_back(&d),
            [
                "beyond_tolerance",
                "calibration_runs",
                "calibration_slowest_ns",
                "ideal_ns",
                "iterations",
                "stretch",
                "tolerance",
                "work_ns"
            ]
        );
    }
}
