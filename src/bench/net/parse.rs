//! The text of `rtlat net` options: server addresses, packet rates and
//! byte rates.

use super::DEFAULT_PORT;
use crate::error::{Error, Result};
use std::net::{SocketAddr, ToSocketAddrs};

/// Resolve `HOST:PORT` (`[IPv6]:PORT`; a name is looked up) to one address.
pub fn resolve(text: &str, what: &str) -> Result<SocketAddr> {
    let t = text.trim();
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = t.rsplit_once(':') else {
        return Err(Error::usage(format!(
            "{what} '{t}' has no port; write it as HOST:PORT, e.g. 10.0.0.1:{DEFAULT_PORT}"
        )));
    };
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(Error::usage(format!(
            "{what} '{t}' is ambiguous: put an IPv6 address in brackets, e.g. [fd00::1]:{DEFAULT_PORT}"
        )));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if port.parse::<u16>().is_err() {
        return Err(Error::usage(format!(
            "{what} '{t}': '{port}' is not a port (0-65535); IPv6 addresses go in brackets: [fd00::1]:{DEFAULT_PORT}"
        )));
    }
    if host.is_empty() {
        return Err(Error::usage(format!(
            "{what} '{t}' has no host; write it as HOST:PORT"
        )));
    }
    let lookup = format!("{host}:{port}")
        .to_socket_addrs()
        .or_else(|_| (host, port.parse::<u16>().unwrap_or(0)).to_socket_addrs());
    match lookup {
        Ok(mut addrs) => addrs.next().ok_or_else(|| {
            Error::usage(format!(
                "{what} '{t}': the name has no address; check the host name"
            ))
        }),
        Err(e) => Err(Error::usage(format!(
            "cannot resolve {what} '{t}' ({e}); check the host name, or give an address such as 10.0.0.1:{DEFAULT_PORT}"
        ))),
    }
}

/// Parse a packet rate: `1000/s`, `10k/s`, `1000`, `2kHz`. Returns packets per second.
pub fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let body = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("Hz"))
        .unwrap_or(t);
    let (num, scale) = match body.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => (body, 1.0),
    };
    let v = crate::units::parse_decimal(num)
        .ok_or_else(|| format!("--rate '{t}' is not a rate; write it as 1000/s or 10k/s"))?;
    let rate = v * scale;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(format!("--rate '{t}' must be above zero; give e.g. 1000/s"));
    }
    if rate < 1.0 {
        return Err(format!(
            "--rate '{t}' is below 1/s (a period of at most 1s); give e.g. 1000/s"
        ));
    }
    if rate > 1e6 {
        return Err(format!(
            "--rate '{t}' is above 1000000/s (a 1us period); lower it"
        ));
    }
    Ok(rate)
}

/// Parse a byte rate: `4MB/s`, `500kB/s`, `1MiB/s`, `1000B/s` (`/s` optional),
/// or `max` (as fast as the socket takes it: `None`).
pub fn parse_byte_rate(text: &str) -> std::result::Result<Option<u64>, String> {
    let t = text.trim();
    if t == "max" {
        return Ok(None);
    }
    let body = t.strip_suffix("/s").unwrap_or(t);
    let (num, unit) = crate::units::split_unit(body);
    let scale = match unit {
        "B" | "" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        _ => {
            return Err(format!(
                "--bulk '{t}': unknown unit '{unit}'; use B, kB, MB, GB, KiB, MiB or GiB per second, e.g. 4MB/s"
            ))
        }
    };
    let v = crate::units::parse_decimal(num)
        .ok_or_else(|| format!("--bulk '{t}' is not a rate; write it as 4MB/s or max"))?;
    let r = v * scale;
    if !r.is_finite() || r < 1.0 {
        return Err(format!(
            "--bulk '{t}' must be at least 1 byte per second; give e.g. 4MB/s"
        ));
    }
    if r > 1e12 {
        return Err(format!("--bulk '{t}' is too large"));
    }
    Ok(Some(r.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{check_parses, check_refuses};

    #[test]
    fn rates() {
        check_parses(
            parse_rate,
            &[
                ("1000/s", 1000.0),
                ("10k/s", 10_000.0),
                ("250", 250.0),
                ("2kHz", 2000.0),
            ],
        );
        check_refuses(
            parse_rate,
            &["0/s", "-5/s", "fast", "5M/s", "2000000/s", "0.5/s"],
        );
        assert!(parse_rate("0").unwrap_err().contains("above zero"));
        assert!(parse_rate("0.5/s").unwrap_err().contains("below 1/s"));
    }

    #[test]
    fn byte_rates() {
        check_parses(
            parse_byte_rate,
            &[
                ("4MB/s", Some(4_000_000)),
                ("500kB/s", Some(500_000)),
                ("1MiB/s", Some(1_048_576)),
                ("1.5MB", Some(1_500_000)),
                ("1000", Some(1000)),
                ("max", None),
            ],
        );
        check_refuses(parse_byte_rate, &["0MB/s", "lots"]);
        assert!(parse_byte_rate("4Mb/s").unwrap_err().contains("unit"));
    }

    #[test]
    fn addresses() {
        assert_eq!(
            resolve("10.0.0.1:7357", "x").unwrap(),
            "10.0.0.1:7357".parse().unwrap()
        );
        assert_eq!(
            resolve("[fd00::1]:9", "x").unwrap(),
            "[fd00::1]:9".parse().unwrap()
        );
        assert_eq!(resolve("localhost:5", "x").unwrap().port(), 5);
        assert!(resolve("10.0.0.1", "x")
            .unwrap_err()
            .to_string()
            .contains("no port"));
        assert!(resolve("10.0.0.1:99999", "x")
            .unwrap_err()
            .to_string()
            .contains("not a port"));
        assert!(resolve(":80", "x").is_err());
        assert!(resolve("::1:80", "x")
            .unwrap_err()
            .to_string()
            .contains("brackets"));
    }
}
