//! The text lines of a tracefs `trace_pipe` that the timer benchmark reads:
//! timerlat samples, hrtimer events and lost-event notices.

/// Which timerlat context a sample was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ctx {
    Irq,
    Thread,
    User,
}

impl Ctx {
    /// The context's name in series names and reports.
    pub fn name(self) -> &'static str {
        match self {
            Ctx::Irq => "irq",
            Ctx::Thread => "thread",
            Ctx::User => "user",
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceLine<'a> {
    /// `#ID context irq|thread|user timer_latency NS ns`
    Timerlat {
        cpu: usize,
        ts_ns: u64,
        id: u64,
        ctx: Ctx,
        latency_ns: u64,
    },
    /// `hrtimer_start: hrtimer=H function=F expires=E …` by task `pid`.
    HrtimerStart {
        cpu: usize,
        pid: u32,
        ts_ns: u64,
        hrtimer: &'a str,
        function: &'a str,
        expires_ns: u64,
    },
    /// `hrtimer_expire_entry: hrtimer=H now=N function=F`
    HrtimerExpire {
        cpu: usize,
        ts_ns: u64,
        hrtimer: &'a str,
        now_ns: u64,
    },
    /// `CPU:N [LOST M EVENTS]`
    Lost { cpu: usize, events: u64 },
}

/// `123.456789` (seconds) as ns.
pub fn seconds_ns(t: &str) -> Option<u64> {
    let (s, frac) = t.split_once('.').unwrap_or((t, ""));
    let s: u64 = s.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    Some(s * 1_000_000_000 + f * 10u64.pow(9 - frac.len() as u32))
}

/// `key=value` among the whitespace-separated words of `text`.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// The event header of a `trace_pipe` line, `COMM-PID [CPU] FLAGS TS: BODY`:
/// (CPU, PID, timestamp in ns, body).
pub fn header(line: &str) -> Option<(usize, u32, u64, &str)> {
    // `COMM-PID [CPU] FLAGS TS: BODY`; COMM may hold spaces, so find `[CPU]`
    // as the first bracketed number and take the task just before it.
    let mut cpu = None;
    let mut at = 0;
    let bytes = line.as_bytes();
    while let Some(open) = line[at..].find('[') {
        let o = at + open;
        let close = line[o..].find(']').map(|c| o + c)?;
        let inner = &line[o + 1..close];
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
            cpu = Some((o, close, inner.parse::<usize>().ok()?));
            break;
        }
        at = close + 1;
        if at >= bytes.len() {
            return None;
        }
    }
    let (open, close, cpu) = cpu?;
    let task = line[..open].trim_end();
    let pid: u32 = task
        .rsplit_once('-')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0);
    let after = &line[close + 1..];
    let colon = after.find(": ")?;
    let ts_word = after[..colon].split_whitespace().last()?;
    let ts_ns = seconds_ns(ts_word)?;
    let body = after[colon + 2..].trim_start();
    Some((cpu, pid, ts_ns, body))
}

/// Parse one line; `None` for anything else (other events, comments).
pub fn parse(line: &str) -> Option<TraceLine<'_>> {
    let line = line.trim_end();
    if let Some(rest) = line.trim_start().strip_prefix("CPU:") {
        // CPU:0 [LOST 12 EVENTS]
        let (cpu, rest) = rest.split_once(' ')?;
        let n = rest.strip_prefix("[LOST ")?.split_whitespace().next()?;
        return Some(TraceLine::Lost {
            cpu: cpu.parse().ok()?,
            events: n.parse().ok()?,
        });
    }
    let (cpu, pid, ts_ns, body) = header(line)?;

    if let Some(r) = body.strip_prefix('#') {
        let mut w = r.split_whitespace();
        let id: u64 = w.next()?.parse().ok()?;
        if w.next()? != "context" {
            return None;
        }
        let ctx = match w.next()? {
            "irq" => Ctx::Irq,
            "thread" => Ctx::Thread,
            "user-ret" | "user" => Ctx::User,
            _ => return None,
        };
        if w.next()? != "timer_latency" {
            return None;
        }
        // Negative values (an early timer) count as 0.
        let v = w.next()?;
        let latency_ns = if v.starts_with('-') {
            0
        } else {
            v.parse().ok()?
        };
        return Some(TraceLine::Timerlat {
            cpu,
            ts_ns,
            id,
            ctx,
            latency_ns,
        });
    }
    if let Some(r) = body.strip_prefix("hrtimer_start: ") {
        return Some(TraceLine::HrtimerStart {
            cpu,
            pid,
            ts_ns,
            hrtimer: field(r, "hrtimer")?,
            function: field(r, "function")?,
            expires_ns: field(r, "expires")?.parse().ok()?,
        });
    }
    if let Some(r) = body.strip_prefix("hrtimer_expire_entry: ") {
        return Some(TraceLine::HrtimerExpire {
            cpu,
            ts_ns,
            hrtimer: field(r, "hrtimer")?,
            now_ns: field(r, "now")?.parse().ok()?,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timerlat_samples_parse_with_cpu_id_context_and_ns() {
        let irq = "          <idle>-0       [001] d.h1.   112.437710: #1     context    irq timer_latency    174070 ns";
        assert_eq!(
            parse(irq),
            Some(TraceLine::Timerlat {
                cpu: 1,
                ts_ns: 112_437_710_000,
                id: 1,
                ctx: Ctx::Irq,
                latency_ns: 174_070
            })
        );
        let thread = "     timerlat/1-213     [001] .....   112.439111: #1     context thread timer_latency   1555560 ns";
        assert!(matches!(
            parse(thread),
            Some(TraceLine::Timerlat {
                cpu: 1,
                id: 1,
                ctx: Ctx::Thread,
                latency_ns: 1_555_560,
                ..
            })
        ));
        // A task name with spaces and brackets before the CPU field.
        let odd =
            " my [x] task-77  [000] ..... 5.000000001: #12 context thread timer_latency 900 ns";
        assert!(matches!(
            parse(odd),
            Some(TraceLine::Timerlat {
                cpu: 0,
                id: 12,
                ts_ns: 5_000_000_001,
                ..
            })
        ));
    }

    #[test]
    fn hrtimer_events_and_lost_notices_parse() {
        let start = "     rtlat-cpu0-301     [000] d..2.   50.000100: hrtimer_start: hrtimer=00000000a1b2c3d4 function=hrtimer_wakeup expires=50001000000 softexpires=50001000000 mode=ABS|HARD";
        assert_eq!(
            parse(start),
            Some(TraceLine::HrtimerStart {
                cpu: 0,
                pid: 301,
                ts_ns: 50_000_100_000,
                hrtimer: "00000000a1b2c3d4",
                function: "hrtimer_wakeup",
                expires_ns: 50_001_000_000
            })
        );
        let exp = "          <idle>-0       [000] d.h1.   50.001020: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 now=50001019876 function=hrtimer_wakeup/0x0";
        assert_eq!(
            parse(exp),
            Some(TraceLine::HrtimerExpire {
                cpu: 0,
                ts_ns: 50_001_020_000,
                hrtimer: "00000000a1b2c3d4",
                now_ns: 50_001_019_876
            })
        );
        assert_eq!(
            parse("CPU:1 [LOST 37 EVENTS]"),
            Some(TraceLine::Lost { cpu: 1, events: 37 })
        );
        assert_eq!(parse("# tracer: timerlat"), None);
        assert_eq!(parse(""), None);
    }
}
