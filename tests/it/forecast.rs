//! The tail fit against scipy's: the same exceedances, fitted by
//! `rtlat::forecast::gpd::fit` and by `scipy.stats.genpareto.fit`.

use crate::util::{need, Need};
use rtlat::forecast::gpd::{fit, Gpd, Tail};
use rtlat::stats::xorshift;
use std::process::Command;

/// A python3 that imports scipy: the one on PATH, else Debian's.
fn scipy_python() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import scipy.stats"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn draws(gpd: Gpd, n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            let u = ((xorshift(&mut s) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            gpd.size_at(u)
        })
        .collect()
}

#[test]
fn the_fit_agrees_with_scipy_genpareto_within_5_percent() {
    let py = scipy_python();
    if !need(Need::Provided(
        py.is_some(),
        "python3 with scipy (apt-get install python3-scipy)",
    )) {
        return;
    }
    let py = py.expect("checked");
    for (i, shape) in [-0.3, -0.1, 0.0, 0.2, 0.4].into_iter().enumerate() {
        let ys = draws(
            Gpd {
                shape,
                scale: 2500.0,
            },
            2000,
            17 + i as u64,
        );
        let tail = Tail {
            threshold: 0.0,
            samples: ys.len() as f64,
            buckets: ys.iter().map(|&y| (y, y, 1.0)).collect(),
        };
        let ours = fit(&tail).expect("a fit").gpd;
        let list: Vec<String> = ys.iter().map(|y| format!("{y:.6}")).collect();
        let script = format!(
            "from scipy.stats import genpareto\nc, loc, scale = genpareto.fit([{}], floc=0)\nprint(c, scale)",
            list.join(",")
        );
        let out = Command::new(py)
            .args(["-c", &script])
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs: Vec<f64> = text
            .split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect();
        let (c, scale) = (theirs[0], theirs[1]);
        eprintln!(
            "shape {shape}: rtlat {:.4} / {:.1}, scipy {c:.4} / {scale:.1}",
            ours.shape, ours.scale
        );
        assert!(
            (ours.scale / scale - 1.0).abs() <= 0.05,
            "scale {} against scipy's {scale}",
            ours.scale
        );
        // 5 % of the shape, and of 0.1 where the shape is near 0.
        assert!(
            (ours.shape - c).abs() <= 0.05 * c.abs().max(0.1),
            "shape {} against scipy's {c}",
            ours.shape
        );
    }
}

/// `--max-forecast` beside `--max-latency`: a run whose forecast is
/// withheld (2000 samples: too few) cannot show the limit holds and exits 1, its
/// result written first; without the option the same run exits 0.
#[test]
fn max_forecast_exits_1_when_the_forecast_cannot_show_the_limit() {
    use crate::util::{run_json, synthetic_on_cpu0};
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("run.json");
    let run = |extra: &[&str], code| {
        let mut cmd = synthetic_on_cpu0(7, 2000);
        cmd.args(extra);
        run_json(&mut cmd, &json, code)
    };
    let (out, r) = run(&["--max-forecast", "1ms@1e-6"], 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("max-forecast 1000.000 us at 1e-6 per sample: EXCEEDED"),
        "{text}"
    );
    assert!(
        text.contains("forecast cpu0: WITHHELD, too few samples"),
        "{text}"
    );
    assert_eq!(r["thresholds"]["max_forecast_ns"], 1_000_000);
    assert_eq!(r["thresholds"]["max_forecast_exceeded"], true);
    let f = &r["threads"][0]["forecast"];
    assert_eq!(f["exceedance"], 1e-6, "the probability of --max-forecast");
    assert!(f["withheld"].is_string() && f.get("per_sample").is_none());
    let (_, r) = run(&[], 0);
    assert!(r["thresholds"].get("max_forecast_ns").is_none());
    assert!(r["threads"][0]["forecast"]["checks"].is_array());
}

#[test]
fn forecast_options_refuse_bad_values() {
    crate::util::assert_usage_errors(&[
        &["timer", "--synthetic", "1", "--exceedance", "0"],
        &["timer", "--synthetic", "1", "--exceedance", "1.5"],
        &["timer", "--synthetic", "1", "--max-forecast", "1ms@2"],
        &["timer", "--synthetic", "1", "--max-forecast", "0us"],
        &[
            "timer",
            "--synthetic",
            "1",
            "--exceedance",
            "1e-6",
            "--max-forecast",
            "1ms@1e-9",
        ],
        &["report", "x.json", "--confidence", "1"],
    ]);
}
