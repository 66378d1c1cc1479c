//! `rtla osnoise top` output: per CPU the totals of the osnoise tracer's
//! periods (colour codes of a terminal are ignored):
//!
//! ```text
//!                                           Operating System Noise
//! duration:   0 00:00:10 | time is in us
//! CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread
//!   1 #10         10217435      5734036    43.87988     1012555       426196       10188            0         1635            0          282
//! ```
//!
//! The output has totals and no samples: it is imported as a result without
//! series whose `details.osnoise` holds each CPU's row, the same totals
//! `rtlat noise --osnoise` records (a series of one sample per CPU would
//! claim a distribution that was never measured). `rtla osnoise hist`
//! ([`super::rtla`]) has the samples.

use super::{parse_u64, ImportFormat, Imported, Input, ParseError, Parsed, Reader};
use crate::result::details::noise::{NoiseDetails, OsnoiseCpu};
use crate::result::details::Details;
use crate::result::Benchmark;

/// rtla osnoise top's text output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "rtla-osnoise-top",
    tool: "rtla-osnoise",
    describe: "rtla osnoise top output",
    detect: |head| {
        head.contains("Operating System Noise")
            && head
                .lines()
                .any(|l| plain(l).trim_start().starts_with("CPU Period"))
    },
    read: Reader::Lines(parse),
};

const EXPECTED: &str =
    "rtla osnoise top's table ('Operating System Noise', 'duration:', the 'CPU Period …' header, one row per CPU)";

/// `line` without the terminal's colour codes (`ESC [ … m`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `0 00:00:10` (days, then hh:mm:ss) as ns.
fn duration_ns(text: &str) -> Option<u64> {
    let mut w = text.split_whitespace();
    let days: u64 = w.next()?.parse().ok()?;
    let hms: Vec<u64> = w
        .next()?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms[..] else { return None };
    let secs = days
        .checked_mul(24)?
        .checked_add(h)?
        .checked_mul(60)?
        .checked_add(m)?
        .checked_mul(60)?
        .checked_add(s)?;
    secs.checked_mul(1_000_000_000)
}

/// One CPU's row: CPU, #periods, runtime, noise, % available, max noise (of
/// a period), max single, HW, NMI, IRQ, softirq, thread.
fn row(n: usize, t: &str) -> Parsed<OsnoiseCpu> {
    let w: Vec<&str> = t.split_whitespace().collect();
    if w.len() != 12 {
        return Err(ParseError::at(
            n,
            format!(
                "expected 12 columns (CPU, #periods, runtime, noise, % available, max noise, max single, HW, NMI, IRQ, softirq, thread), found {}: the row looks cut",
                w.len()
            ),
        ));
    }
    let num = |i: usize| {
        parse_u64(w[i])
            .ok_or_else(|| ParseError::at(n, format!("expected a whole number, found '{}'", w[i])))
    };
    let periods = w[1]
        .strip_prefix('#')
        .and_then(parse_u64)
        .ok_or_else(|| ParseError::at(n, format!("expected #PERIODS, found '{}'", w[1])))?;
    let available_pct: f64 = w[4]
        .parse()
        .ok()
        .filter(|p: &f64| (0.0..=100.0).contains(p))
        .ok_or_else(|| ParseError::at(n, format!("expected a percentage, found '{}'", w[4])))?;
    let (runtime_us, noise_us) = (num(2)?, num(3)?);
    if noise_us > runtime_us {
        return Err(ParseError::at(
            n,
            format!("expected the noise ({noise_us}) within the runtime ({runtime_us})"),
        ));
    }
    Ok(OsnoiseCpu {
        cpu: num(0)? as usize,
        periods,
        runtime_us,
        noise_us,
        available_pct,
        max_period_noise_us: num(5)?,
        max_single_noise_us: num(6)?,
        hw: num(7)?,
        nmi: num(8)?,
        irq: num(9)?,
        softirq: num(10)?,
        thread: num(11)?,
    })
}

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let (mut title, mut header, mut duration) = (false, false, None);
    // A shell prompt and command pasted above the table are skipped, as the other formats do.
    let mut preamble = super::lines::Preamble::default();
    let mut cpus: Vec<OsnoiseCpu> = Vec::new();
    let mut last = 0;
    while let Some((n, raw)) = lines.next_line()? {
        last = n;
        let line = plain(&raw);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        if t == "Operating System Noise" {
            title = true;
        } else if let Some(d) = t.strip_prefix("duration:") {
            let (d, unit) = d.split_once('|').unwrap_or((d, ""));
            if !unit.contains("time is in us") {
                return Err(ParseError::at(
                    n,
                    "expected 'time is in us' (rtla osnoise top prints µs)",
                ));
            }
            duration = Some(duration_ns(d).ok_or_else(|| {
                ParseError::at(
                    n,
                    format!("expected a duration 'D HH:MM:SS', found '{}'", d.trim()),
                )
            })?);
        } else if t.starts_with("CPU Period") {
            header = true;
        } else if header && t.starts_with(|c: char| c.is_ascii_digit()) {
            let c = row(n, t)?;
            if cpus.iter().any(|o| o.cpu == c.cpu) {
                return Err(ParseError::at(
                    n,
                    format!("expected one row per CPU, found CPU {} twice", c.cpu),
                ));
            }
            cpus.push(c);
        } else if !title {
            preamble.skip(n, t, EXPECTED)?;
        } else if header {
            return Err(ParseError::at(
                n,
                format!("expected {EXPECTED}, found '{t}'"),
            ));
        }
    }
    if !title || !header || cpus.is_empty() {
        return Err(ParseError::at(
            last,
            format!("expected {EXPECTED}; the output has no CPU row"),
        ));
    }
    cpus.sort_by_key(|c| c.cpu);
    let mut imp = Imported::new(Benchmark::Noise);
    imp.duration_ns = duration;
    imp.duration_precision_ns = Some(1_000_000_000);
    imp.totals_only = true;
    imp.notes.extend(preamble.note());
    imp.details.extend(
        NoiseDetails {
            counter: "kernel".into(),
            tracer: Some("osnoise".into()),
            osnoise: cpus,
            ..NoiseDetails::default()
        }
        .to_map(),
    );
    imp.notes.push(
        "rtla osnoise top prints totals per CPU and no samples: details.osnoise holds them, the result has no series (rtla osnoise hist has the samples)".into(),
    );
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::fuzz::fixture;

    fn import(text: &[u8]) -> Parsed<crate::result::RunResult> {
        crate::import::parse(&FORMAT, &mut &text[..], "top.txt", None)
    }

    #[test]
    fn a_real_capture_gives_the_printed_totals_per_cpu() {
        let text = fixture("rtla-osnoise-top.txt");
        assert!(crate::import::detect(&String::from_utf8_lossy(&text))
            .is_some_and(|f| f.name == "rtla-osnoise-top"));
        let r = import(&text).expect("imports");
        assert_eq!(r.benchmark, Benchmark::Noise);
        assert!(r.complete && r.threads.is_empty());
        assert_eq!(r.duration_ns, Some(10_000_000_000));
        let c: Vec<OsnoiseCpu> =
            serde_json::from_value(r.details["osnoise"].clone()).expect("osnoise rows");
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(
            (c.cpu, c.periods, c.runtime_us, c.noise_us),
            (1, 9, 9_004_955, 3_264_315)
        );
        assert_eq!(
            (c.max_period_noise_us, c.max_single_noise_us),
            (602_197, 42_254)
        );
        assert_eq!(
            [c.hw, c.nmi, c.irq, c.softirq, c.thread],
            [7691, 0, 2148, 0, 233]
        );
        assert!((c.available_pct - 63.74979).abs() < 1e-9);
        // The file loads as a result (totals without series are allowed).
        assert_eq!(crate::render::loaded::check(&r), Ok(()));
    }

    #[test]
    fn cut_or_foreign_tables_are_refused() {
        let text = String::from_utf8_lossy(&fixture("rtla-osnoise-top.txt")).into_owned();
        // The row cut inside (no line end), or a column short.
        let cut = &text[..text.trim_end().len() - 3];
        assert!(import(cut.as_bytes()).is_err());
        let short = text.replace("          233", "");
        let e = import(short.as_bytes()).expect_err("refused");
        assert!(e.msg.contains("12 columns"), "{e:?}");
        // No row at all.
        let head: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert!(import(head.as_bytes()).is_err());
        assert!(import(&fixture("rtla-osnoise-hist.txt")).is_err());
    }

    #[test]
    fn colour_codes_and_durations_are_read() {
        assert_eq!(
            plain("\u{1b}[2;30;47mCPU Period\u{1b}[0;0;0m"),
            "CPU Period"
        );
        assert_eq!(
            duration_ns("1 01:00:05"),
            Some(((25 * 60) * 60 + 5) * 1_000_000_000)
        );
        assert_eq!(duration_ns("0 00:10"), None);
    }
}
