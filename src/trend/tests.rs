//! `rtlat trend` on synthetic nightly results written as real result files:
//! three boards, 100 runs each, a kernel update after the 50th; with and
//! without one board made 40 % worse from one run on.
//!
//! The run-to-run noise is the one measured on the development VM: eight
//! `rtlat timer --duration 2s` runs (SCHED_FIFO 80, 2 CPUs, other builds
//! running beside them) gave a standard deviation of ln(figure) of 0.94 for
//! the maximum, 2.0 for p99.9, 0.47 for p99 and 0.23 for p50; each synthetic
//! figure is log-normal with that spread around the board's level.

use super::change::Test;
use super::runs::{BoardFrom, Runs};
use super::{walk, Trend};
use crate::render::svg::math::pow10;
use crate::render::testdata;
use crate::result::RunResult;
use crate::stats::summary::Percentile;
use crate::stats::{xorshift, Summary};
use std::path::Path;

/// Measured sd of ln(figure) for max, p99.9, p99, p50.
const NOISE_LN: [f64; 4] = [0.94, 2.0, 0.47, 0.23];
/// Typical max, p99.9, p99, p50 of a board, ns.
const LEVEL_NS: [f64; 4] = [8_000_000.0, 600_000.0, 66_000.0, 20_000.0];
pub const BOARDS: [&str; 3] = ["board-a", "board-b", "board-c"];
pub const RUNS: usize = 100;
/// board-b is worse from this run (0-based) on, when asked.
pub const WORSE_FROM: usize = 70;

/// A standard normal draw (Irwin-Hall: twelve uniforms, less 6).
fn normal(s: &mut u64) -> f64 {
    (0..12)
        .map(|_| (xorshift(s) >> 11) as f64 / (1u64 << 53) as f64)
        .sum::<f64>()
        - 6.0
}

/// One nightly result made of `r` (a timer result), with the given figures (max, p99.9, p99, p50).
pub fn nightly(
    mut r: RunResult,
    board: &str,
    kernel: &str,
    day: usize,
    figures: [u64; 4],
) -> RunResult {
    let [max, p999, p99, p50] = figures;
    let summary = Summary {
        samples: 120_000,
        min_ns: (p50 / 4) as i64,
        avg_ns: p50 as i64,
        max_ns: max as i64,
        stddev_ns: None,
        percentiles: [(50.0, p50), (99.0, p99), (99.9, p999)]
            .map(|(p, ns)| Percentile {
                p,
                ns,
                bound: false,
            })
            .to_vec(),
        overruns: 0,
        max_sample: None,
        max_at_ns: None,
    };
    r.threads.truncate(1);
    let t = &mut r.threads[0];
    t.summary = summary.clone();
    t.histogram.buckets.clear();
    t.histogram.overflow = None;
    t.series.points.clear();
    r.total = summary;
    r.tuning.affinity.truncate(1);
    r.tuning.phase_offsets_ns.truncate(1);
    r.system.hostname = Some(board.into());
    r.system.kernel_release = Some(kernel.into());
    let secs = 1_767_600_000 + day as u64 * 86_400;
    r.start_time_utc = crate::result::rfc3339_utc(secs, 0);
    r
}

/// A forecast of `value_ns` per sample at 1e-9, or withheld.
pub fn forecast(value_ns: Option<u64>, withheld: bool) -> crate::result::forecast::Forecast {
    crate::result::forecast::Forecast {
        exceedance: 1e-9,
        level: 0.95,
        withheld: withheld.then(|| "why".into()),
        per_sample: value_ns.map(|v| crate::result::forecast::ForecastValue {
            value_ns: v,
            low_ns: v / 2,
            high_ns: v * 2,
        }),
        per_hour: None,
        max_within: None,
        bound: None,
        fit: None,
        checks: Vec::new(),
        spikes: None,
    }
}

/// board-a's runs hold a forecast: three times the run's max, withheld in
/// every tenth run from the sixth.
fn forecast_of_run(day: usize, max_ns: u64) -> crate::result::forecast::Forecast {
    if day % 10 == 5 {
        forecast(None, true)
    } else {
        forecast(Some(3 * max_ns), false)
    }
}

/// Write the 300 results into `dir`; `worse`: board-b ×1.4 from [`WORSE_FROM`] on;
/// board-a's hold forecasts ([`forecast_of_run`]).
pub fn write_nightlies(dir: &Path, seed: u64, worse: bool) {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let template = testdata::timer_many();
    for (b, board) in BOARDS.iter().enumerate() {
        for day in 0..RUNS {
            let kernel = if day < 50 {
                "6.6.21-rt26"
            } else {
                "6.6.30-rt30"
            };
            let factor = if worse && b == 1 && day >= WORSE_FROM {
                1.4
            } else {
                1.0
            };
            let mut figs = [0u64; 4];
            for (i, f) in figs.iter_mut().enumerate() {
                let v = LEVEL_NS[i]
                    * factor
                    * pow10(NOISE_LN[i] * normal(&mut s) / std::f64::consts::LN_10);
                *f = v.round() as u64;
            }
            // Ordered as figures are: p50 <= p99 <= p99.9 <= max.
            for i in (0..3).rev() {
                figs[i] = figs[i].max(figs[i + 1]);
            }
            let mut r = nightly(template.clone(), board, kernel, day, figs);
            if b == 0 {
                r.threads[0].forecast = Some(forecast_of_run(day, figs[0]));
            }
            let path = dir.join(format!("{board}/{day:03}.json"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
        }
    }
}

fn trend_of(dir: &Path) -> Trend {
    let files = walk::files(&[dir.to_path_buf()]).unwrap();
    let runs = Runs::read(&files, &BoardFrom::default());
    assert_eq!((runs.skipped, runs.first_skipped.clone()), (0, None));
    Trend::new(runs, Test::default())
}

/// (board, first worse run's file name) of every regression.
fn named(t: &Trend) -> Vec<(String, String)> {
    t.regressions()
        .map(|(k, r, _)| {
            (
                k.board.clone(),
                r.file.file_name().unwrap().to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The runs (0-based) named worse, with their boards.
fn named_at(t: &Trend) -> Vec<(String, usize)> {
    t.iter()
        .flat_map(|(k, _, cs)| {
            cs.iter()
                .filter(|c| c.worse)
                .map(move |c| (k.board.clone(), c.at))
        })
        .collect()
}

#[test]
fn the_board_made_worse_is_named_at_its_first_worse_run_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    write_nightlies(d.path(), 3, true);
    let t = trend_of(d.path());
    assert_eq!(t.runs.series.len(), 3);
    assert!(t.runs.series.values().all(|r| r.len() == RUNS));
    let want = vec![("board-b".to_string(), format!("{WORSE_FROM:03}.json"))];
    assert_eq!(named(&t), want, "{:?}", super::tables::change_lines(&t));
    assert_eq!(t.changes.iter().flatten().count(), 1);
}

#[test]
fn at_a_change_the_cause_of_the_worst_cases_that_grew_is_named() {
    use crate::result::explained::{Explained, Part};
    let d = tempfile::tempdir().unwrap();
    write_nightlies(d.path(), 3, true);
    // board-b's runs explained: a hog's time, and a NET_RX flood's from
    // its first worse run on.
    for day in 0..RUNS {
        let path = d.path().join(format!("board-b/{day:03}.json"));
        let mut r: RunResult = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let thread = r.threads[0].name.clone();
        let mut parts = vec![Part {
            kind: "thread".into(),
            name: format!("hog {day} FIFO 90"),
            ns: 50_000,
            stack: Vec::new(),
        }];
        if day >= WORSE_FROM {
            parts.push(Part {
                kind: "softirq".into(),
                name: "NET_RX".into(),
                ns: 40_000,
                stack: Vec::new(),
            });
        }
        r.explained = vec![Explained {
            thread: thread.clone(),
            cpu: Some(0),
            at_ns: 0,
            latency_ns: parts.iter().map(|p| p.ns).sum(),
            parts,
        }];
        std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    }
    let t = trend_of(d.path());
    let lines = super::tables::change_lines(&t);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("; explained: softirq NET_RX on ")
            && lines[0].contains("grew from 0.0 us to 40.0 us"),
        "{}",
        lines[0]
    );
}

/// With this much noise a change is placed near its run, not always on it
/// (of 20 seeds: 7 on it, 12 within one run, 18 within six): over many
/// seeds, only the board made worse is named, and always near the run.
#[test]
fn over_many_draws_only_the_board_made_worse_is_named_near_its_run() {
    for seed in 1..=20 {
        let d = tempfile::tempdir().unwrap();
        write_nightlies(d.path(), seed, true);
        let t = trend_of(d.path());
        let got = named_at(&t);
        let lines = super::tables::change_lines(&t);
        assert!(
            !got.is_empty() && got.iter().all(|(b, _)| b == "board-b"),
            "seed {seed}: {lines:?}"
        );
        let nearest = got
            .iter()
            .map(|(_, at)| at.abs_diff(WORSE_FROM))
            .min()
            .unwrap();
        assert!(nearest <= 6, "seed {seed}: {lines:?}");
    }
}

#[test]
fn without_a_change_nothing_is_named() {
    for seed in 1..=20 {
        let d = tempfile::tempdir().unwrap();
        write_nightlies(d.path(), seed, false);
        let t = trend_of(d.path());
        let all: Vec<String> = super::tables::change_lines(&t);
        assert!(all.is_empty(), "seed {seed}: {all:?}");
    }
}

use crate::render::tests::snapshot;

#[test]
fn text_markdown_csv_and_svg_snapshots() {
    use crate::render::compare::TableFormat;
    let d = tempfile::tempdir().unwrap();
    write_nightlies(d.path(), 3, true);
    let mut t = trend_of(d.path());
    for runs in t.runs.series.values_mut() {
        for r in runs {
            r.file = r.file.strip_prefix(d.path()).unwrap().to_path_buf();
        }
    }
    snapshot::snapshot("trend-text", &super::tables::render(&t, TableFormat::Text));
    snapshot::snapshot(
        "trend-markdown",
        &super::tables::render(&t, TableFormat::Markdown),
    );
    snapshot::snapshot("trend-csv", &super::tables::render(&t, TableFormat::Csv));
    snapshot::snapshot("trend-svg", &super::plot::svg(&t));
    let svg = super::plot::svg(&t);
    assert!(svg.contains("tail forecast per sample") && svg.contains("10 forecasts withheld"));
    let html = super::plot::html(&t);
    assert!(html.contains(&super::plot::plots(&t)[0].inline()));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn the_max_plot_draws_each_runs_forecast_beside_its_max_with_gaps_where_withheld() {
    use crate::render::svg::writer::Dash;
    let d = tempfile::tempdir().unwrap();
    write_nightlies(d.path(), 3, false);
    let t = trend_of(d.path());
    let plots = super::plot::plots(&t);
    let dashed = |p: &crate::render::svg::Plot| {
        p.lines
            .iter()
            .filter(|l| l.dash == Dash::Dashed)
            .cloned()
            .collect::<Vec<_>>()
    };
    // Only board-a (colour 0) holds forecasts, and only the max plot draws them.
    let max = &plots[0];
    assert_eq!(max.title, "max per run over time");
    let lines = dashed(max);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].color, 0);
    let points = &lines[0].points;
    assert_eq!(points.len(), RUNS);
    for (day, p) in points.iter().enumerate() {
        assert_eq!(p.is_none(), day % 10 == 5, "run {day}: {p:?}");
    }
    // Each point sits above its run's max (three times it), on the same day.
    let solid = &max.lines[0].points;
    for (f, m) in points
        .iter()
        .zip(solid)
        .filter_map(|(f, m)| Some((f.as_ref()?, m.as_ref()?)))
    {
        assert_eq!(f.0, m.0);
        assert!(f.1 > m.1, "{f:?} {m:?}");
    }
    // The axis reaches the highest forecast.
    let top = points
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(f64::MIN, f64::max);
    assert!(max.y.max >= top, "{} < {top}", max.y.max);
    assert!(plots[1..].iter().all(|p| dashed(p).is_empty()));
}

/// Results of one host name: two labelled boards, one unlabelled, idle
/// and under a load; then what `--board-from` names instead.
#[test]
fn boards_are_the_label_else_the_host_and_a_load_is_a_series_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    let template = testdata::timer_many();
    let figs = [90_000, 40_000, 20_000, 10_000];
    let runs = [
        (Some("board-y"), false),
        (Some("board-z"), false),
        (Some("board-z"), true),
        (None, false),
    ];
    for (day, (label, loaded)) in runs.into_iter().enumerate() {
        let mut r = nightly(template.clone(), "pi", "6.6.21-rt26", day, figs);
        r.label = label.map(String::from);
        r.system.device_tree_model = Some(format!("Model {}", day % 2));
        if loaded {
            r.loads = vec![serde_json::json!({"spec": "hackbench"})];
        }
        let path = d.path().join(format!("{day}.json"));
        std::fs::write(path, serde_json::to_string(&r).unwrap()).unwrap();
    }
    // Not results: counted, not fatal.
    std::fs::write(d.path().join("other.json"), "{\"cpu\": {}}").unwrap();
    let files = walk::files(&[d.path().to_path_buf()]).unwrap();
    let keyed = |from: &BoardFrom| {
        let runs = Runs::read(&files, from);
        assert_eq!(runs.skipped, 1);
        assert!(runs.first_skipped.unwrap().contains("other.json"));
        runs.series
            .keys()
            .map(|k| format!("{}/{}", k.board, k.load))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keyed(&BoardFrom::default()),
        [
            "board-y/idle",
            "board-z/hackbench",
            "board-z/idle",
            "pi/idle"
        ]
    );
    assert_eq!(keyed(&BoardFrom::Host), ["pi/hackbench", "pi/idle"]);
    assert_eq!(
        keyed(&BoardFrom::Label),
        [
            "board-y/idle",
            "board-z/hackbench",
            "board-z/idle",
            "no label/idle"
        ]
    );
    let model = BoardFrom::parse("system.device_tree_model").unwrap();
    assert_eq!(
        keyed(&model),
        ["Model 0/hackbench", "Model 0/idle", "Model 1/idle"]
    );
    let missing = BoardFrom::parse("system.nothing").unwrap();
    assert_eq!(
        keyed(&missing),
        ["no system.nothing/hackbench", "no system.nothing/idle"]
    );
    assert!(BoardFrom::parse("system..x").is_err() && BoardFrom::parse("").is_err());
}

/// Runs `minutes` apart from `t0`, board-a's, as a trend.
fn runs_at(minutes: &[u64]) -> Trend {
    let d = tempfile::tempdir().unwrap();
    let template = testdata::timer_many();
    for (i, m) in minutes.iter().enumerate() {
        let figs = [90_000 + i as u64 * 1000, 40_000, 20_000, 10_000];
        let mut r = nightly(template.clone(), "board-a", "6.6.21-rt26", 0, figs);
        r.start_time_utc = crate::result::rfc3339_utc(1_767_600_000 + m * 60, 0);
        let path = d.path().join(format!("{i:02}.json"));
        std::fs::write(path, serde_json::to_string(&r).unwrap()).unwrap();
    }
    trend_of(d.path())
}

/// The x of every dot of the first plot, in the SVG's pixels.
fn dots(svg: &str) -> Vec<String> {
    let first = svg.split("<g transform").nth(1).unwrap();
    first
        .split("<circle cx=\"")
        .skip(1)
        .map(|c| c.split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_time_axis_fits_the_span_with_a_dot_per_run() {
    // Twelve runs within 40 minutes: twelve dots apart, on a minute axis.
    let minutes: Vec<u64> = (0..12).map(|i| i * 40 / 11).collect();
    let svg = super::plot::svg(&runs_at(&minutes));
    let mut xs = dots(&svg);
    assert_eq!(xs.len(), 12, "{svg}");
    xs.dedup();
    assert_eq!(xs.len(), 12, "{xs:?}");
    assert!(svg.contains(">minutes since 2026-01-05 08:00:00<"), "{svg}");
    assert!(
        svg.contains(">40<") && !svg.contains(">days since"),
        "{svg}"
    );
    // Hours, days and months as the span grows; by run index on request.
    let axis = |minutes: &[u64], by_run| {
        let mut t = runs_at(minutes);
        t.by_run = by_run;
        let p = &super::plot::plots(&t)[0];
        // The axis reaches the last run at its next round tick.
        let unit = p.x.label.split(' ').next().unwrap().to_string();
        (unit, p.x.max)
    };
    assert_eq!(axis(&[0, 600], false), ("hours".into(), 10.0));
    assert_eq!(axis(&[0, 14 * 1440], false), ("days".into(), 15.0));
    assert_eq!(axis(&[0, 400 * 1440], false), ("months".into(), 15.0));
    assert_eq!(axis(&[0, 1, 400 * 1440], true), ("run".into(), 3.0));
}
