//! Parsing of the user's units: durations (`1ms`, `100us`, `2h`) and CPU lists (`0,2-3`, `all`).

/// The longest duration rtlat takes anywhere (a run's `--duration`, a
/// suite step's, a timeout): 8784 hours, 366 days. Every time computed from a
/// duration (a start plus a duration, a sum of two) then stays far from the
/// end of the 64-bit nanosecond range (584 years).
pub const MAX_DURATION_NS: u64 = 8784 * 3_600_000_000_000;

/// The longest period of a measuring loop (`timer`, `switch`, `irq`, `net
/// ping --period`) and the longest `cruncher --work`: one second, so a stop
/// (SIGINT, SIGTERM, SIGHUP, the end of `--duration`) is seen within it.
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;

/// A decimal number as the user writes one (`0.95`, `5`, `.5`, `1e-9`,
/// `2.5E3`, a sign first), into the nearest f64 where its digits and its
/// power of ten are exact (up to 15 significant digits and 22 powers of
/// ten: every value an option takes), else within an ulp or two. `None`
/// for anything else (`inf`, `NaN`, `1e`, `0x10`, an empty string). Not
/// the standard library's parser: its tables are 17 kB of a board's
/// flash.
pub fn parse_decimal(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    // Up to 19 significant digits in the mantissa; the power of ten moved
    // for the digits left out of it and for those after the point.
    let (mut mantissa, mut exp, mut digits, mut kept) = (0u64, 0i32, 0usize, 0usize);
    let mut point = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                digits += 1;
                if kept < 19 {
                    if mantissa > 0 || c != b'0' {
                        kept += 1;
                    }
                    mantissa = mantissa * 10 + u64::from(c - b'0');
                    exp -= i32::from(point);
                } else if !point {
                    exp += 1;
                }
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        let rest = &text[i + 1..];
        let e: i32 = rest
            .strip_prefix('+')
            .unwrap_or(rest)
            .parse()
            .ok()
            .filter(|_| rest.bytes().last().is_some_and(|d| d.is_ascii_digit()))?;
        exp = exp.checked_add(e)?;
        i = b.len();
    }
    if i != b.len() {
        return None;
    }
    let m = mantissa as f64;
    let v = match exp {
        0 => m,
        // Exact operands, one rounding.
        1..=22 => m * 10f64.powi(exp),
        -22..=-1 => m / 10f64.powi(-exp),
        _ if exp > 0 => m * 10f64.powi(exp.min(400)),
        _ => m / 10f64.powi((-exp).min(400)),
    };
    let v = if negative { -v } else { v };
    v.is_finite().then_some(v)
}

/// Parse a duration with a unit into nanoseconds, at most [`MAX_DURATION_NS`].
///
/// Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`. A fractional number is
/// allowed (`1.5ms`, rounded to the nearest ns). A bare number is refused
/// because its unit would be a guess. The arithmetic is checked: a value past
/// the bound is refused, never wrapped or saturated.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    parse_duration_within(text, &["s", "ms", "us"], u64::MAX)
}

/// [`parse_duration_ns`] for an option that takes at most `max` ns, whose
/// usual units are `units` (most usual first): a number without a unit
/// gets only the suggestions the option would take.
fn parse_duration_within(text: &str, units: &[&str], max: u64) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty duration; give a number with a unit, e.g. 1ms".into());
    }
    if t.starts_with('-') {
        return Err(format!(
            "'{t}' is negative; give a positive duration such as 1ms"
        ));
    }
    if t.chars().all(|c| c == '0' || c == '.') {
        return Err(format!(
            "'{t}' is zero; give a positive duration such as 1ms"
        ));
    }
    let (num, unit) = split_unit(t);
    if unit.is_empty() {
        let fits: Vec<String> = units
            .iter()
            .filter(|u| parse_duration_ns(&format!("{t}{u}")).is_ok_and(|ns| ns <= max))
            .map(|u| format!("{t}{u}"))
            .collect();
        return Err(match fits.split_last() {
            None => format!("'{t}' has no unit; give one, e.g. 1ms"),
            Some((last, [])) => format!("'{t}' has no unit; write it as {last}"),
            Some((last, rest)) => {
                format!(
                    "'{t}' has no unit; write it as {} or {last}",
                    rest.join(", ")
                )
            }
        });
    }
    if num.is_empty() {
        return Err(format!("'{t}' is not a number with a unit, e.g. 1ms"));
    }
    let scale: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => {
            return Err(format!(
                "'{t}': unknown unit '{unit}'; use ns, us, ms, s, m or h"
            ))
        }
    };
    let not_a_number = || format!("'{t}' is not a number with a unit, e.g. 1ms");
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err(not_a_number());
    }
    let too_large = || {
        format!(
            "'{t}' is above the longest duration rtlat takes, {}h (366 days)",
            MAX_DURATION_NS / 3_600_000_000_000
        )
    };
    // Digits past the 19th cannot change a bounded value by a nanosecond.
    let whole = whole.trim_start_matches('0');
    if whole.len() > 19 {
        return Err(too_large());
    }
    let w: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| not_a_number())?
    };
    let frac = &frac[..frac.len().min(19)];
    let f: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| not_a_number())?
    };
    let denom = 10u128.pow(frac.len() as u32);
    let ns = w
        .checked_mul(scale)
        .and_then(|v| v.checked_add((f * scale + denom / 2) / denom))
        .ok_or_else(too_large)?;
    if ns > u128::from(MAX_DURATION_NS) {
        return Err(too_large());
    }
    Ok(ns as u64)
}

/// A period or a computation's length: a positive duration of at most
/// [`MAX_PERIOD_NS`].
pub fn parse_period_ns(text: &str) -> Result<u64, String> {
    let ns = parse_duration_within(text, &["us", "ms", "s"], MAX_PERIOD_NS)?;
    if ns == 0 {
        return Err(format!(
            "'{text}' is zero; give a positive duration such as 1ms"
        ));
    }
    if ns > MAX_PERIOD_NS {
        return Err(format!(
            "'{text}' is above the longest period rtlat takes, 1s (a run must see a stop request within it)"
        ));
    }
    Ok(ns)
}

/// Split `12.5ms` into its number and its unit (`("12.5", "ms")`): the number
/// is the leading digits and dots, the unit the rest (empty when there is none).
pub fn split_unit(t: &str) -> (&str, &str) {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    t.split_at(split)
}

/// Parse a CPU list such as `0,2-3` or `all` against the online CPUs.
/// The result is sorted and free of duplicates.
pub fn parse_cpu_list(text: &str, online: &[usize]) -> Result<Vec<usize>, String> {
    let t = text.trim();
    if t == "all" {
        return Ok(online.to_vec());
    }
    let mut cpus = parse_ranges(t).map_err(|e| format!("--cpus '{t}': {e}"))?;
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(format!(
            "--cpus: CPU {bad} is not online; online CPUs are {}",
            format_cpu_list(online)
        ));
    }
    Ok(cpus)
}

/// Parse the kernel's list syntax (`0-3,5`), as in `/sys/devices/system/cpu/online`.
pub fn parse_ranges(t: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    if t.trim().is_empty() {
        return Ok(out);
    }
    for part in t.trim().split(',') {
        let part = part.trim();
        let bad = || format!("'{part}' is not a CPU number or range like 2-3");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b || b - a > 65536 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// Format CPUs back in the kernel's list syntax (`0-3,5`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Display nanoseconds as microseconds with three decimals.
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Seconds with three decimals: `12.345s`.
pub fn secs(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

/// A short human duration: `1ms`, `250us`, `10s`, `2h` when exact, else `1.500ms`.
pub fn human_duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 6] = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, name) in UNITS {
        if ns >= scale && ns % scale == 0 && (scale > 1 || ns < 1000) {
            return format!("{}{name}", ns / scale);
        }
    }
    for (scale, name) in UNITS {
        if ns >= scale {
            return format!("{:.3}{name}", ns as f64 / scale as f64);
        }
    }
    "0s".into()
}

/// Check `parse` against a table of inputs and what each gives.
#[cfg(test)]
pub fn check_parses<T: PartialEq + std::fmt::Debug, E>(
    parse: impl Fn(&str) -> Result<T, E>,
    cases: &[(&str, T)],
) {
    for (text, expected) in cases {
        assert_eq!(parse(text).ok().as_ref(), Some(expected), "{text}");
    }
}

/// Check that `parse` refuses every input of `bad`.
#[cfg(test)]
pub fn check_refuses<T, E>(parse: impl Fn(&str) -> Result<T, E>, bad: &[&str]) {
    for text in bad {
        assert!(parse(text).is_err(), "{text} is accepted");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_read_as_the_standard_parser_reads_them() {
        for text in [
            "0.95",
            "5",
            ".5",
            "5.",
            "1e-9",
            "2.5E3",
            "-1",
            "+0.25",
            "1000",
            "0.001",
            "123456.789",
            "1e22",
            "3.141592653589793",
            "0",
            "-0.0",
            "1e+3",
            "0.1",
            "99.99999",
            "12345678901234567890123",
        ] {
            assert_eq!(parse_decimal(text), text.parse::<f64>().ok(), "{text}");
        }
        for text in [
            "", ".", "-", "e5", "1e", "1e+", "1.2.3", "inf", "NaN", "0x10", "1 ", " 1", "1e400",
            "1_000",
        ] {
            assert_eq!(parse_decimal(text), None, "{text:?}");
        }
        // Beyond the exact range, within an ulp or two.
        for text in ["1e-30", "6.02214076e23", "1.7976931348623157e300"] {
            let (got, want) = (
                parse_decimal(text).expect(text),
                text.parse::<f64>().unwrap(),
            );
            assert!(
                (got - want).abs() <= 2.0 * f64::EPSILON * want.abs(),
                "{text}: {got} {want}"
            );
        }
    }

    #[test]
    fn durations_with_units() {
        check_parses(
            parse_duration_ns,
            &[
                ("1ms", 1_000_000),
                ("100us", 100_000),
                ("1.5ms", 1_500_000),
                ("2h", 7_200_000_000_000),
                ("5m", 300_000_000_000),
                ("250ns", 250),
                ("0s", 0),
                ("0.5ns", 1),
                (".5s", 500_000_000),
                ("8784h", MAX_DURATION_NS),
                ("1.0000000000000000000001s", 1_000_000_000),
                ("000000000000000000000001s", 1_000_000_000),
            ],
        );
        assert_eq!(parse_period_ns("1s"), Ok(1_000_000_000));
        assert!(parse_period_ns("0ms").unwrap_err().contains("zero"));
        assert!(parse_period_ns("1001ms")
            .unwrap_err()
            .contains("longest period"));
        assert_eq!(split_unit("12.5ms"), ("12.5", "ms"));
        assert_eq!(split_unit("7"), ("7", ""));
    }

    /// The values a message suggests after "write it as".
    fn suggested(message: &str) -> Vec<String> {
        let list = message.split("write it as ").nth(1).unwrap_or_default();
        list.replace(" or ", ", ")
            .split(", ")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_number_without_unit_gets_only_values_the_option_takes() {
        // A period is at most 1 s: 1000s is not offered, microseconds first.
        let e = parse_period_ns("1000").unwrap_err();
        assert_eq!(suggested(&e), ["1000us", "1000ms"], "{e}");
        let e = parse_period_ns("5").unwrap_err();
        assert_eq!(suggested(&e), ["5us", "5ms"], "{e}");
        for text in ["1000", "5", "2000000", "0.5"] {
            let e = parse_period_ns(text).unwrap_err();
            for s in suggested(&e) {
                assert!(parse_period_ns(&s).is_ok(), "{e}: {s} refused");
            }
        }
        // Nothing fits: no value suggested.
        let e = parse_period_ns("5000000").unwrap_err();
        assert!(e.contains("give one"), "{e}");
        // A run's length: seconds first.
        let e = parse_duration_ns("5").unwrap_err();
        assert_eq!(suggested(&e), ["5s", "5ms", "5us"], "{e}");
    }

    #[test]
    fn bad_durations_are_refused_with_reason() {
        for (text, reason) in [
            ("-5", "negative"),
            ("abc", "not a number"),
            ("10", "no unit"),
            ("10parsecs", "unknown unit"),
            ("1.2.3ms", ""),
            ("", ""),
            ("99999999999999h", "longest duration"),
            ("18446744073s", "longest duration"),
            ("18446744073709551616ns", "longest duration"),
            ("8785h", "8784h"),
            ("0", "zero"),
            ("00.0", "zero"),
            (".ms", "not a number"),
            ("1..ms", "not a number"),
            (
                "1000000000000000000000000000000000000000ns",
                "longest duration",
            ),
        ] {
            let e = parse_duration_ns(text).unwrap_err();
            assert!(e.contains(reason), "{text}: {e}");
        }
    }

    #[test]
    fn cpu_lists() {
        let online = [0, 1, 2, 3];
        assert_eq!(parse_cpu_list("0,2-3", &online), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list("3,1,1", &online), Ok(vec![1, 3]));
        assert_eq!(parse_cpu_list("all", &online), Ok(vec![0, 1, 2, 3]));
        assert!(parse_cpu_list("999", &online)
            .unwrap_err()
            .contains("not online"));
        assert!(parse_cpu_list("3-1", &online).is_err());
        assert!(parse_cpu_list("x", &online).is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(parse_ranges("2-2"), Ok(vec![2]));
        assert_eq!(parse_ranges(" "), Ok(vec![]));
        // A range spans at most 65536 CPUs beyond its first.
        assert_eq!(parse_ranges("2-65538").map(|c| c.len()), Ok(65537));
        assert!(parse_ranges("2-65539").is_err());
    }

    #[test]
    fn display_units() {
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(5), "0.005");
        assert_eq!(human_duration(1_000_000), "1ms");
        assert_eq!(human_duration(7_200_000_000_000), "2h");
        assert_eq!(human_duration(1_500_000), "1500us");
        assert_eq!(human_duration(1_500_001), "1.500ms");
    }
}
