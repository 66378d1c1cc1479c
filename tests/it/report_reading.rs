//! `rtlat report` as people read it: an imported histogram's plots with
//! legible labels, the details lines of the live run, durations to the
//! source's precision. Snapshots are insta's (`tests/snapshots/report/`).

use crate::report::{fixture, run_in};
use crate::snapshot::snapshot;
use crate::util::*;

/// `FILE` imported as `NAME.json` in `dir`.
fn imported(dir: &std::path::Path, file: &str, name: &str) {
    let out = rtlat()
        .arg("import")
        .arg(fixture(file))
        .arg("--output")
        .arg(dir.join(format!("{name}.json")))
        .output()
        .expect("runs");
    assert_exit(&out, 0, "out");
}

case!(an_imported_histograms_band_labels_are_legible, [], |t| {
    // cyclictest 2.10's histogram of two threads, each with samples beyond
    // its range: a band each, their labels over both bands, a line apart.
    imported(t.dir(), "cyclictest-2.10-hist.txt", "hist");
    let out = run_in(t.dir(), &["report", "hist.json", "--svg", "hist.svg"]);
    assert_exit(&out, 0, "out");
    let svg = std::fs::read_to_string(t.path("hist.svg")).expect("svg");
    let histogram = &svg[..svg.find("by percentile").expect("two plots")];
    let last_band = histogram.rfind("fill=\"#fbe3d6\"").expect("bands");
    for thread in ["thread0", "thread1"] {
        let label = histogram
            .find(&format!(">{thread}: ≥ 200 µs: "))
            .unwrap_or_else(|| panic!("no band label of {thread}: {histogram}"));
        assert!(label > last_band, "a band over {thread}'s label");
    }
    snapshot("it-report-imported-hist.svg", &svg);
});
