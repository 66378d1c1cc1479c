//! `--backend gpio`: the Linux GPIO character device, uAPI v2 (`gpiocdev`).
//!
//! The watched line is requested as an input with edge detection on both
//! edges and kernel event timestamps (CLOCK_MONOTONIC unless `--event-clock`
//! says otherwise); the driven line as an output. Events are read in batches
//! into a buffer made before the run; `wait_edge` is one `ppoll` and one
//! `read`, `drive` one `ioctl`.

use super::{Edge, EdgeBackend};
use crate::bench::irq::config::{Bias as BiasCfg, EventClock as ClockCfg, IrqConfig};
use crate::error::{Error, Result};
use gpiocdev::line::{Bias, EdgeDetection, EdgeKind, EventClock, Value};
use gpiocdev::{Chip, Request};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Events read in one go (a burst is read whole, in order).
const BATCH: usize = 16;
/// Kernel event buffer per request: enough for bursts, reported when exceeded.
const KERNEL_BUFFER: u32 = 64;
const CONSUMER: &str = "rtlat";

/// A line on a chip, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineSpec {
    /// An offset, on a named chip or on `--chip`.
    Offset { chip: Option<String>, offset: u32 },
    /// A line name, looked up on `--chip` if given, else on every chip.
    Name(String),
}

impl LineSpec {
    pub fn parse(s: &str) -> LineSpec {
        if let Ok(offset) = s.parse::<u32>() {
            return LineSpec::Offset { chip: None, offset };
        }
        if let Some((chip, off)) = s.rsplit_once(':') {
            if let Ok(offset) = off.parse::<u32>() {
                if !chip.is_empty() {
                    return LineSpec::Offset {
                        chip: Some(chip.into()),
                        offset,
                    };
                }
            }
        }
        LineSpec::Name(s.into())
    }
}

/// `gpiochip0`, `0` or `/dev/gpiochip0` as a device path.
pub fn chip_path(s: &str) -> PathBuf {
    if s.starts_with('/') {
        PathBuf::from(s)
    } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        PathBuf::from(format!("/dev/gpiochip{s}"))
    } else {
        PathBuf::from("/dev").join(s)
    }
}

/// The errno inside a gpiocdev error, when it carries one.
fn errno_of(e: &gpiocdev::Error) -> Option<i32> {
    if let gpiocdev::Error::Os(n) = e {
        return Some(n.0);
    }
    // uAPI errors wrap the errno; their text ends with "(os error N)".
    let text = e.to_string();
    let at = text.rfind("(os error ")?;
    text[at + 10..].trim_end_matches(')').parse().ok()
}

/// Open a chip with errors that name the fix.
fn open_chip(path: &Path) -> Result<Chip> {
    // Plain open first: its io::Error tells missing from forbidden.
    if let Err(e) = std::fs::File::open(path) {
        return Err(match e.kind() {
            io::ErrorKind::NotFound => Error::env(format!(
                "no GPIO chip {}: list the chips with 'ls /dev/gpiochip*' (or gpiodetect) and fix --chip or the CHIP: of --in/--out",
                path.display()
            )),
            io::ErrorKind::PermissionDenied => Error::env(format!(
                "no permission to open {p}: run as root, or join the group that owns it (ls -l {p}; e.g. sudo usermod -aG gpio $USER, then log in again)",
                p = path.display()
            )),
            _ => Error::env(format!("cannot open {}: {e}", path.display())),
        });
    }
    Chip::from_path(path).map_err(|e| {
        Error::env(format!(
            "{} is not a usable GPIO chip ({e}): give a /dev/gpiochipN device",
            path.display()
        ))
    })
}

/// A line resolved to its chip and offset, checked to exist and be free.
#[derive(Debug)]
struct Resolved {
    chip: PathBuf,
    offset: u32,
    label: String,
}

/// Resolve `spec`; `chip` is `--chip` if given (offsets default to gpiochip0,
/// names are then searched on every chip).
fn resolve(spec: &str, chip: Option<&str>, what: &str) -> Result<Resolved> {
    let (chip_path, offset) = match LineSpec::parse(spec) {
        LineSpec::Offset { chip: on, offset } => (
            chip_path(on.as_deref().or(chip).unwrap_or("gpiochip0")),
            offset,
        ),
        LineSpec::Name(name) => {
            let found = match chip {
                None => gpiocdev::find_named_line(&name).map(|f| (f.chip, f.info.offset)),
                Some(c) => {
                    let p = chip_path(c);
                    open_chip(&p)?
                        .find_line_info(&name)
                        .map(|i| (p.clone(), i.offset))
                }
            };
            found.ok_or_else(|| {
                Error::env(format!(
                    "no GPIO line named '{name}' ({what}): list the lines with gpioinfo, or give CHIP:OFFSET"
                ))
            })?
        }
    };
    let chip = open_chip(&chip_path)?;
    let name = chip.name();
    let lines = chip
        .info()
        .map_err(|e| Error::env(format!("cannot read {}: {e}", chip_path.display())).because(e))?
        .num_lines;
    if offset >= lines {
        return Err(Error::env(format!(
            "line offset {offset} ({what}) is out of range: {name} has {lines} lines (0-{}); fix --in/--out or --chip",
            lines.saturating_sub(1)
        )));
    }
    let label = format!("{name}:{offset}");
    if let Ok(info) = chip.line_info(offset) {
        if info.used {
            return Err(busy(&label, what, &info.consumer));
        }
    }
    Ok(Resolved {
        chip: chip_path,
        offset,
        label,
    })
}

fn busy(label: &str, what: &str, consumer: &str) -> Error {
    let by = if consumer.is_empty() {
        "another user (the kernel or a process)".to_string()
    } else {
        format!("'{consumer}'")
    };
    Error::env(format!(
        "GPIO line {label} ({what}) is busy: already requested by {by}; stop that user (gpioinfo shows it) or choose another line"
    ))
}

/// A failed line request, explained.
fn request_error(e: &gpiocdev::Error, r: &Resolved, what: &str, cfg: &IrqConfig) -> Error {
    match errno_of(e) {
        Some(libc::EBUSY) => busy(&r.label, what, ""),
        Some(libc::EACCES) | Some(libc::EPERM) => Error::env(format!(
            "not permitted to request GPIO line {} ({e}): run as root or get access to {}",
            r.label,
            r.chip.display()
        )),
        Some(libc::ENXIO) => Error::env(format!(
            "GPIO line {} ({what}) cannot raise interrupts, so its edges cannot be watched: choose a line with interrupt support",
            r.label
        )),
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) if cfg.event_clock == ClockCfg::Hte => {
            Error::env(format!(
                "GPIO line {} has no hardware timestamp engine (HTE): drop --event-clock hte",
                r.label
            ))
        }
        _ => Error::env(format!("cannot request GPIO line {} ({what}): {e}", r.label)),
    }
}

/// A line for the kernel responder (`--reply-from` thread/kthread/irq):
/// its chip's label and offset, checked to exist and be free, and the line's
/// level now (read through a short input request, released again).
pub(crate) fn kernel_line(
    spec: &str,
    chip: Option<&str>,
    what: &str,
) -> Result<(String, u32, bool)> {
    let r = resolve(spec, chip, what)?;
    let info = open_chip(&r.chip)?
        .info()
        .map_err(|e| Error::env(format!("cannot read {}: {e}", r.chip.display())).because(e))?;
    let req = Request::builder()
        .on_chip(&r.chip)
        .with_consumer(CONSUMER)
        .with_line(r.offset)
        .as_input()
        .request()
        .map_err(|e| {
            Error::env(format!(
                "cannot request GPIO line {} ({what}): {e}",
                r.label
            ))
        })?;
    let high = req
        .value(r.offset)
        .map_err(|e| Error::env(format!("cannot read GPIO line {} ({what}): {e}", r.label)))?
        == Value::Active;
    Ok((info.label, r.offset, high))
}

pub struct GpioBackend {
    input: Request,
    output: Request,
    in_offset: u32,
    out_offset: u32,
    clock: libc::clockid_t,
    kernel_ts: bool,
    buf: Vec<u64>,
    words: usize,
    queued: usize,
    next: usize,
    read_at: u64,
}

impl GpioBackend {
    pub fn open(cfg: &IrqConfig) -> Result<Self> {
        let chip = cfg.chip.as_deref();
        let in_spec = cfg.in_line.as_deref().unwrap_or("");
        let out_spec = cfg.out_line.as_deref().unwrap_or("");
        let inp = resolve(in_spec, chip, "--in")?;
        let out = resolve(out_spec, chip, "--out")?;
        if inp.chip == out.chip && inp.offset == out.offset {
            return Err(Error::usage(format!(
                "--in and --out are the same line {}: wire an output to a different input",
                inp.label
            )));
        }
        let mut b = Request::builder();
        b.on_chip(&inp.chip)
            .with_consumer(CONSUMER)
            .with_kernel_event_buffer_size(KERNEL_BUFFER)
            .with_line(inp.offset)
            .as_input()
            .with_edge_detection(EdgeDetection::BothEdges)
            .with_event_clock(match cfg.event_clock {
                ClockCfg::Monotonic => EventClock::Monotonic,
                ClockCfg::Realtime => EventClock::Realtime,
                ClockCfg::Hte => EventClock::Hte,
            });
        if let Some(bias) = cfg.bias {
            b.with_bias(match bias {
                BiasCfg::PullUp => Bias::PullUp,
                BiasCfg::PullDown => Bias::PullDown,
                BiasCfg::Disabled => Bias::Disabled,
            });
        }
        if let Some(d) = cfg.debounce_ns {
            b.with_debounce_period(Duration::from_nanos(d));
        }
        let input = b
            .request()
            .map_err(|e| request_error(&e, &inp, "--in", cfg))?;
        let idle = cfg.measured().idle_high();
        let output = Request::builder()
            .on_chip(&out.chip)
            .with_consumer(CONSUMER)
            .with_line(out.offset)
            .as_output(Value::from(idle))
            .request()
            .map_err(|e| request_error(&e, &out, "--out", cfg))?;
        let words = input.edge_event_u64_size();
        Ok(GpioBackend {
            in_offset: inp.offset,
            out_offset: out.offset,
            clock: cfg.clock_id(),
            kernel_ts: true,
            buf: vec![0u64; words * BATCH],
            words,
            queued: 0,
            next: 0,
            read_at: 0,
            input,
            output,
        })
    }

    #[inline]
    fn decode(&self, i: usize) -> io::Result<Edge> {
        let raw = &self.buf[i * self.words..(i + 1) * self.words];
        let ev = self
            .input
            .edge_event_from_slice(raw)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Edge {
            rising: ev.kind == EdgeKind::Rising,
            kernel_ns: self.kernel_ts.then_some(ev.timestamp_ns),
            user_ns: self.read_at,
            seqno: Some(ev.line_seqno),
        })
    }
}

fn to_io(e: gpiocdev::Error) -> io::Error {
    match errno_of(&e) {
        Some(n) => io::Error::from_raw_os_error(n),
        None => io::Error::other(e.to_string()),
    }
}

impl EdgeBackend for GpioBackend {
    #[inline]
    fn drive(&mut self, high: bool) -> io::Result<()> {
        self.output
            .set_value(self.out_offset, Value::from(high))
            .map_err(to_io)
    }

    #[inline]
    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
        if self.next < self.queued {
            let e = self.decode(self.next)?;
            self.next += 1;
            return Ok(Some(e));
        }
        let now = crate::sys::clock::now_ns(self.clock);
        let wait = Duration::from_nanos(deadline_ns.saturating_sub(now));
        match self.input.wait_edge_event(wait) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if errno_of(&e) == Some(libc::EINTR) => return Ok(None),
            Err(e) => return Err(to_io(e)),
        }
        let n = self
            .input
            .read_edge_events_into_slice(&mut self.buf)
            .map_err(to_io)?;
        self.read_at = crate::sys::clock::now_ns(self.clock);
        self.queued = n / self.words;
        self.next = 1;
        if self.queued == 0 {
            return Ok(None);
        }
        self.decode(0).map(Some)
    }

    fn input_level(&mut self) -> io::Result<bool> {
        Ok(self.input.value(self.in_offset).map_err(to_io)? == Value::Active)
    }

    fn kernel_timestamps(&self) -> bool {
        self.kernel_ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_specs() {
        assert_eq!(
            LineSpec::parse("17"),
            LineSpec::Offset {
                chip: None,
                offset: 17
            }
        );
        assert_eq!(
            LineSpec::parse("gpiochip1:3"),
            LineSpec::Offset {
                chip: Some("gpiochip1".into()),
                offset: 3
            }
        );
        assert_eq!(
            LineSpec::parse("/dev/gpiochip2:0"),
            LineSpec::Offset {
                chip: Some("/dev/gpiochip2".into()),
                offset: 0
            }
        );
        assert_eq!(LineSpec::parse("GPIO17"), LineSpec::Name("GPIO17".into()));
        assert_eq!(LineSpec::parse("P9:x"), LineSpec::Name("P9:x".into()));
    }

    #[test]
    fn chip_paths() {
        assert_eq!(chip_path("0"), PathBuf::from("/dev/gpiochip0"));
        assert_eq!(chip_path("gpiochip3"), PathBuf::from("/dev/gpiochip3"));
        assert_eq!(chip_path("/dev/gpiochip1"), PathBuf::from("/dev/gpiochip1"));
    }

    #[test]
    fn a_missing_chip_is_an_environment_error_naming_the_fix() {
        let e = open_chip(Path::new("/dev/gpiochip-rtlat-none")).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::ENVIRONMENT);
        assert!(e.to_string().contains("ls /dev/gpiochip*"), "{e}");
    }
}
