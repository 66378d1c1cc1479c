//! rteval's XML report (`summary.xml` in the report directory and tarball
//! that Red Hat's real-time evaluation tool writes). Its cyclictest
//! measurement holds, per measured CPU, the statistics rteval computed from
//! cyclictest's histogram, and that histogram, in whole µs:
//!
//! ```text
//! <rteval version="3.8">
//!   <run_info days="0" hours="0" minutes="0" seconds="22"> <date>, <time>: the local start
//!   <SystemInfo> <uname> <node>, <arch>, <kernel is_RT="0"> …
//!   <Measurements measurecpus="0-1">
//!     <cyclictest command_line="cyclictest -i100 -qmu -h 100000 -p95 -t2 -a0-1">
//!       <system description="(2 cores) AMD EPYC"> the same as a core, all cores together
//!       <core id="0" priority="95">
//!         <statistics> <samples>, then (with samples) <minimum unit="us">, <maximum>,
//!           <median>, <mode>, <range>, <mean>, <mean_absolute_deviation>, <standard_deviation>
//!         <histogram nbuckets="…"> <bucket index="14" value="64265"/> …
//!       <timestamps> <runloop_start>, <runloop_stop>: local times to the µs
//! ```
//!
//! rteval 2.x writes the same; 1.x puts `<uname>` and `<cyclictest>` directly
//! under `<rteval>`, the command line in a `<command_line>` element, and
//! every bucket (zeros too). Each core becomes `cpuN` with rteval's count,
//! min, max, mean and standard deviation and its histogram, so percentiles
//! are exact to the µs; a core without a histogram is statistics only. The
//! `<system>` figures are checked against the cores' and left out. rteval
//! writes no statistics at all when a latency went beyond its histogram
//! (`--cyclictest-buckets`): such a report is refused, saying so.

use super::cyclictest_json::{record_settings, settings};
use super::dates::days_from_civil;
use super::xml::{self, Element};
use super::{detect, parse_u64, parse_us, ImportFormat, Imported, ParseError, Parsed};
use super::{Reader, ThreadBuild};
use crate::result::{Benchmark, EndReason};

/// rteval's XML report.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "rteval",
    tool: "rteval",
    describe: "rteval XML report",
    detect: |head| detect::line_starts_with(head, &["<rteval ", "<rteval>"]),
    read: Reader::Text(parse),
};

/// Attribute `name` of `n`, which must be there.
fn attr<'a>(n: Element<'a>, name: &str) -> Parsed<&'a str> {
    n.attribute(name).ok_or_else(|| {
        ParseError::at(
            n.line(),
            format!("expected a {name}=\"…\" attribute on <{}>", n.name()),
        )
    })
}

/// What a `<statistics>` element states; latencies in ns.
struct Stats {
    line: usize,
    samples: u64,
    min_ns: Option<i64>,
    max_ns: Option<i64>,
    mean_us: Option<f64>,
    stddev_us: Option<f64>,
}

/// The line and text of element `name` in statistics `st`, whose unit must be µs.
fn stat_value<'a>(
    st: Element<'a>,
    name: &'static str,
    whose: &str,
) -> Parsed<Option<(usize, &'a str)>> {
    let Some(n) = st.child(name) else {
        return Ok(None);
    };
    if let Some(u) = n.attribute("unit").filter(|&u| u != "us") {
        return Err(ParseError::at(
            n.line(),
            format!(
                "expected <{name}> of {whose} in us (as rteval writes it), found unit {}",
                super::found(u)
            ),
        ));
    }
    Ok(Some((n.line(), n.text())))
}

/// The `<statistics>` of a `<core>` or `<system>` (`whose` names it in errors).
fn statistics(owner: Element, whose: &str) -> Parsed<Stats> {
    let st = owner
        .child("statistics")
        .ok_or_else(|| ParseError::at(owner.line(), format!("expected <statistics> in {whose}")))?;
    let value = |name: &'static str| stat_value(st, name, whose);
    let bad = |l: usize, name: &str, what: &str, v: &str| {
        ParseError::at(
            l,
            format!(
                "expected {what} in <{name}> of {whose}, found {}",
                super::found(v)
            ),
        )
    };
    let (l, s) = value("samples")?.ok_or_else(|| {
        ParseError::at(
            st.line(),
            format!("expected <samples> in {whose}'s statistics"),
        )
    })?;
    let samples = parse_u64(s).ok_or_else(|| bad(l, "samples", "a count", s))?;
    let mut stats = Stats {
        line: owner.line(),
        samples,
        min_ns: None,
        max_ns: None,
        mean_us: None,
        stddev_us: None,
    };
    // rteval 1.x writes the extremes of an empty core too (its unset ones).
    if samples == 0 {
        return Ok(stats);
    }
    let latency = |name: &'static str| -> Parsed<i64> {
        let (l, v) = value(name)?.ok_or_else(|| {
            ParseError::at(
                st.line(),
                format!("expected <{name}> in {whose}'s statistics of {samples} samples"),
            )
        })?;
        parse_us(v).ok_or_else(|| match v.parse::<f64>() {
            Ok(_) => ParseError::at(
                l,
                format!("expected a latency below 9e12 µs in <{name}> of {whose}, found {}: out of range (refused rather than recorded wrong)", super::found(v)),
            ),
            Err(_) => bad(l, name, "a latency in µs", v),
        })
    };
    stats.min_ns = Some(latency("minimum")?);
    stats.max_ns = Some(latency("maximum")?);
    let figure = |name: &'static str| -> Parsed<Option<f64>> {
        value(name)?
            .map(|(l, v)| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| bad(l, name, "a non-negative number of µs", v))
            })
            .transpose()
    };
    stats.mean_us = figure("mean")?;
    stats.stddev_us = figure("standard_deviation")?;
    Ok(stats)
}

/// One `<core>`: its figures and histogram as the thread `cpuN`.
fn core(c: Element, notes: &mut Vec<String>) -> Parsed<ThreadBuild> {
    let id = attr(c, "id")?;
    let cpu = parse_u64(id).filter(|&v| v < 1 << 20).ok_or_else(|| {
        ParseError::at(
            c.line(),
            format!(
                "expected a CPU number as the id of <core>, found {}",
                super::found(id)
            ),
        )
    })? as usize;
    let name = format!("cpu{cpu}");
    let st = statistics(c, &format!("core {cpu}"))?;
    let mut tb = ThreadBuild::new(name.clone(), Some(cpu));
    tb.count = Some(st.samples);
    (tb.min_ns, tb.max_ns) = (st.min_ns, st.max_ns);
    if st.samples > 1 {
        tb.avg_ns = st.mean_us.map(|m| m * 1000.0);
        tb.stddev_ns = st.stddev_us.map(|s| s * 1000.0);
    } else if st.samples == 1 {
        notes.push(format!(
            "{name}: one sample, for which rteval computes no mean (it writes 0): the mean is the sample's"
        ));
    }
    let Some(h) = c.child("histogram") else {
        return Ok(tb);
    };
    for b in h.children("bucket") {
        let number = |key: &str| -> Parsed<u64> {
            let v = attr(b, key)?;
            parse_u64(v).ok_or_else(|| {
                ParseError::at(
                    b.line(),
                    format!(
                        "expected a whole number as the bucket's {key}, found {}",
                        super::found(v)
                    ),
                )
            })
        };
        let (index, count) = (number("index")?, number("value")?);
        tb.add(index.saturating_mul(1000), count)
            .map_err(|e| ParseError::at(b.line(), e.msg))?;
    }
    if tb.recorded() != st.samples {
        return Err(ParseError::at(
            h.line(),
            format!(
                "expected the histogram of core {cpu} to count its {} samples, found {}",
                st.samples,
                tb.recorded()
            ),
        ));
    }
    Ok(tb)
}

/// The `<system>` figures (all cores together), checked against the cores'.
fn check_system(s: Element, cores: &[ThreadBuild]) -> Parsed<()> {
    let st = statistics(s, "<system>")?;
    let mut samples = 0u64;
    for c in cores {
        samples = samples.saturating_add(c.count.unwrap_or(0));
    }
    let lowest = cores.iter().filter_map(|c| c.min_ns).min();
    let highest = cores.iter().filter_map(|c| c.max_ns).max();
    let wrong = |what: &str, said: String, cores: String| {
        Err(ParseError::at(
            st.line,
            format!("expected the <system> {what} to be the cores' (all threads: {cores}), found {said}"),
        ))
    };
    if st.samples != samples {
        return wrong("sample count", st.samples.to_string(), samples.to_string());
    }
    if samples > 0 && (st.min_ns, st.max_ns) != (lowest, highest) {
        let us = |v: Option<i64>| v.map_or("-".into(), |v| format!("{} µs", v as f64 / 1000.0));
        return wrong(
            "minimum and maximum",
            format!("{} and {}", us(st.min_ns), us(st.max_ns)),
            format!("{} and {}", us(lowest), us(highest)),
        );
    }
    Ok(())
}

/// The cyclictest measurement: under `<Measurements>` (rteval 2 and 3) or the root (rteval 1).
fn measurement(doc: &xml::Document) -> Parsed<Element<'_>> {
    let root = doc.root();
    let places = std::iter::once(root).chain(root.children("Measurements"));
    let found: Vec<Element> = places.flat_map(|p| p.children("cyclictest")).collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let timerlat = doc.find("timerlat").map(|n| n.line());
            Err(match timerlat {
                Some(l) => ParseError::at(l, "expected rteval's cyclictest measurement, found its timerlat one, which is not read: import rtla timerlat hist's own output (--from rtla-timerlat)"),
                None => ParseError::at(root.line(), "expected a <cyclictest> measurement in the rteval report, found none (a run with --onlyload measures nothing)"),
            })
        }
        [_, second, ..] => Err(ParseError::at(
            second.line(),
            "expected one <cyclictest> measurement in the rteval report, found another",
        )),
    }
}

/// `2026-12-06 03:45:50.684989` (rteval's local timestamps, the fraction
/// left out when zero) as µs since the epoch of that wall clock.
fn local_us(s: &str) -> Option<i64> {
    let (date, time) = s.trim().split_once(' ')?;
    let d: Vec<&str> = date.split('-').collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<&str> = hms.split(':').collect();
    if d.len() != 3 || t.len() != 3 || frac.len() > 6 {
        return None;
    }
    let num = |v: &str, hi: u32| v.parse::<u32>().ok().filter(|&x| x <= hi);
    let (y, mo, day) = (num(d[0], 9999)?, num(d[1], 12)?, num(d[2], 31)?);
    if mo == 0 || day == 0 {
        return None;
    }
    let secs = days_from_civil(y as i64, mo, day) * 86_400
        + i64::from(num(t[0], 23)?) * 3600
        + i64::from(num(t[1], 59)?) * 60
        + i64::from(num(t[2], 60)?);
    let micros = format!("{frac:0<6}").parse::<i64>().ok()?;
    Some(secs * 1_000_000 + micros)
}

/// How long the measurement ran: its run loop's timestamps (µs), else
/// run_info's whole seconds; and where the run started, said in a note.
fn timing(root: Element, ct: Element, imp: &mut Imported) -> Parsed<()> {
    let info = root.child("run_info");
    let stamp = |name: &'static str| {
        ct.child("timestamps")
            .and_then(|t| t.child(name))
            .and_then(|n| local_us(n.text()))
    };
    if let (Some(a), Some(b)) = (stamp("runloop_start"), stamp("runloop_stop")) {
        if b >= a {
            imp.duration_ns = Some((b - a) as u64 * 1000);
            imp.duration_precision_ns = Some(1000);
        }
    }
    if let (None, Some(info)) = (imp.duration_ns, info) {
        let mut secs = 0u64;
        for (key, unit) in [
            ("days", 86_400),
            ("hours", 3600),
            ("minutes", 60),
            ("seconds", 1),
        ] {
            let v = attr(info, key)?;
            let n = parse_u64(v).filter(|&n| n < 1 << 32).ok_or_else(|| {
                ParseError::at(
                    info.line(),
                    format!(
                        "expected a whole number of {key} in <run_info>, found {}",
                        super::found(v)
                    ),
                )
            })?;
            secs = secs.saturating_add(n * unit);
        }
        imp.duration_ns = Some(secs.saturating_mul(1_000_000_000));
        imp.duration_precision_ns = Some(1_000_000_000);
        imp.notes.push("the duration is rteval's run time (run_info, whole seconds, rteval's start and stop included): the report has no timestamps of the measurement".into());
    }
    let when: Vec<&str> = ["date", "time"]
        .into_iter()
        .filter_map(|k| info.and_then(|i| i.child(k)).map(|n| n.text()))
        .collect();
    imp.notes.push(if when.is_empty() {
        "rteval's report does not say when the run started".into()
    } else {
        format!(
            "rteval records the start in the machine's local time without its zone ({}): not taken as UTC; --start gives it",
            when.join(" ")
        )
    });
    if let Some(a) = info.and_then(|i| i.child("annotate")) {
        imp.notes.push(format!("rteval's annotation: {}", a.text()));
    }
    Ok(())
}

/// What the report says of the machine: uname, kernel command line, clock
/// sources, CPU count and model.
fn machine(root: Element, ct: Element, imp: &mut Imported) {
    let s = &mut imp.system;
    let sysinfo = root.child("SystemInfo").unwrap_or(root);
    let field = |parent: Option<Element>, name: &'static str| {
        parent
            .and_then(|p| p.child(name))
            .map(|n| n.text().to_string())
            .filter(|t| !t.is_empty())
    };
    let uname = sysinfo.child("uname");
    s.hostname = field(uname, "node");
    s.kernel_release = field(uname, "kernel");
    s.machine = field(uname, "arch");
    // rteval's is_RT: whether `uname -v` holds "RT " (PREEMPT_RT or PREEMPT RT).
    let is_rt = uname
        .and_then(|u| u.child("kernel"))
        .and_then(|k| k.attribute("is_RT"));
    s.preempt_model = if is_rt == Some("1") {
        "PREEMPT_RT".into()
    } else {
        crate::sysinfo::PREEMPT_UNKNOWN.into()
    };
    s.cmdline = field(sysinfo.child("cmdlineInfo"), "cmdline");
    if let Some(cs) = sysinfo.child("Kernel").and_then(|k| k.child("ClockSource")) {
        for src in cs.children("source") {
            let name = src.text().to_string();
            if src.attribute("current") == Some("1") {
                s.clocksource = Some(name.clone());
            }
            s.available_clocksources.push(name);
        }
    }
    if let Some(n) = sysinfo
        .child("CPUtopology")
        .and_then(|t| t.attribute("num_cpu_cores_online"))
        .and_then(parse_u64)
    {
        s.cpu_count = n.min(1 << 20) as usize;
    }
    // `(2 cores) AMD EPYC`: the model name of CPU 0.
    s.cpu_model = ct
        .child("system")
        .and_then(|n| n.attribute("description"))
        .map(|d| d.split_once(") ").map_or(d, |(_, m)| m).trim().to_string())
        .filter(|m| !m.is_empty());
}

pub fn parse(input: &str) -> Parsed<Imported> {
    let doc = xml::parse(input)?;
    let root = doc.root();
    if root.name() != "rteval" {
        return Err(ParseError::at(
            root.line(),
            format!(
                "expected rteval's report (an <rteval> root element), found <{}>",
                root.name()
            ),
        ));
    }
    let ct = measurement(&doc)?;
    let mut imp = Imported::new(Benchmark::Timer);
    let cores: Vec<Element> = ct.children("core").collect();
    if cores.is_empty() {
        return Err(ParseError::at(ct.line(), "expected per-core statistics in <cyclictest>, found none: rteval leaves them out when a latency went beyond its histogram (its log says 'Max latency(…us) exceeded histogram range'); run it again with a larger --cyclictest-buckets"));
    }
    let mut threads = Vec::with_capacity(cores.len());
    for c in cores {
        threads.push(core(c, &mut imp.notes)?);
    }
    if let Some(s) = ct.child("system") {
        check_system(s, &threads)?;
    }
    imp.threads = threads;
    let cmdline = ct
        .attribute("command_line")
        .or_else(|| ct.child("command_line").map(|n| n.text()))
        .unwrap_or("");
    let set = settings(cmdline);
    imp.command_line = cmdline.split_whitespace().map(str::to_string).collect();
    let n = imp.threads.len();
    record_settings(&mut imp, &set, n, None, None);
    if let Some(v) = root.attribute("version") {
        imp.config
            .insert("tool".into(), format!("rteval {v}").into());
    }
    machine(root, ct, &mut imp);
    timing(root, ct, &mut imp)?;
    if let Some(b) = ct.child("abort_report").and_then(|a| a.child("breaktrace")) {
        imp.end_reason = EndReason::Break;
        imp.notes.push(format!(
            "cyclictest stopped at its break threshold ({} µs): a latency of {} µs",
            b.attribute("latency_threshold").unwrap_or("?"),
            b.attribute("measured_latency").unwrap_or("?")
        ));
    }
    imp.notes.push(
        "rteval does not record when the maximum happened (where it happened is unknown)".into(),
    );
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::fuzz::fixture;
    use crate::result::RunResult;

    fn import(text: &str) -> Parsed<RunResult> {
        crate::import::parse(&FORMAT, &mut text.as_bytes(), "summary.xml", None)
    }

    /// A report in rteval 1.x's layout, to the letter of its `genxml`.
    const V1: &str = r#"<?xml version="1.0"?>
<rteval version="1.37">
  <run_info days="0" hours="0" minutes="1" seconds="2">
    <date>2013-01-02</date>
    <time>10:00:00</time>
  </run_info>
  <uname>
    <node>rt1</node>
    <kernel is_RT="1">3.6.11-rt25</kernel>
    <arch>x86_64</arch>
  </uname>
  <cyclictest>
    <command_line>cyclictest -qm -i 100 -d 0 -h 2000 -p 95 --smp</command_line>
    <system description="(2 cores) Intel">
      <statistics>
        <samples>5</samples>
        <minimum unit="us">3</minimum>
        <maximum unit="us">9</maximum>
        <mean unit="us">5.0</mean>
        <variance unit="us">5.5</variance>
        <standard_deviation unit="us">2.3</standard_deviation>
      </statistics>
    </system>
    <core id="0" priority="95">
      <statistics>
        <samples>4</samples>
        <minimum unit="us">3</minimum>
        <maximum unit="us">9</maximum>
        <mean unit="us">5.5</mean>
        <standard_deviation unit="us">2.6</standard_deviation>
      </statistics>
      <histogram nbuckets="3">
        <bucket index="3" value="2"/>
        <bucket index="4" value="0"/>
        <bucket index="9" value="2"/>
      </histogram>
    </core>
    <core id="1" priority="95">
      <statistics>
        <samples>1</samples>
        <minimum unit="us">4</minimum>
        <maximum unit="us">4</maximum>
        <mean unit="us">0.0</mean>
        <standard_deviation unit="us">0</standard_deviation>
      </statistics>
      <histogram nbuckets="1">
        <bucket index="4" value="1"/>
      </histogram>
    </core>
  </cyclictest>
</rteval>
"#;

    #[test]
    fn the_version_1_layout_reads_as_the_current_one() {
        let r = import(V1).expect("imports");
        assert_eq!(r.system.hostname.as_deref(), Some("rt1"));
        assert_eq!(r.system.preempt_model, "PREEMPT_RT");
        assert_eq!(r.config["tool"], "rteval 1.37");
        assert_eq!(r.config["period_ns"], 100_000);
        assert_eq!(r.tuning.priority, Some(95));
        // No timestamps: run_info's whole seconds.
        assert_eq!(r.duration_ns, Some(62_000_000_000));
        let t = &r.threads[0];
        assert_eq!((t.name.as_str(), t.summary.samples), ("cpu0", 4));
        assert_eq!((t.summary.min_ns, t.summary.max_ns), (3000, 9000));
        assert_eq!((t.summary.avg_ns, t.summary.stddev_ns), (5500, Some(2600)));
        // One sample: rteval's mean of 0 is not taken.
        let t = &r.threads[1];
        assert_eq!((t.summary.samples, t.summary.avg_ns), (1, 4000));
        assert!(r.notes.iter().any(|n| n.contains("one sample")));
        assert_eq!(r.total.samples, 5);
        assert!(r.start_time_utc.is_empty());
        assert!(r.notes.iter().any(|n| n.contains("2013-01-02 10:00:00")));
    }

    #[test]
    fn inconsistent_figures_are_refused_with_their_line() {
        for (from, to, line, what) in [
            ("<samples>5</samples>", "<samples>6</samples>", 14, "sample count"),
            ("<bucket index=\"9\" value=\"2\"/>", "<bucket index=\"9\" value=\"3\"/>", 32, "to count its 4 samples"),
            ("<maximum unit=\"us\">9</maximum>", "<maximum unit=\"us\">8</maximum>", 14, "minimum and maximum"),
            ("<samples>4</samples>", "<samples>x</samples>", 26, "a count"),
            ("<minimum unit=\"us\">3</minimum>\n        <maximum unit=\"us\">9</maximum>\n        <mean unit=\"us\">5.5", "<minimum unit=\"ns\">3</minimum>\n        <maximum unit=\"us\">9</maximum>\n        <mean unit=\"us\">5.5", 27, "in us"),
            ("index=\"3\"", "index=\"-3\"", 33, "whole number"),
            ("<core id=\"1\"", "<core id=\"0\"", 0, "twice"),
        ] {
            let bad = V1.replacen(from, to, 1);
            assert_ne!(bad, V1, "{from}");
            let e = import(&bad).expect_err(from);
            assert!(e.msg.contains(what), "{from}: {}", e.msg);
            assert_eq!(e.line, line, "{from}: {}", e.msg);
        }
    }

    #[test]
    fn a_core_without_histogram_is_statistics_only() {
        let start = V1.find("      <histogram nbuckets=\"1\">").expect("there");
        let end = V1[start..].find("</histogram>").expect("there") + start + 13;
        let text = format!("{}{}", &V1[..start], &V1[end..]);
        let r = import(&text).expect("imports");
        assert_eq!(r.threads[1].summary.samples, 1);
        assert!(r.threads[1].histogram.buckets.is_empty());
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("cpu1: the input has no histogram")));
    }

    #[test]
    fn reports_without_figures_or_not_rteval_are_refused() {
        let over =
            String::from_utf8(fixture("rteval-3.8-over-buckets-refused.xml")).expect("utf-8");
        let e = import(&over).expect_err("no statistics");
        assert!(e.msg.contains("--cyclictest-buckets"), "{}", e.msg);
        let timerlat = over.replace("cyclictest", "timerlat");
        let e = import(&timerlat).expect_err("timerlat");
        assert!(e.msg.contains("--from rtla-timerlat"), "{}", e.msg);
        let e = import("<?xml version=\"1.0\"?>\n<report/>\n").expect_err("not rteval");
        assert!(e.msg.contains("<rteval>") && e.line == 2, "{}", e.msg);
        let two = V1.replace("</rteval>", "<cyclictest/></rteval>");
        assert!(import(&two)
            .expect_err("two")
            .msg
            .contains("one <cyclictest>"));
        // A DTD (entity expansion) is not read.
        let dtd = V1.replacen("<rteval", "<!DOCTYPE r [<!ENTITY a \"aaaa\">]>\n<rteval", 1);
        assert!(import(&dtd).is_err());
        let cut = &V1[..V1.len() / 2];
        let e = import(cut).expect_err("cut");
        assert!(
            e.msg.contains("looks cut") && e.line == cut.lines().count(),
            "{}",
            e.msg
        );
        let e = import(&V1.replace("<arch>", "<arch")).expect_err("malformed");
        assert!(
            e.msg.contains("attribute name") && e.line == 10,
            "{}",
            e.msg
        );
    }

    #[test]
    fn local_timestamps() {
        let a = local_us("2026-12-06 03:45:50.684989").expect("a time");
        let b = local_us("2026-12-06 03:46:10").expect("a time without fraction");
        assert_eq!(b - a, 19_315_011);
        assert_eq!(local_us("2026-12-06 03:46:10.5"), Some(b + 500_000));
        for bad in [
            "",
            "2026-12-06",
            "2026-13-06 00:00:00",
            "2026-12-06 24:00:00",
            "x y",
        ] {
            assert_eq!(local_us(bad), None, "{bad}");
        }
    }
}
