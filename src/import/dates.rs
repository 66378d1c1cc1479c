//! The dates the tools print, as seconds since the epoch.

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `Mon, 30 Nov 2026 09:04:09 +0000` (RFC 2822, as cyclictest writes) in seconds since the epoch.
pub fn parse_rfc2822(s: &str) -> Option<i64> {
    let t = s.trim();
    let t = t.split_once(',').map(|(_, rest)| rest).unwrap_or(t);
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.len() < 4 {
        return None;
    }
    let day: u32 = parts[0].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month = MONTHS
        .iter()
        .position(|m| parts[1].to_ascii_lowercase().starts_with(m))? as u32
        + 1;
    let year: i64 = parts[2].parse().ok()?;
    let hms: Vec<u32> = parts[3]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if hms.len() != 3
        || hms[0] > 23
        || hms[1] > 59
        || hms[2] > 60
        || !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
    {
        return None;
    }
    let offset = match parts.get(4) {
        Some(z) if z.len() == 5 && (z.starts_with('+') || z.starts_with('-')) => {
            let h: i64 = z[1..3].parse().ok()?;
            let m: i64 = z[3..5].parse().ok()?;
            let v = h * 3600 + m * 60;
            if z.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => 0,
    };
    Some(
        days_from_civil(year, month, day) * 86_400
            + hms[0] as i64 * 3600
            + hms[1] as i64 * 60
            + hms[2] as i64
            - offset,
    )
}

/// Seconds since the Unix epoch of the times results record
/// (`2026-11-30T09:00:00.123Z`, milliseconds dropped); `None` for other text.
pub fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || !s.is_ascii()
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || !s.ends_with('Z')
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    Some(days_from_civil(y as i64, mo, d) * 86_400 + (h * 3600 + mi * 60 + sec) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(
            parse_rfc2822("Mon, 30 Nov 2026 09:04:09 +0000"),
            Some(1_796_029_449)
        );
        assert_eq!(
            parse_rfc2822("Mon, 30 Nov 2026 10:04:09 +0100"),
            Some(1_796_029_449)
        );
        assert_eq!(parse_rfc2822("yesterday"), None);
        assert_eq!(parse_rfc2822("Mon, 99 Nov 2026 09:04:09 +0000"), None);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for secs in [0u64, 951_782_400, 1_780_000_123] {
            let text = crate::result::rfc3339_utc(secs, 456_000_000);
            assert_eq!(parse_rfc3339_utc(&text), Some(secs as i64), "{text}");
        }
        for bad in [
            "",
            "2026-13-01T00:00:00.000Z",
            "2026-01-01 00:00:00",
            "2026-01-01T00:00:00.000+01",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }
}
