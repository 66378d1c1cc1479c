//! Outputs of the tools' newest and oldest versions imported with the
//! figures they print: current rt-tests' sparse histograms (no `# Total:`),
//! `-H`'s all-threads values, oslat 1.10, sockperf before 3.4, rtla with no
//! noise or a prompt above `top`, Xenomai klatency's queued rows, cyclictest
//! `-N` values in ns; durations to the source's precision and a percentile
//! asked of a source without a histogram. Each fixture names its tool and
//! version in tests/fixtures/import/capture.sh.

use crate::report::fixture;
use crate::util::*;
use serde_json::Value;
use std::path::Path;

/// `rtlat import FILE EXTRA… -o r.json`: its output and the result (`Null` when refused).
fn import(dir: &Path, file: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let _ = std::fs::remove_file(dir.join("r.json"));
    let out = rtlat()
        .current_dir(dir)
        .arg("import")
        .arg(fixture(file))
        .args(extra)
        .args(["-o", "r.json"])
        .output()
        .expect("runs");
    let r = if out.status.success() {
        load(&dir.join("r.json"))
    } else {
        Value::Null
    };
    (out, r)
}

/// The result of importing `file`, which must succeed.
fn imported(dir: &Path, file: &str, extra: &[&str]) -> Value {
    let (out, r) = import(dir, file, extra);
    assert_exit(&out, 0, file);
    r
}

/// The text of fixture `file`.
fn fixture_text(file: &str) -> String {
    std::fs::read_to_string(fixture(file)).expect("fixture")
}

/// `text` written to `name` in `dir` and imported, which must be refused
/// (exit 2; `case` names it in the failure message): its stderr.
fn refused(dir: &Path, name: &str, text: &str, case: &str) -> String {
    std::fs::write(dir.join(name), text).expect("write");
    let out = rtlat()
        .current_dir(dir)
        .args(["import", name, "-o", "b.json"])
        .output()
        .expect("runs");
    assert_exit(&out, 2, case);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// (name, samples, min, avg, max) of each thread, in ns.
fn figures(r: &Value) -> Vec<(String, u64, i64, i64, i64)> {
    r["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| {
            let s = &t["summary"];
            let n = |k: &str| s[k].as_i64().unwrap_or_else(|| panic!("{k} in {s}"));
            (
                t["name"].as_str().expect("name").to_string(),
                s["samples"].as_u64().expect("samples"),
                n("min_ns"),
                n("avg_ns"),
                n("max_ns"),
            )
        })
        .collect()
}

/// The numbers after `# label:` in a cyclictest histogram text.
fn summary_line(text: &str, label: &str) -> Vec<u64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("# {label}:")))
        .unwrap_or_else(|| panic!("no '# {label}:'"));
    line.split_whitespace()
        .map(|w| w.parse().expect("number"))
        .collect()
}

fn us(v: u64) -> i64 {
    v as i64 * 1000
}

case!(
    current_rt_tests_histograms_import_without_a_total_line,
    [],
    |t| {
        let dir = t.dir();
        // rt-tests 2.10: only non-empty rows, no '# Total:'; the count is rows plus overflows.
        let file = "cyclictest-2.10-hist.txt";
        let text = fixture_text(file);
        assert!(!text.contains("# Total:"));
        let r = imported(dir, file, &["--quiet"]);
        let (mins, avgs, maxs, over) = (
            summary_line(&text, "Min Latencies"),
            summary_line(&text, "Avg Latencies"),
            summary_line(&text, "Max Latencies"),
            summary_line(&text, "Histogram Overflows"),
        );
        let rows: Vec<Vec<u64>> = text
            .lines()
            .filter(|l| l.starts_with('0'))
            .map(|l| {
                l.split_whitespace()
                    .map(|w| w.parse().expect("n"))
                    .collect()
            })
            .collect();
        let got = figures(&r);
        assert_eq!(got.len(), 2);
        for (i, (name, samples, min, avg, max)) in got.iter().enumerate() {
            assert_eq!(name, &format!("thread{i}"));
            let in_rows: u64 = rows.iter().map(|row| row[i + 1]).sum();
            assert_eq!(
                *samples,
                in_rows + over[i],
                "thread{i}: rows plus overflows"
            );
            assert_eq!(*min, us(mins[i]));
            assert_eq!(*max, us(maxs[i]));
            // Both threads overflowed: the average is cyclictest's own.
            assert!(over[i] > 0);
            assert_eq!(*avg, us(avgs[i]));
        }
        assert_eq!((got[0].1, got[1].1), (2000, 2000));
        assert_eq!((got[0].4, got[1].4), (us(5166), us(4668)));
        // The range (-h N) is not in a sparse output: not recorded, and said.
        assert_eq!(r["config"]["histogram_buckets"], Value::Null);
        assert!(
            notes(&r).contains("only the non-empty rows"),
            "{}",
            notes(&r)
        );

        // Still refused when cut before the summary lines end.
        let cut = &text[..text.find("# Histogram Overflows:").expect("line")];
        let err = refused(dir, "cut.txt", cut, "a cut histogram");
        assert!(err.contains("Histogram Overflows"));
    }
);

case!(
    histofall_outputs_keep_their_threads_and_check_the_all_threads_values,
    [],
    |t| {
        let dir = t.dir();
        // rt-tests 2.10 --histfile with -H, and rt-tests 1.10's -H with its Total line.
        for (file, counts, avgs, maxs) in [
            (
                "cyclictest-2.10-histofall-histfile.txt",
                [2000, 2000],
                [54, 56],
                [5662, 4718],
            ),
            (
                "cyclictest-1.10-histofall.txt",
                [1000, 1000],
                [23, 24],
                [459, 152],
            ),
        ] {
            let text = fixture_text(file);
            // Min and Avg have a value per thread; Max and Overflows one more (all threads).
            assert_eq!(summary_line(&text, "Min Latencies").len(), 2, "{file}");
            assert_eq!(summary_line(&text, "Max Latencies").len(), 3, "{file}");
            let r = imported(dir, file, &["--quiet"]);
            let got = figures(&r);
            assert_eq!(got.len(), 2, "{file}: the sum column is not a thread");
            for (i, (_, samples, _, avg, max)) in got.iter().enumerate() {
                assert_eq!(*samples, counts[i], "{file} thread{i}");
                assert_eq!(*avg, us(avgs[i]), "{file} thread{i}");
                assert_eq!(*max, us(maxs[i]), "{file} thread{i}");
            }
            if let Some(total) = text.lines().find(|l| l.starts_with("# Total:")) {
                // The older layout's Total holds the rows alone, plus their sum with -H.
                assert_eq!(total.split_whitespace().count(), 2 + 3, "{file}");
            }
            // An all-threads maximum that is not the threads' maximum is refused with its line.
            let max_line = text
                .lines()
                .position(|l| l.starts_with("# Max Latencies:"))
                .expect("line")
                + 1;
            let bad = text.replacen(
                &format!(" {:05}\n", maxs[0]),
                &format!(" {:05}\n", maxs[0] + 1),
                1,
            );
            assert_ne!(bad, text);
            let err = refused(dir, "bad.txt", &bad, "a wrong all-threads maximum");
            assert!(err.contains(&format!("bad.txt:{max_line}:")), "{err}");
            assert!(err.contains("all threads"), "{err}");
        }
    }
);

/// oslat's per-core rows: (bucket counts per core, Maximum, Average).
fn oslat_printed(text: &str) -> (Vec<u64>, Vec<i64>, Vec<f64>) {
    let mut counts: Vec<u64> = Vec::new();
    let (mut maxs, mut avgs) = (Vec::new(), Vec::new());
    for l in text.lines() {
        let Some((key, rest)) = l.split_once(':') else {
            continue;
        };
        let nums: Vec<&str> = rest
            .split_whitespace()
            .take_while(|w| !w.starts_with('('))
            .collect();
        if key.trim().ends_with("(us)") {
            counts.resize(nums.len(), 0);
            for (c, n) in counts.iter_mut().zip(&nums) {
                *c += n.parse::<u64>().expect("count");
            }
        } else if key.trim() == "Maximum" {
            maxs = nums
                .iter()
                .map(|n| n.parse::<i64>().expect("max") * 1000)
                .collect();
        } else if key.trim() == "Average" {
            avgs = nums
                .iter()
                .map(|n| n.parse::<f64>().expect("avg"))
                .collect();
        }
    }
    (counts, maxs, avgs)
}

case!(
    oslat_1_10_and_2_10_tables_import_with_their_printed_figures,
    [],
    |t| {
        let dir = t.dir();
        for (file, cores) in [("oslat-1.10.txt", 2), ("oslat-2.10.txt", 1)] {
            let text = fixture_text(file);
            let r = imported(dir, file, &["--quiet"]);
            assert_eq!(r["config"]["imported_from"], "oslat", "{file}");
            let (counts, maxs, avgs) = oslat_printed(&text);
            let got = figures(&r);
            assert_eq!(got.len(), cores, "{file}");
            for (i, (_, samples, _, avg, max)) in got.iter().enumerate() {
                assert_eq!(*samples, counts[i], "{file} core {i}");
                assert_eq!(*max, maxs[i], "{file} core {i}");
                assert!(
                    (*avg as f64 - avgs[i] * 1000.0).abs() < 1.0,
                    "{file} core {i}"
                );
            }
        }
        // 1.10 names the row 'CPU Freq:' and prints no banner; it is told apart all the same.
        let text = fixture_text("oslat-1.10.txt");
        assert!(text.contains("CPU Freq:") && !text.contains("oslat V"));
        let (out, _) = import(dir, "oslat-1.10.txt", &[]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("read as oslat"));
    }
);

case!(
    rtla_osnoise_without_noise_is_zero_samples_and_a_prompt_above_top_is_skipped,
    [],
    |t| {
        let dir = t.dir();
        let r = imported(dir, "rtla-osnoise-hist-zero.txt", &["--quiet"]);
        assert_eq!(r["benchmark"], "noise");
        assert_eq!(r["total"]["samples"], 0);
        assert_eq!(r["duration_ns"], 10_000_000_000u64);
        assert!(
            notes(&r).contains("no noise passed the threshold"),
            "{}",
            notes(&r)
        );
        // A count that is not rtla's zeroed statistics stays refused.
        let text = fixture_text("rtla-osnoise-hist-zero.txt");
        let bad = text.replace("count: 0", "count: 7");
        refused(dir, "bad.txt", &bad, "a count without columns");

        let plain = imported(dir, "rtla-osnoise-top.txt", &["--quiet"]);
        let pasted = imported(dir, "rtla-osnoise-top-prompt.txt", &["--quiet"]);
        assert_eq!(pasted["details"]["osnoise"], plain["details"]["osnoise"]);
        assert_eq!(
            pasted["details"]["osnoise"][0]["max_single_noise_us"],
            42254
        );
        assert!(
            notes(&pasted).contains("rtla osnoise top -d 10s"),
            "{}",
            notes(&pasted)
        );
    }
);

/// The round trips of sockperf's full-log rows (either layout), in ns.
fn round_trips(text: &str) -> Vec<u64> {
    let ns = |s: &str| -> u64 {
        let (a, b) = s.trim().split_once('.').expect("seconds");
        a.parse::<u64>().expect("s") * 1_000_000_000 + b.parse::<u64>().expect("ns")
    };
    text.lines()
        .skip_while(|l| !l.starts_with("packet,") && !l.starts_with("txTime,"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("---"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let (tx, rx) = if f.len() == 2 {
                (f[0], f[1])
            } else {
                (f[1], f[2])
            };
            ns(rx) - ns(tx)
        })
        .collect()
}

case!(
    sockperf_full_logs_of_3_3_and_3_10_give_the_same_round_trips,
    [],
    |t| {
        let dir = t.dir();
        for (file, received) in [
            ("sockperf-3.3-full-log.csv", 1551),
            ("sockperf-3.10-full-log.csv", 1550),
        ] {
            let text = fixture_text(file);
            let rtts = round_trips(&text);
            assert_eq!(rtts.len(), received, "{file}");
            let r = imported(dir, file, &["--quiet"]);
            let got = figures(&r);
            assert_eq!(got.len(), 1);
            let (_, samples, min, avg, max) = &got[0];
            assert_eq!(*samples, received as u64, "{file}: ReceivedMessages");
            assert_eq!(r["details"]["received"], received, "{file}");
            assert_eq!(*max, *rtts.iter().max().expect("rows") as i64, "{file}");
            assert_eq!(*min, *rtts.iter().min().expect("rows") as i64, "{file}");
            let mean = rtts.iter().sum::<u64>() as f64 / rtts.len() as f64;
            assert!((*avg as f64 - mean).abs() <= 1.0, "{file}");
            // sockperf's own <MAX> is half the round trip, in µs with 3 decimals.
            let printed: f64 = text
                .lines()
                .find_map(|l| l.split("<MAX> observation =").nth(1))
                .expect("max line")
                .trim()
                .parse()
                .expect("number");
            assert!((*max as f64 / 2000.0 - printed).abs() < 0.002, "{file}");
        }
    }
);

case!(
    klatency_rows_beyond_the_run_are_its_queued_backlog,
    [],
    |t| {
        let dir = t.dir();
        let file = "xenomai-klatency-backlog.txt";
        let text = fixture_text(file);
        let rows: Vec<Vec<f64>> = text
            .lines()
            .map(|l| l.trim_start_matches("^C"))
            .filter_map(|l| l.strip_prefix("RTD|"))
            .map(|l| l.split('|').map(|f| f.trim().parse().expect("n")).collect())
            .collect();
        assert_eq!(rows.len(), 13);
        let r = imported(dir, file, &[]);
        // RTS says 00:00:06: six seconds of 10 000 samples (100 us), not 13.
        assert_eq!(r["duration_ns"], 6_000_000_000u64);
        let got = figures(&r);
        let (_, samples, min, _, max) = &got[0];
        assert_eq!(*samples, 6 * 10_000);
        let run = &rows[7..];
        let ns = |v: f64| (v * 1000.0).round() as i64;
        let run_max = run.iter().map(|r| ns(r[2])).max().expect("rows");
        let run_min = run.iter().map(|r| ns(r[0])).min().expect("rows");
        assert_eq!((*min, *max), (run_min, run_max));
        assert_eq!(*max, 4622);
        assert_eq!(
            r["threads"][0]["series"]["points"]
                .as_array()
                .expect("points")
                .len(),
            6
        );
        // The RTS line's overall figures (since the module was loaded) are kept in a note.
        assert!(notes(&r).contains("max 5.167 µs"), "{}", notes(&r));
    }
);

case!(
    cyclictest_nsecs_values_are_read_as_ns_when_the_unit_is_given_or_in_the_command,
    [],
    |t| {
        let dir = t.dir();
        // T: 0 … C: 2000 Min: 13143 Avg: 32790 Max: 2278800, T: 1 … C: 1332 …: ns with -N.
        let want = [
            (2000, 13_143, 32_790, 2_278_800),
            (1332, 14_765, 87_829, 4_829_877),
        ];
        let given = imported(dir, "cyclictest-2.10-N.txt", &["--unit", "ns", "-q"]);
        let pasted = imported(dir, "cyclictest-2.10-N-prompt.txt", &["-q"]);
        for r in [&given, &pasted] {
            let got = figures(r);
            for (g, w) in got.iter().zip(want) {
                assert_eq!((g.1, g.2, g.3, g.4), w);
            }
            assert_eq!(r["config"]["precision_ns"], 1);
        }
        assert!(notes(&pasted).contains("command line above the output"));
        // Without a word on the unit the values are µs, and the note says how to say ns.
        let plain = imported(dir, "cyclictest-2.10-N.txt", &["-q"]);
        assert_eq!(figures(&plain)[0].2, 13_143_000);
        assert!(notes(&plain).contains("--unit ns"));
        // -v samples with -N, the command pasted above them: every sample in ns.
        let text = fixture_text("cyclictest-2.10-vN-prompt.txt");
        let samples: Vec<i64> = text
            .lines()
            .filter(|l| l.matches(':').count() == 2 && !l.contains('#'))
            .map(|l| {
                l.rsplit(':')
                    .next()
                    .expect("value")
                    .trim()
                    .parse()
                    .expect("ns")
            })
            .collect();
        let v = imported(dir, "cyclictest-2.10-vN-prompt.txt", &["-q"]);
        let got = figures(&v);
        assert_eq!(got[0].1, samples.len() as u64);
        assert_eq!(got[0].1, 300);
        assert_eq!(got[0].2, *samples.iter().min().expect("samples"));
        assert_eq!(got[0].4, *samples.iter().max().expect("samples"));
        // --unit is refused for a format that states its unit.
        let (out, _) = import(dir, "oslat-2.10.txt", &["--unit", "ns"]);
        assert_exit(&out, 2, "--unit on oslat");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--unit ns applies to cyclictest"));
    }
);

case!(
    durations_keep_the_sources_precision_and_p99_without_a_histogram_says_so,
    [],
    |t| {
        let dir = t.dir();
        // RTS and rtla give whole seconds: printed whole.
        for (file, ended) in [
            ("xenomai-klatency-backlog.txt", "ended in 6s"),
            ("rtla-osnoise-hist-zero.txt", "ended in 10s"),
            ("oslat-2.10.txt", "ended in 3.008s"),
        ] {
            let (out, _) = import(dir, file, &[]);
            let report = String::from_utf8_lossy(&out.stdout);
            assert!(report.contains(ended), "{file}: {report}");
        }
        imported(dir, "cyclictest-q.txt", &["-q"]);
        std::fs::rename(dir.join("r.json"), dir.join("q.json")).expect("rename");
        imported(dir, "cyclictest-2.10-hist.txt", &["-q"]);
        let out = rtlat()
            .current_dir(dir)
            .args(["compare", "r.json", "q.json", "--baseline", "r.json"])
            .args(["--metric", "p99", "--fail-if-worse", "10"])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no p99 (no histogram in the source"), "{err}");
        assert!(!err.contains("too few"), "{err}");
    }
);

/// RTAI's RTD rows: (lat min, lat avg, lat max) in ns.
fn rtai_rows(text: &str) -> Vec<[i64; 3]> {
    text.lines()
        .filter_map(|l| l.strip_prefix("RTD|"))
        .map(|l| {
            let f: Vec<i64> = l.split('|').map(|x| x.trim().parse().expect("n")).collect();
            [f[0], f[2], f[3]]
        })
        .collect()
}

case!(
    rtai_latency_displays_import_with_their_rows_figures,
    [],
    |t| {
        let dir = t.dir();
        // The kernel display repeats its last row once the module is removed: not counted.
        for (file, counted) in [
            ("rtai-kernel-latency.txt", 24),
            ("rtai-user-latency.txt", 25),
        ] {
            let text = fixture_text(file);
            let rows = rtai_rows(&text);
            let rows = &rows[..counted];
            let (out, r) = import(dir, file, &[]);
            assert_exit(&out, 0, file);
            assert!(String::from_utf8_lossy(&out.stderr).contains("read as rtai"));
            assert_eq!(r["config"]["period_ns"], 1_000_000, "{file}");
            let got = figures(&r);
            let (_, samples, min, avg, max) = &got[0];
            // One row a second (avrgtime 1 s) of 1 ms periods.
            assert_eq!(*samples, counted as u64 * 1000, "{file}");
            assert_eq!(r["duration_ns"], counted as u64 * 1_000_000_000, "{file}");
            assert_eq!(
                *min,
                rows.iter().map(|r| r[0]).min().expect("rows"),
                "{file}"
            );
            assert_eq!(
                *max,
                rows.iter().map(|r| r[2]).max().expect("rows"),
                "{file}"
            );
            let mean = rows.iter().map(|r| r[1]).sum::<i64>() / counted as i64;
            assert!((avg - mean).abs() <= 1, "{file}: {avg} vs {mean}");
        }
        // A row whose 'ovl max' is not the maximum so far is refused with its line.
        let text = fixture_text("rtai-kernel-latency.txt");
        let bad = text.replacen("      24400|      24400|", "      24400|      19762|", 1);
        assert_ne!(bad, text);
        let err = refused(dir, "bad.txt", &bad, "a wrong ovl max");
        assert!(err.contains("bad.txt:14:"));
    }
);

case!(
    rteval_reports_import_with_each_cores_figures_as_written,
    [],
    |t| {
        let dir = t.dir();
        let file = "rteval-3.8-summary.xml";
        // Told from its <rteval> root without --from.
        let (out, r) = import(dir, file, &[]);
        assert_exit(&out, 0, file);
        assert!(String::from_utf8_lossy(&out.stderr).contains("read as rteval"));
        assert_eq!(r["config"]["tool"], "rteval 3.8");
        assert_eq!(r["system"]["hostname"], "vm");
        assert_eq!(r["system"]["kernel_release"], "6.18.44-fc-v1300");
        assert_eq!(r["config"]["period_ns"], 100_000);
        assert_eq!(r["tuning"]["priority"], 95);
        // runloop_start 03:45:50.684989 to runloop_stop 03:46:10.716245.
        assert_eq!(r["duration_ns"], 20_031_256_000u64);
        // <samples>, <minimum>, <mean>, <maximum> of each <core>, as written (µs).
        assert_eq!(
            figures(&r),
            [
                ("cpu0".to_string(), 199_238, us(7), 18_300, us(4857)),
                ("cpu1".to_string(), 167_057, us(6), 55_752, us(52_824)),
            ]
        );
        let stddev = |i: usize| r["threads"][i]["summary"]["stddev_ns"].clone();
        assert_eq!((stddev(0), stddev(1)), (26_693.into(), 247_039.into()));
        // The <system> figures: all cores.
        assert_eq!(r["total"]["samples"], 366_295);
        assert_eq!(r["total"]["max_ns"], us(52_824));
        // The histogram holds every sample: p99 compares.
        std::fs::copy(dir.join("r.json"), dir.join("r2.json")).expect("copy");
        let out = rtlat()
            .current_dir(dir)
            .args(["compare", "r.json", "r2.json", "--baseline", "r.json"])
            .args(["--metric", "p99", "--fail-if-worse", "10"])
            .output()
            .expect("runs");
        assert_exit(&out, 0, "compare --metric p99");

        // Without histograms: statistics only, and p99 says so.
        let text = fixture_text(file);
        let mut bare = String::new();
        let mut inside = false;
        for l in text.lines() {
            inside |= l.trim_start().starts_with("<histogram");
            if !inside {
                bare.push_str(l);
                bare.push('\n');
            }
            inside &= !l.trim_start().starts_with("</histogram>");
        }
        std::fs::write(dir.join("bare.xml"), &bare).expect("write");
        let out = rtlat()
            .current_dir(dir)
            .args(["import", "bare.xml", "-q", "-o", "bare.json"])
            .output()
            .expect("runs");
        assert_exit(&out, 0, "without histograms");
        let b = load(&dir.join("bare.json"));
        assert_eq!(figures(&b), figures(&r));
        assert!(notes(&b).contains("cpu0: the input has no histogram"));
        let out = rtlat()
            .current_dir(dir)
            .args(["compare", "r.json", "bare.json", "--baseline", "r.json"])
            .args(["--metric", "p99", "--fail-if-worse", "10"])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no p99 (no histogram in the source"), "{err}");

        // Cut anywhere: one error line naming the last line, exit 2.
        let cut = &text[..text.find("<core id=\"1\"").expect("core 1")];
        let err = refused(dir, "cut.xml", cut, "a cut report");
        assert!(
            err.contains(&format!("cut.xml:{}:", cut.lines().count())),
            "{err}"
        );
        assert!(err.contains("looks cut"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        // A latency beyond rteval's histogram: it wrote no statistics.
        let err = refused(
            dir,
            "over.xml",
            &fixture_text("rteval-3.8-over-buckets-refused.xml"),
            "no statistics",
        );
        assert!(err.contains("--cyclictest-buckets"), "{err}");
    }
);
