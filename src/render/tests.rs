//! Snapshot tests of every exporter and plot on results built in code, and
//! robustness of the renderers against extreme values.
//! Snapshots are insta's (`tests/snapshots/report/*.snap`): `INSTA_UPDATE=always
//! cargo test` rewrites them, `cargo insta review` shows the changes.

use super::compare::{table, Metric, TableFormat};
use super::{check, html, svg, testdata, text, Loaded};
use crate::result::Benchmark;
use crate::result::RunResult;
use std::path::{Path, PathBuf};

fn loaded(name: &str, r: RunResult) -> Loaded {
    Loaded::new(PathBuf::from(format!("{name}.json")), r)
}

fn variants() -> Vec<Loaded> {
    vec![
        loaded("timer-phases", testdata::timer_phases()),
        loaded("timer-many", testdata::timer_many()),
        loaded(Benchmark::Switch.name(), testdata::switch()),
        loaded(Benchmark::Cruncher.name(), testdata::cruncher()),
        loaded(Benchmark::Net.name(), testdata::net()),
        loaded(Benchmark::Irq.name(), testdata::irq()),
        loaded("empty", testdata::empty()),
    ]
}

#[path = "../../tests/support/snapshot.rs"]
pub(crate) mod snapshot;
use snapshot::snapshot;

#[test]
fn the_test_results_are_valid() {
    for l in variants() {
        check(&l.result).unwrap_or_else(|e| panic!("{}: {e}", l.path.display()));
        let json = serde_json::to_string(&l.result).expect("serialises");
        let back: RunResult = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back.threads.len(), l.result.threads.len());
    }
}

#[test]
fn text_reports_match_snapshots() {
    for l in variants() {
        snapshot(&format!("{}.txt", l.path.display()), &text::report(&l));
    }
}

#[test]
fn svg_plots_match_snapshots() {
    for l in variants() {
        let plots = svg::report_plots(&l);
        // Histogram and percentiles; over time only with a series; by phase with phases.
        let expected =
            2 + usize::from(svg::has_series(&l.result)) + usize::from(!l.result.phases.is_empty());
        assert_eq!(plots.len(), expected, "{}", l.path.display());
        let doc = svg::document(&plots);
        assert!(doc.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""
        ));
        assert_eq!(doc.matches("<g transform=").count(), expected);
        snapshot(&format!("{}.svg", l.path.display()), &doc);
    }
}

#[test]
fn plots_say_what_on_what_under_which_load_with_units() {
    let l = loaded("timer-phases", testdata::timer_phases());
    let plots = svg::report_plots(&l);
    for p in &plots {
        assert!(p.title.contains("Timer wake-up latency"), "{}", p.title);
        assert!(p.title.contains("rpi4 rt26"), "{}", p.title);
        assert!(p.subtitle.contains("Raspberry Pi 4"), "{}", p.subtitle);
        assert!(p.subtitle.contains("PREEMPT_RT"), "{}", p.subtitle);
        assert!(p.subtitle.contains("load: exec:2"), "{}", p.subtitle);
        assert!(!p.keys.is_empty(), "no legend in {}", p.title);
        assert!(
            p.x.label.contains("µs")
                || p.x.label.contains(" s")
                || p.x.label.contains("percentile")
        );
        assert!(p.y.label.contains("µs") || p.y.label.contains("samples"));
    }
    assert!(
        plots[0].y.label.contains("log scale"),
        "histogram counts on a log axis"
    );
    assert!(
        plots[0].x.label.contains("1 µs bins"),
        "{}",
        plots[0].x.label
    );
    assert_eq!(plots[1].markers.len(), 1, "the load phase starts");
    assert!(plots[2].x.ticks.iter().any(|t| t.1 == "99.99%"));
    // More threads than a plot draws: the legend says so.
    let many = loaded("timer-many", testdata::timer_many());
    let h = &svg::report_plots(&many)[0];
    assert_eq!(h.lines.len(), svg::MAX_SERIES);
    assert!(h.keys.iter().any(|k| k.text == "4 more not drawn"));
    // Nothing measured: the plots say so instead of drawing.
    let e = loaded("empty", testdata::empty());
    assert!(svg::report_plots(&e).iter().all(|p| p.empty.is_some()));
}

#[test]
fn html_reports_match_snapshots_and_stay_offline() {
    for name in ["timer-phases", Benchmark::Net.name()] {
        let l = variants()
            .into_iter()
            .find(|l| l.path == Path::new(&format!("{name}.json")))
            .expect("variant");
        let page = html::report(&[&l]);
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "{name}: URL in the page"
        );
        assert!(
            !page.contains("xmlns"),
            "inline SVG needs no namespace in HTML5"
        );
        assert_eq!(page.matches("<svg ").count(), svg::report_plots(&l).len());
        // The embedded data reads back as the result.
        let tag = "<script type=\"application/json\" id=\"data-0\">";
        let start = page.find(tag).expect("data") + tag.len();
        let end = start + page[start..].find("</script>").expect("end");
        let back: RunResult =
            serde_json::from_str(&page[start..end]).expect("embedded JSON parses");
        assert_eq!(
            serde_json::to_value(&back).ok(),
            serde_json::to_value(&l.result).ok()
        );
        snapshot(&format!("{name}.html"), &page);
    }
    let all = variants();
    let page = html::report(&all.iter().collect::<Vec<_>>());
    assert!(!page.contains("http://") && !page.contains("https://"));
    assert_eq!(page.matches("<section id=").count(), all.len());
}

#[test]
fn compare_tables_match_snapshots() {
    let all = variants();
    let rows: Vec<&Loaded> = all.iter().collect();
    snapshot("compare.txt", &table(&rows, TableFormat::Text, None));
    snapshot("compare.md", &table(&rows, TableFormat::Markdown, None));
    snapshot("compare.csv", &table(&rows, TableFormat::Csv, None));
    let timers: Vec<&Loaded> = all
        .iter()
        .filter(|l| l.result.benchmark == Benchmark::Timer)
        .collect();
    let base = timers[0];
    snapshot(
        "compare-baseline.txt",
        &table(&timers, TableFormat::Text, Some((&Metric::Max, base))),
    );
    snapshot("compare.svg", &svg::document(&svg::compare_plots(&rows)));
}

#[test]
fn markdown_tables_are_well_formed() {
    let all = variants();
    let rows: Vec<&Loaded> = all.iter().collect();
    let md = table(&rows, TableFormat::Markdown, None);
    let mut tables = 0;
    let mut lines = md.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') {
            continue;
        }
        tables += 1;
        let cells = |l: &str| l.trim_matches('|').split(" | ").count();
        let width = cells(line);
        let sep = lines.next().expect("separator");
        assert!(
            sep.split('|').filter(|c| !c.is_empty()).all(|c| c
                .trim()
                .trim_end_matches(':')
                .chars()
                .all(|x| x == '-')),
            "{sep}"
        );
        assert_eq!(cells(sep), width);
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            assert_eq!(cells(row), width, "{row}");
        }
    }
    assert_eq!(tables, 5, "one table per benchmark");
}

/// Extreme values everywhere a number is: whatever passes `check` renders without panicking.
#[test]
fn renderers_survive_extreme_values() {
    fn mutate(v: &mut serde_json::Value, seed: &mut u64) {
        match v {
            serde_json::Value::Number(n) if n.is_u64() => {
                crate::stats::xorshift(seed);
                let choice = [0, 1, u64::MAX, u64::MAX / 2, 1 << 40, *seed];
                if *seed % 5 == 0 {
                    *v = choice[(*seed >> 8) as usize % choice.len()].into();
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| mutate(x, seed)),
            // Bucket bounds must stay boundaries to pass `check`; everything else may go wild.
            serde_json::Value::Object(o) => o
                .iter_mut()
                .filter(|(k, _)| !matches!(k.as_str(), "low_ns" | "high_ns" | "count"))
                .for_each(|(_, x)| mutate(x, seed)),
            _ => {}
        }
    }
    let mut rendered = 0;
    for (i, l) in variants().into_iter().enumerate() {
        // Enough rounds that more than 20 pass the checks on every target too:
        // with 120 rounds, only 19 passed in all on armv7 under qemu.
        for round in 0..240u64 {
            let mut v = serde_json::to_value(&l.result).expect("value");
            let mut seed = 0x1234_5678 + round * 7919 + i as u64;
            mutate(&mut v, &mut seed);
            let Ok(r) = serde_json::from_value::<RunResult>(v) else {
                continue;
            };
            if check(&r).is_err() {
                continue;
            }
            let m = loaded("mutated", r);
            let _ = text::report(&m);
            let _ = svg::document(&svg::report_plots(&m));
            let _ = html::report(&[&m]);
            let _ = table(&[&m, &l], TableFormat::Text, Some((&Metric::Max, &l)));
            let _ = svg::compare_plots(&[&m, &l]);
            for metric in ["max", "p99.99", "lost", "stretch", "overruns"] {
                let _ = Metric::parse(metric).expect("metric").value(&m);
            }
            rendered += 1;
        }
    }
    assert!(
        rendered > 20,
        "only {rendered} mutated results passed the checks"
    );
}

/// Byte-level damage to a result file: it is refused or, if it still reads
/// and passes `check`, every exporter renders it.
#[test]
fn damaged_result_files_are_refused_or_rendered() {
    let original = serde_json::to_string_pretty(&testdata::timer_phases()).expect("json");
    let bytes = original.as_bytes();
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || crate::stats::xorshift(&mut s);
    let (mut refused, mut rendered) = (0, 0);
    for round in 0..150 {
        let mut v = bytes.to_vec();
        match round % 3 {
            0 => v.truncate(next() as usize % v.len()),
            1 => {
                // Digits for digits: the file stays JSON, the numbers go wrong.
                for _ in 0..6 {
                    let i = next() as usize % v.len();
                    if v[i].is_ascii_digit() {
                        v[i] = b'0' + (next() % 10) as u8;
                    }
                }
            }
            _ => {
                let i = next() as usize % v.len();
                let j = (i + 1 + next() as usize % 64).min(v.len());
                v.drain(i..j);
            }
        }
        let Ok(text) = String::from_utf8(v) else {
            refused += 1;
            continue;
        };
        match serde_json::from_str::<RunResult>(&text)
            .map_err(|e| e.to_string())
            .and_then(|r| check(&r).map(|_| r))
        {
            Err(_) => refused += 1,
            Ok(r) => {
                let l = loaded("damaged", r);
                let _ = text::report(&l);
                let _ = svg::document(&svg::report_plots(&l));
                let _ = html::report(&[&l]);
                let _ = table(&[&l], TableFormat::Csv, None);
                rendered += 1;
            }
        }
    }
    assert!(
        refused > 100 && rendered > 10,
        "refused {refused}, rendered {rendered}"
    );
}

/// A result of kernel contexts (`timer --context`): the main figure is the
/// thread level, never the IRQ-context series beside it; with a user level,
/// that one; a plain timer keeps its `cpuN` threads.
#[test]
fn the_main_figure_of_kernel_contexts_is_the_level_closest_to_user_space() {
    let names = |r: &RunResult| -> Vec<String> {
        super::describe::primary(r)
            .1
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    let mut r = testdata::timer_many();
    assert_eq!(names(&r).len(), 12, "a plain timer: every cpuN");
    let levels = ["irq", "thread", "user"];
    for (i, t) in r.threads.iter_mut().enumerate() {
        t.name = format!("cpu{}/{}", i / 3, levels[i % 3]);
    }
    assert_eq!(
        names(&r),
        ["cpu0/user", "cpu1/user", "cpu2/user", "cpu3/user"]
    );
    r.threads.retain(|t| !t.name.ends_with("/user"));
    assert_eq!(
        names(&r),
        ["cpu0/thread", "cpu1/thread", "cpu2/thread", "cpu3/thread"]
    );
    r.threads.retain(|t| !t.name.ends_with("/thread"));
    // Only IRQ-context series: no level to prefer, every thread merged.
    assert_eq!(names(&r).len(), 4);
}

#[test]
fn an_over_time_plot_reaches_its_data_and_stops_at_the_runs_end() {
    // 15 ns minima (below a tenth of a µs) and a 2 ms spike: a log axis down
    // to 0.01 µs; the samples taken as the 5 s run ended drawn at 5 s.
    let mut r = testdata::over_time(5, 15);
    r.threads[0].series.points[3].max_ns = 2_000_000;
    r.total.avg_ns = 15;
    let l = loaded("over-time", r);
    let doc = svg::document(&svg::report_plots(&l));
    snapshot("over-time.svg", &doc);
}

#[test]
fn a_net_plot_counts_packets_once() {
    let r = testdata::net();
    let packets = r.threads.iter().find(|t| t.name == "rtt").unwrap();
    let want = format!("{} packets in ", packets.summary.samples);
    assert!(r.total.samples > packets.summary.samples);
    for p in svg::report_plots(&loaded("net", r.clone())) {
        assert!(p.subtitle.contains(&want), "{}", p.subtitle);
        assert!(!p.subtitle.contains("samples"), "{}", p.subtitle);
    }
}

#[test]
fn explained_worst_cases_have_a_legend_of_their_colours() {
    use crate::result::{Explained, Part};
    let part = |kind: &str, name: &str, ns| Part {
        kind: kind.into(),
        name: name.into(),
        ns,
        stack: Vec::new(),
    };
    let mut r = testdata::timer_phases();
    r.explained = vec![
        Explained {
            thread: "cpu0".into(),
            cpu: Some(0),
            at_ns: 4_670_000_000,
            latency_ns: 16_900_000,
            parts: vec![
                part("hypervisor", "hypervisor", 16_600_000),
                part("irq", "virtio0-input", 200_000),
                part("self", "own wake-up path", 100_000),
            ],
        },
        Explained {
            thread: "cpu1".into(),
            cpu: Some(1),
            at_ns: 1_250_000_000,
            latency_ns: 80_000,
            parts: vec![
                part("thread", "hog <7>", 60_000),
                part("irq", "eth0", 20_000),
            ],
        },
    ];
    let page = html::report(&[&loaded("explained", r)]);
    assert!(!page.contains("http://"), "the page stays offline");
    let from = page
        .find("<h3>Worst cases explained</h3>")
        .expect("section");
    let to = from + page[from..].find("</ul>").expect("list") + "</ul>".len();
    let section = &page[from..to];
    // Every colour a strip uses is in the legend, with its kind's name.
    let legend = &section[..section.find("<ul>").expect("list")];
    for (kind, fill) in [
        ("hypervisor", "#7f7f7f"),
        ("irq", "#1f77b4"),
        ("self", "#c7c7c7"),
        ("thread", "#d62728"),
    ] {
        assert!(section.contains(&format!("fill=\"{fill}\"")), "{section}");
        assert!(
            legend.contains(&format!("background:{fill}\"></i>{kind}<")),
            "{legend}"
        );
    }
    snapshot("explained.html", section);
}

#[test]
fn a_kernel_stack_is_shown_whole_under_its_case() {
    use crate::result::{Explained, Part};
    let mut r = testdata::timer_phases();
    let stack = [
        "asm_sysvec_apic_timer_interrupt+0x16",
        "resp_ioctl+0xd9 [rtlat_responder]",
        "<x>",
    ];
    r.explained = vec![Explained {
        thread: "cpu0".into(),
        cpu: Some(0),
        at_ns: 1_000_000,
        latency_ns: 9_000_000,
        parts: vec![
            Part {
                kind: "preempt-off".into(),
                name: "ld-ksp0 295".into(),
                ns: 8_000_000,
                stack: stack.iter().map(|f| f.to_string()).collect(),
            },
            Part {
                kind: "self".into(),
                name: "own wake-up path".into(),
                ns: 1_000_000,
                stack: Vec::new(),
            },
        ],
    }];
    let page = html::report(&[&loaded("stacks", r)]);
    assert!(
        page.contains("preemption off in ld-ksp0 295 8.0 ms [resp_ioctl &lt; &lt;x&gt;]"),
        "the line names the task's frames"
    );
    assert!(page.contains(
        "<details><summary>kernel stack of preemption off in ld-ksp0 295</summary><pre>asm_sysvec_apic_timer_interrupt+0x16\nresp_ioctl+0xd9 [rtlat_responder]\n&lt;x&gt;</pre></details>"
    ));
    assert_eq!(page.matches("<details><summary>kernel stack").count(), 1);
}

#[test]
fn report_says_the_details_line_of_the_live_run() {
    for (name, r, want) in [
        (
            "switch",
            testdata::switch(),
            "switch: via futex between threads, same CPU, armed (warm), wakee priority 80, waker 79; lost wakes 3 (pair0 1, pair1 2): wakee busy 2, waker late 1\n",
        ),
        (
            "cruncher",
            testdata::cruncher(),
            "cruncher: ideal 10004.000 us (fastest of 20 calibration runs of 1384675 iterations, slowest 10101.723 us); stretch 1.123; 6 of 500 runs beyond +5%\n",
        ),
    ] {
        let l = loaded(name, r);
        let report = text::report(&l);
        assert!(report.ends_with(want), "{report}");
        assert!(!report.contains("details:"), "{report}");
        let page = html::report(&[&l]);
        assert!(page.contains(&format!("<p>{}</p>", want.trim_end())), "{name}");
    }
}

#[test]
fn html_shows_a_results_figures_and_plots_before_the_runs_details() {
    let l = loaded("timer-phases", testdata::timer_phases());
    let page = html::report(&[&l]);
    let at = |h: &str| {
        page.find(&format!("<h3>{h}</h3>"))
            .unwrap_or_else(|| panic!("no {h}"))
    };
    let first_plot = page.find("<svg ").expect("a plot");
    assert!(at("Summary") < first_plot);
    for details in ["Run", "System", "Tuning and configuration", "Load"] {
        assert!(at(details) > first_plot, "{details} before the plots");
    }
    // How the run ended, in words; not an `end | duration` row.
    assert!(page.contains("<tr><td>how it ended</td><td>ran its whole duration</td></tr>"));
    assert!(!page.contains("<td>end</td>"));
}
