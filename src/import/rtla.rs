//! `rtla timerlat hist` and `rtla osnoise hist` output:
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)
//! # Duration:   0 00:10:00
//! Index   IRQ-000   Thr-000   IRQ-001   Thr-001
//! 0        276489         0    206089         0
//! 1        318327     35487    388149     30024
//! over:         0         0         0         0
//! count:   600002    600002    600002    600002
//! min:          0         1         0         1
//! avg:          0         5         0         5
//! max:         16        36        15        58
//! ALL:        IRQ       Thr
//! count:  1200004   1200004
//! …
//! ```
//!
//! Rows are the bucket's lower value (index × bucket size), all-zero rows are
//! skipped, `over:` counts samples beyond the histogram, averages are
//! truncated to whole units, `-` marks a column without samples. The series
//! are named as `timer --context` names its own, so both compare side by
//! side: thread latency (`Thr-NNN`) `cpuN/thread`, IRQ latency `cpuN/irq`,
//! user-space latency (`-u`) `cpuN/user`; the total merges the user series
//! where rtla measured them, else the thread series.

use super::lines::Preamble;
use super::{detect, ImportFormat, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, ThreadBuild};
use crate::stats::summary::signed;

fn values(n: usize, rest: &str, columns: usize, what: &str) -> Parsed<Vec<Option<u64>>> {
    let v: Vec<Option<u64>> = rest
        .split_whitespace()
        .map(|t| {
            if t == "-" {
                Ok(None)
            } else {
                parse_u64(t).map(Some).ok_or_else(|| {
                    ParseError::at(
                        n,
                        format!(
                            "expected whole numbers or '-' after '{what}', found {}",
                            super::found(t)
                        ),
                    )
                })
            }
        })
        .collect::<Parsed<_>>()?;
    if v.len() != columns {
        return Err(ParseError::at(n, format!("expected {columns} values after '{what}' (one per column of the Index line), found {}", v.len())));
    }
    Ok(v)
}

fn duration(s: &str) -> Option<u64> {
    // "0 00:10:00": days, then hh:mm:ss.
    let mut it = s.split_whitespace();
    let days = parse_u64(it.next()?)?;
    let hms: Vec<u64> = it
        .next()?
        .split(':')
        .map(parse_u64)
        .collect::<Option<_>>()?;
    match hms.as_slice() {
        [h, m, s] => days
            .checked_mul(86_400)?
            .checked_add(h.checked_mul(3600)?)?
            .checked_add(m.checked_mul(60)?)?
            .checked_add(*s),
        _ => None,
    }
}
/// rtla timerlat hist output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "rtla-timerlat",
    tool: "rtla-timerlat",
    describe: "rtla timerlat hist output",
    detect: |head| {
        detect::line_starts_with(head, &["# RTLA timerlat"])
            || head
                .lines()
                .any(|l| l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-")))
    },
    read: Reader::Lines(parse),
};

/// One column of the histogram: its thread, and its lowest and highest non-empty rows.
struct Column {
    kind: String,
    cpu: usize,
    build: ThreadBuild,
    low: Option<u64>,
    high: Option<u64>,
}

/// The summary rows rtla always prints after the histogram (unless `--no-summary`).
const NAMES: [&str; 5] = ["over:", "count:", "min:", "avg:", "max:"];

const EXPECTED: &str =
    "its header ('# RTLA timerlat histogram' or '# RTLA osnoise histogram', then an 'Index …' line)";

/// `-b N`/`--bucket-size N` and `-E N`/`--entries N` of an rtla command line.
fn hist_options(words: &[String]) -> (Option<u64>, Option<u64>) {
    let t: Vec<&str> = words.iter().map(String::as_str).collect();
    let num = |s: &str, l: &str| {
        super::cyclictest_json::option(&t, s, l).and_then(|v| parse_u64(v).filter(|&v| v > 0))
    };
    (num("-b", "--bucket-size"), num("-E", "--entries"))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// rtla osnoise hist output: the same layout, one `CPU-NNN` column per CPU
/// counting the noise samples (`osnoise:sample_threshold`), imported as
/// `cpuN/noise`, the series of `rtlat noise`'s gaps above its threshold.
pub static FORMAT_OSNOISE: ImportFormat = ImportFormat {
    name: "rtla-osnoise",
    tool: "rtla-osnoise",
    describe: "rtla osnoise hist output",
    detect: |head| {
        detect::line_starts_with(head, &["# RTLA osnoise"])
            || head
                .lines()
                .any(|l| l.starts_with("Index") && l.contains("CPU-"))
    },
    read: Reader::Lines(parse_osnoise),
};

/// Which rtla histogram a parse reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tracer {
    Timerlat,
    Osnoise,
}

impl Tracer {
    fn name(self) -> &'static str {
        match self {
            Tracer::Timerlat => "timerlat",
            Tracer::Osnoise => "osnoise",
        }
    }
    /// The column kinds its `Index` line has.
    fn kinds(self) -> &'static [&'static str] {
        match self {
            Tracer::Timerlat => &["IRQ", "Thr", "Usr"],
            Tracer::Osnoise => &["CPU"],
        }
    }
}

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    parse_as(lines, Tracer::Timerlat)
}

pub fn parse_osnoise(lines: &mut Input) -> Parsed<Imported> {
    parse_as(lines, Tracer::Osnoise)
}

fn parse_as(lines: &mut Input, tracer: Tracer) -> Parsed<Imported> {
    let mut hist = Hist::new(tracer);
    let mut last = 0;
    while let Some((n, raw)) = lines.next_line()? {
        last = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        hist.line(n, raw.trim())?;
    }
    hist.finish(last)
}

/// What the lines read so far say: the parser's state, one method per kind of line.
struct Hist {
    tracer: Tracer,
    /// Nanoseconds per printed unit: 1000 for microseconds, 1 for nanoseconds.
    scale: u64,
    secs: Option<u64>,
    cols: Vec<Column>,
    header_line: Option<usize>,
    preamble: Preamble,
    last_index: Option<u64>,
    rows_gcd: u64,
    stats: [SummaryRow; 5],
    started: bool,
    summary_done: bool,
    /// rtla printed its zeroed statistics (`over: 0`, `count: 0` …, one value
    /// each): no sample fell within the histogram.
    zeroed: bool,
}

/// The histogram's range: bucket size and entries, given or told from the rows.
struct Range {
    width: u64,
    entries: Option<u64>,
    /// The first value past the histogram (its upper bound if `entries` is unknown).
    limit: u64,
    given_width: Option<u64>,
    given_entries: Option<u64>,
    /// The bucket size was told from the rows.
    inferred: bool,
    /// The lowest max: of the columns with samples past the range.
    overflow_max: Option<u64>,
}

impl Hist {
    fn new(tracer: Tracer) -> Self {
        Hist {
            tracer,
            scale: 1000,
            secs: None,
            cols: Vec::new(),
            header_line: None,
            preamble: Preamble::default(),
            last_index: None,
            rows_gcd: 0,
            stats: Default::default(),
            started: false,
            summary_done: false,
            zeroed: false,
        }
    }

    /// One trimmed line `n`.
    fn line(&mut self, n: usize, t: &str) -> Parsed<()> {
        if t.is_empty() || self.summary_done {
            // After the summary: the all-CPU summary (we merge ourselves) and rtla's closing messages.
            return Ok(());
        }
        if let Some(c) = t.strip_prefix('#') {
            return self.comment(n, t, c.trim());
        }
        if self.header_line.is_none() {
            return self.header(n, t);
        }
        if let Some(i) = NAMES.iter().position(|name| t.starts_with(name)) {
            return self.summary_row(n, t, i);
        }
        self.data_row(n, t)
    }

    /// A `#` line `t`, `c` its text after the `#`: the time unit, the duration, rtla's banner.
    fn comment(&mut self, n: usize, t: &str, c: &str) -> Parsed<()> {
        if let Some(u) = c.strip_prefix("Time unit is ") {
            self.scale = if u.starts_with("nano") { 1 } else { 1000 };
        } else if let Some(d) = c.strip_prefix("Duration:") {
            self.secs = duration(d);
        }
        self.started |= c.starts_with(&format!("RTLA {}", self.tracer.name()));
        if !self.started && !c.starts_with("RTLA") {
            self.preamble.skip(n, t, EXPECTED)?;
        }
        Ok(())
    }

    /// A line before the `Index …` header: the header itself, or a preamble line.
    fn header(&mut self, n: usize, t: &str) -> Parsed<()> {
        let Some(rest) = t.strip_prefix("Index") else {
            if !self.started {
                return self.preamble.skip(n, t, EXPECTED);
            }
            return Err(ParseError::at(
                n,
                format!("expected {EXPECTED}, found {}", super::found(t)),
            ));
        };
        for tok in rest.split_whitespace() {
            let parsed = tok.split_once('-').and_then(|(k, c)| {
                let cpu = parse_u64(c)? as usize;
                self.tracer
                    .kinds()
                    .contains(&k)
                    .then(|| (k.to_string(), cpu))
            });
            let (kind, cpu) = parsed.ok_or_else(|| {
                ParseError::at(
                    n,
                    format!(
                        "expected columns like {}, found {}",
                        self.tracer
                            .kinds()
                            .iter()
                            .map(|k| format!("{k}-000"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        super::found(tok)
                    ),
                )
            })?;
            self.cols.push(Column {
                build: ThreadBuild::new(name(&kind, cpu), Some(cpu)),
                kind,
                cpu,
                low: None,
                high: None,
            });
        }
        // rtla osnoise hist names only the CPUs that had noise over the threshold: none, none.
        if self.cols.is_empty() && self.tracer != Tracer::Osnoise {
            return Err(ParseError::at(
                n,
                "expected at least one column after Index",
            ));
        }
        self.header_line = Some(n);
        self.started = true;
        Ok(())
    }

    /// Summary row `i` of `NAMES` (over:, count:, min:, avg:, max:).
    fn summary_row(&mut self, n: usize, t: &str, i: usize) -> Parsed<()> {
        let stats = &mut self.stats;
        if i > 0 && stats[i - 1].is_none() || stats[i].is_some() {
            return Err(ParseError::at(
                n,
                format!("expected the summary rows in rtla's order (over:, count:, min:, avg:, max:), found {}", super::found(t)),
            ));
        }
        let rest = &t[NAMES[i].len()..];
        // Without a sample in any bucket rtla prints one 0 per row, whatever its columns.
        let zeroed = self.last_index.is_none()
            && (i == 0 || self.zeroed)
            && rest.split_whitespace().collect::<Vec<_>>() == ["0"];
        let cols = self.cols.len();
        let v = if zeroed {
            vec![Some(0); cols]
        } else if self.zeroed {
            return Err(ParseError::at(
                n,
                format!(
                    "expected '{} 0' as in rtla's zeroed statistics, found {}",
                    NAMES[i],
                    super::found(t)
                ),
            ));
        } else {
            values(n, rest, cols, NAMES[i])?
        };
        self.zeroed = zeroed;
        stats[i] = Some((n, v));
        self.summary_done = i == 4;
        Ok(())
    }

    /// A histogram row: the bucket, then a count per column.
    fn data_row(&mut self, n: usize, t: &str) -> Parsed<()> {
        let columns = self.cols.len();
        if self.stats.iter().any(|s| s.is_some()) {
            return Err(ParseError::at(
                n,
                format!(
                    "expected count:, min:, avg: or max: after over:, found {}",
                    super::found(t)
                ),
            ));
        }
        let mut it = t.split_whitespace();
        let index = it.next().and_then(parse_u64);
        let mut counts = 0;
        let Some(index) = index else {
            return Err(ParseError::at(n, format!("expected a histogram row (the bucket, then {columns} counts) or over:, found {}", super::found(t))));
        };
        if self.last_index.is_some_and(|l| l >= index) {
            return Err(ParseError::at(n, "expected buckets in increasing order"));
        }
        self.last_index = Some(index);
        self.rows_gcd = gcd(self.rows_gcd, index);
        for tok in it {
            let c = counts;
            counts += 1;
            let Some(col) = self.cols.get_mut(c) else {
                continue;
            };
            let v = parse_u64(tok).ok_or_else(|| ParseError::at(n, format!("expected a histogram row (the bucket, then {columns} counts) or over:, found {}", super::found(t))))?;
            if v > 0 {
                col.build
                    .add(index.saturating_mul(self.scale), v)
                    .map_err(|e| ParseError::at(n, e.msg))?;
                col.low.get_or_insert(index);
                col.high = Some(index);
            }
        }
        if counts != columns {
            return Err(ParseError::at(
                n,
                format!("expected {columns} counts after the bucket, found {counts}"),
            ));
        }
        Ok(())
    }

    /// The end of the input at line `last`: checks that the output is whole, then builds the import.
    fn finish(self, last: usize) -> Parsed<Imported> {
        if self.header_line.is_none() {
            return Err(ParseError::at(last, format!("expected an 'Index {}-000 …' header line (rtla {} hist output without --no-header/--no-index), but the input ends at line {last} without one", self.tracer.kinds()[0], self.tracer.name())));
        }
        if let Some(missing) = NAMES.iter().zip(&self.stats).find(|(_, s)| s.is_none()) {
            return Err(ParseError::at(
                last,
                format!(
                    "expected rtla's summary rows (over:, count:, min:, avg:, max:) after the histogram, but the input ends at line {last} without '{}': the output looks cut (or was printed with --no-summary); import the whole output",
                    missing.0
                ),
            ));
        }
        let range = self.range()?;
        self.into_imported(&range)
    }

    /// The bucket size and entries: from rtla's command line before the output, else told from the rows.
    fn range(&self) -> Parsed<Range> {
        let (given_width, given_entries) = self
            .preamble
            .command("rtla")
            .map(|w| hist_options(&w))
            .unwrap_or((None, None));
        let rows_gcd = self.rows_gcd;
        let inferred = rows_gcd > 1 && given_width.is_none();
        let width = given_width.unwrap_or(rows_gcd.max(1));
        let highest = self.last_index.unwrap_or(0);
        if highest % width != 0 || rows_gcd % width != 0 {
            return Err(ParseError::at(
                0,
                format!(
                    "expected every bucket to be a multiple of the bucket size {width} (-b), found {}",
                    rows_gcd
                ),
            ));
        }
        // rtla's default is 256 entries; more rows than that say -E was larger.
        // Columns with samples beyond the range bound it from above: their max is past it.
        let stats = &self.stats;
        let overflow_max = (0..self.cols.len())
            .filter(|&c| stat_of(stats, 0, c).unwrap_or(0) > 0)
            .filter_map(|c| stat_of(stats, 4, c))
            .min();
        let default_fits = highest / width < 256 && overflow_max.is_none_or(|m| m >= 256 * width);
        let entries = given_entries.or(default_fits.then_some(256));
        if let Some(e) = entries {
            if highest / width >= e {
                return Err(ParseError::at(
                    0,
                    format!(
                        "expected buckets below {} ({e} entries of {width}), found {highest}",
                        e.saturating_mul(width)
                    ),
                ));
            }
        }
        let limit = entries.map_or(highest.saturating_add(width), |e| e.saturating_mul(width));
        Ok(Range {
            width,
            entries,
            limit,
            given_width,
            given_entries,
            inferred,
            overflow_max,
        })
    }

    /// The import: a thread per column, checked against the summary rows, and the notes.
    fn into_imported(self, range: &Range) -> Parsed<Imported> {
        let Range {
            width,
            entries,
            limit,
            ..
        } = *range;
        let scale = self.scale;
        let stats = &self.stats;
        let mut imp = Imported::new(match self.tracer {
            Tracer::Timerlat => crate::result::Benchmark::Timer,
            Tracer::Osnoise => crate::result::Benchmark::Noise,
        });
        imp.notes.extend(self.preamble.note());
        imp.precision_ns = width.saturating_mul(scale);
        if scale == 1 {
            imp.unit = "ns";
        }
        let stat = |i: usize, c: usize| stat_of(stats, i, c);
        let line_of = |i: usize| stats[i].as_ref().map_or(0, |(n, _)| *n);
        // The total is the level closest to user space, as `timer --context`'s:
        // user (`-u`) where rtla measured it, else the timerlat thread.
        let main = if self.tracer == Tracer::Osnoise {
            "CPU"
        } else if self.cols.iter().any(|c| c.kind == "Usr") {
            "Usr"
        } else {
            "Thr"
        };
        let threads: Vec<String> = self
            .cols
            .iter()
            .filter(|c| c.kind == main)
            .map(|c| name(&c.kind, c.cpu))
            .collect();
        for (c, col) in self.cols.into_iter().enumerate() {
            let Column {
                kind,
                cpu,
                mut build,
                low,
                high,
            } = col;
            let over = stat(0, c).unwrap_or(0);
            let expected = build.recorded().saturating_add(over);
            let count = stat(1, c).unwrap_or(0);
            if count != expected {
                return Err(ParseError::at(line_of(1), format!("expected count {expected} for {kind}-{cpu:03} (its rows plus over:), found {count}")));
            }
            check_extremes(
                &kind,
                cpu,
                stat(2, c),
                stat(4, c),
                low,
                high,
                over,
                limit,
                width,
                [line_of(2), line_of(4)],
            )?;
            build.count = Some(expected);
            build.overflow_at_ns = Some(limit.saturating_mul(scale));
            if expected > 0 {
                build.min_ns = stat(2, c).map(|v| signed(v.saturating_mul(scale)));
                build.max_ns = stat(4, c).map(|v| signed(v.saturating_mul(scale)));
                if over > 0 || width > 1 {
                    build.avg_ns = stat(3, c).map(|v| v as f64 * scale as f64);
                }
            }
            imp.threads.push(build);
        }
        imp.total_of = threads;
        imp.duration_ns = self.secs.map(|s| s.saturating_mul(1_000_000_000));
        imp.duration_precision_ns = Some(1_000_000_000);
        imp.config.insert(
            "tool".into(),
            format!("rtla {} hist", self.tracer.name()).into(),
        );
        imp.config.insert(
            "histogram_bucket_ns".into(),
            width.saturating_mul(scale).into(),
        );
        if let Some(e) = entries {
            imp.config.insert("histogram_entries".into(), e.into());
        }
        if imp.threads.is_empty() {
            // No CPU is named: one series, `noise`, holds the zero samples of all.
            let mut none = ThreadBuild::new("noise", None);
            none.count = Some(0);
            imp.threads.push(none);
            imp.notes.push("rtla named no CPU column: no noise passed the threshold on any measured CPU, so the result holds zero samples (series 'noise', all CPUs)".into());
        } else if self.zeroed {
            imp.notes.push("rtla printed its zeroed statistics (over: 0, count: 0 …), as it does when no bucket has a sample, even if a CPU's samples were all beyond the histogram: the result has no samples".into());
        }
        imp.notes.push(range.note(scale));
        imp.notes.push(match self.tracer {
            Tracer::Timerlat => "rtla's histogram output names no host, kernel, period or policy; cpuN/thread is the timerlat thread latency (Thr), cpuN/irq the IRQ latency, cpuN/user the user-space latency (Usr)",
            Tracer::Osnoise => "rtla's histogram output names no host, kernel, threshold or policy; cpuN/noise holds the osnoise tracer's noise samples of CPU N (osnoise:sample_threshold), as rtlat noise's gaps above its threshold",
        }.into());
        if self.secs.is_none() {
            imp.notes
                .push("no '# Duration:' line: the duration is unknown".into());
        }
        Ok(imp)
    }
}

impl Range {
    /// The note on the bucket size and entries, and where each came from.
    fn note(&self, scale: u64) -> String {
        let Range {
            width,
            entries,
            limit,
            given_width,
            given_entries,
            inferred,
            overflow_max,
        } = *self;
        format!(
            "rtla's histogram: buckets of {width} {}{}, {}",
            if scale == 1 { "ns" } else { "µs" },
            match (given_width, inferred) {
                (Some(_), _) => " (-b, from the command line before the output)",
                (None, true) => " (told from the printed rows: every one is a multiple of it)",
                (None, false) => " (rtla's default; no -b in the input)",
            },
            match (given_entries, entries) {
                (Some(e), _) => format!("{e} entries (-E, from the command line)"),
                (None, Some(e)) => format!("{e} entries (rtla's default; no -E in the input)"),
                (None, None) => format!("not rtla's default 256 entries (-E not in the input): the range is at least {limit}{}", overflow_max.map(|m| format!(" and at most {m}")).unwrap_or_default()),
            }
        )
    }
}

/// A summary row as read: its line and a value per column (`-`: none).
type SummaryRow = Option<(usize, Vec<Option<u64>>)>;

/// Summary row `i` (over:, count:, min:, avg:, max:) of column `c`.
fn stat_of(stats: &[SummaryRow; 5], i: usize, c: usize) -> Option<u64> {
    stats[i]
        .as_ref()
        .and_then(|(_, v)| v.get(c).copied().flatten())
}

/// The series names of `timer --context` and `rtlat noise`, so that both compare side by side.
fn name(kind: &str, cpu: usize) -> String {
    match kind {
        "CPU" => format!("cpu{cpu}/noise"),
        "Thr" => format!("cpu{cpu}/thread"),
        "IRQ" => format!("cpu{cpu}/irq"),
        _ => format!("cpu{cpu}/user"),
    }
}

/// rtla counts a value in the bucket `value / width` (or `over:` past the range) and
/// prints min and max of the same values: they must fall in the lowest and highest non-empty rows.
#[allow(clippy::too_many_arguments)]
fn check_extremes(
    kind: &str,
    cpu: usize,
    min: Option<u64>,
    max: Option<u64>,
    low: Option<u64>,
    high: Option<u64>,
    over: u64,
    limit: u64,
    width: u64,
    [min_line, max_line]: [usize; 2],
) -> Parsed<()> {
    let bucket = |v: u64| v / width * width;
    if let (Some(min), Some(low)) = (min, low) {
        if bucket(min) != low {
            return Err(ParseError::at(min_line, format!("expected min of {kind}-{cpu:03} in its lowest non-empty bucket ({low}), found {min}")));
        }
    }
    match (max, high) {
        (Some(max), Some(high)) if over == 0 && bucket(max) != high => Err(ParseError::at(max_line, format!("expected max of {kind}-{cpu:03} in its highest non-empty bucket ({high}), found {max}"))),
        (Some(max), _) if over > 0 && max < limit => Err(ParseError::at(max_line, format!("expected max of {kind}-{cpu:03} beyond the histogram's range ({limit}, as over: counts {over}), found {max}"))),
        (Some(max), Some(high)) if max < high => Err(ParseError::at(max_line, format!("expected max of {kind}-{cpu:03} at least its highest non-empty bucket ({high}), found {max}"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod osnoise_tests {
    use super::*;
    use crate::import::fuzz::fixture;

    fn import(text: &[u8]) -> Parsed<crate::result::RunResult> {
        crate::import::parse(&FORMAT_OSNOISE, &mut &text[..], "o.txt", None)
    }

    #[test]
    fn osnoise_columns_are_noise_series_with_the_printed_numbers() {
        let r = import(&fixture("rtla-osnoise-hist.txt")).expect("imports");
        assert_eq!(r.benchmark, crate::result::Benchmark::Noise);
        // A capture of the PREEMPT_RT 6.1 guest: one CPU, 11 s, 3002 of the
        // 50688 samples above the last bucket (255 us).
        assert_eq!(r.duration_ns, Some(11_000_000_000));
        let t = &r.threads[0];
        assert_eq!((t.name.as_str(), t.cpu), ("cpu1/noise", Some(1)));
        assert_eq!(t.summary.samples, 50_688);
        assert_eq!((t.summary.min_ns, t.summary.max_ns), (5000, 25_343_000));
        // A timerlat parse refuses osnoise columns, and the other way round.
        let timerlat = crate::import::parse(
            &FORMAT,
            &mut &fixture("rtla-osnoise-hist.txt")[..],
            "o",
            None,
        );
        assert!(timerlat.is_err());
        assert!(import(&fixture("rtla-timerlat-hist.txt")).is_err());
    }
}
