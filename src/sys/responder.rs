//! `/dev/rtlat-responder`: the kernel-side GPIO responder of kmod/ (its
//! structures mirror kmod/rtlat_responder.h; keep both in step).

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The device the module creates.
pub const DEVICE: &str = "/dev/rtlat-responder";
/// The interface version this rtlat speaks (RTLAT_RESP_VERSION).
pub const VERSION: u32 = 2;
/// The longest section [`Responder::spin`] takes (RTLAT_RESP_SPIN_MAX_NS).
pub const SPIN_MAX_NS: u64 = 20_000_000;
const SPIN_IRQS_OFF: u32 = 0x1;
const NAME_LEN: usize = 64;
const REASON_LEN: usize = 128;

/// Where the kernel issues the reply (RTLAT_RESP_MODE_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponderMode {
    Thread = 1,
    Kthread = 2,
    Irq = 3,
}

/// A line by chip label and offset (`chip` non-empty) or by line name.
#[repr(C)]
#[derive(Clone, Copy)]
struct LineRaw {
    chip: [u8; NAME_LEN],
    name: [u8; NAME_LEN],
    offset: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ConfigRaw {
    input: LineRaw,
    output: LineRaw,
    mode: u32,
    priority: u32,
    flags: u32,
    reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct InfoRaw {
    seen: u64,
    answered: u64,
    coalesced: u64,
    dropped: u64,
    version: u32,
    preempt_rt: u32,
    running: u32,
    mode: u32,
    reason: [u8; REASON_LEN],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SpinRaw {
    ns: u64,
    flags: u32,
    reserved: u32,
}

/// One answered edge (struct rtlat_resp_record).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// 1, 2, … per edge that entered the handler.
    pub seq: u64,
    /// CLOCK_MONOTONIC at handler entry.
    pub edge_ns: u64,
    /// The reply context began (the handler itself in mode irq).
    pub start_ns: u64,
    /// The output set call returned.
    pub reply_ns: u64,
    pub level: u32,
    pub reserved: u32,
}

/// The module's counters and state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub seen: u64,
    pub answered: u64,
    pub coalesced: u64,
    pub dropped: u64,
    pub version: u32,
    pub preempt_rt: bool,
    pub running: bool,
    /// Why the last start was refused ("" if it was not).
    pub reason: String,
}

/// A line for the module: chip label and offset, or a line name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpioLine {
    Label { label: String, offset: u32 },
    Name(String),
}

/// The request directions and where they sit, as the kernel's _IOC encodes
/// them: <asm-generic/ioctl.h> (x86, arm, arm64, riscv) puts two direction
/// bits at 30 (none 0, read 2, write 1); powerpc, mips and sparc
/// (arch/*/include/uapi/asm/ioctl.h) three at 29 (none 1, read 2, write 4).
/// True where the kernel encodes ioctl requests as powerpc, mips and sparc do.
const IOC_THREE_DIR_BITS: bool = cfg!(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
));
/// None, read, write, and the shift of the direction bits.
const IOC_DIRS: (u32, u32, u32, u32) = if IOC_THREE_DIR_BITS {
    (1, 2, 4, 29)
} else {
    (0, 2, 1, 30)
};

/// _IOC(dir, RTLAT_RESP_IOC_MAGIC, nr, size).
const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << IOC_DIRS.3) | ((size as u32) << 16) | (0xB7 << 8) | nr
}
const IOC_INFO: u32 = ioc(IOC_DIRS.1, 0, std::mem::size_of::<InfoRaw>());
const IOC_START: u32 = ioc(IOC_DIRS.2, 1, std::mem::size_of::<ConfigRaw>());
const IOC_STOP: u32 = ioc(IOC_DIRS.0, 2, 0);
const IOC_SPIN: u32 = ioc(IOC_DIRS.2, 3, std::mem::size_of::<SpinRaw>());

fn copy_name(dst: &mut [u8; NAME_LEN], s: &str) -> io::Result<()> {
    if s.len() >= NAME_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{s}' is longer than {} bytes", NAME_LEN - 1),
        ));
    }
    dst[..s.len()].copy_from_slice(s.as_bytes());
    Ok(())
}

fn line_raw(l: &GpioLine) -> io::Result<LineRaw> {
    let mut r = LineRaw {
        chip: [0; NAME_LEN],
        name: [0; NAME_LEN],
        offset: 0,
    };
    match l {
        GpioLine::Label { label, offset } => {
            copy_name(&mut r.chip, label)?;
            r.offset = *offset;
        }
        GpioLine::Name(n) => copy_name(&mut r.name, n)?,
    }
    Ok(r)
}

/// The open responder device (exclusive: one opener at a time). Dropping it
/// stops the responder and frees its lines.
#[derive(Debug)]
pub struct Responder {
    file: File,
}

impl Responder {
    pub fn open(path: &Path) -> io::Result<Responder> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        Ok(Responder { file })
    }

    pub fn info(&self) -> io::Result<Info> {
        // SAFETY: InfoRaw is plain integers and bytes: all-zero is a valid value.
        let mut raw: InfoRaw = unsafe { std::mem::zeroed() };
        // SAFETY: RTLAT_RESP_IOC_INFO writes one struct rtlat_resp_info, which `raw`
        // is (repr(C), same layout and size, encoded in the request number).
        if unsafe { libc::ioctl(self.file.as_raw_fd(), IOC_INFO as _, &mut raw) } != 0 {
            return Err(super::last_error());
        }
        let end = raw
            .reason
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(REASON_LEN);
        Ok(Info {
            seen: raw.seen,
            answered: raw.answered,
            coalesced: raw.coalesced,
            dropped: raw.dropped,
            version: raw.version,
            preempt_rt: raw.preempt_rt != 0,
            running: raw.running != 0,
            reason: String::from_utf8_lossy(&raw.reason[..end]).into_owned(),
        })
    }

    /// Take the lines and start answering edges from `mode`; `priority` is
    /// the kernel thread's SCHED_FIFO priority (mode kthread).
    pub fn start(
        &self,
        input: &GpioLine,
        output: &GpioLine,
        mode: ResponderMode,
        priority: u32,
    ) -> io::Result<()> {
        let raw = ConfigRaw {
            input: line_raw(input)?,
            output: line_raw(output)?,
            mode: mode as u32,
            priority,
            flags: 0,
            reserved: 0,
        };
        // SAFETY: RTLAT_RESP_IOC_START reads one struct rtlat_resp_config, which `raw`
        // is (repr(C), same layout and size, encoded in the request number).
        if unsafe { libc::ioctl(self.file.as_raw_fd(), IOC_START as _, &raw) } != 0 {
            return Err(super::last_error());
        }
        Ok(())
    }

    pub fn stop(&self) -> io::Result<()> {
        // SAFETY: RTLAT_RESP_IOC_STOP takes no argument and touches no memory of ours.
        if unsafe { libc::ioctl(self.file.as_raw_fd(), IOC_STOP as _, 0) } != 0 {
            return Err(super::last_error());
        }
        Ok(())
    }

    /// Busy-wait `ns` (at most [`SPIN_MAX_NS`]) in the kernel on the calling
    /// CPU with preemption off, and interrupts too if `irqs_off`.
    pub fn spin(&self, ns: u64, irqs_off: bool) -> io::Result<()> {
        let raw = SpinRaw {
            ns,
            flags: if irqs_off { SPIN_IRQS_OFF } else { 0 },
            reserved: 0,
        };
        // SAFETY: RTLAT_RESP_IOC_SPIN reads one struct rtlat_resp_spin, which `raw`
        // is (repr(C), same layout and size, encoded in the request number).
        if unsafe { libc::ioctl(self.file.as_raw_fd(), IOC_SPIN as _, &raw) } != 0 {
            return Err(super::last_error());
        }
        Ok(())
    }

    /// Wait up to `timeout_ns` for a record; true when one is ready.
    #[inline]
    pub fn wait_readable(&self, timeout_ns: u64) -> io::Result<bool> {
        Ok(super::poll_readable(self.file.as_raw_fd(), timeout_ns)? & libc::POLLIN != 0)
    }

    /// Records of answered edges into `buf`; 0 when none is ready (never blocks).
    pub fn read_records(&mut self, buf: &mut [Record]) -> io::Result<usize> {
        let size = std::mem::size_of::<Record>();
        // SAFETY: Record is repr(C) plain integers without padding: any bytes are a
        // valid value, and the slice covers exactly the records' memory.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                buf.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(buf),
            )
        };
        match self.file.read(bytes) {
            Ok(n) => Ok(n / size),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// What to run to get the module, for the error of a missing device.
#[cfg(feature = "host-tools")]
pub const BUILD_HINT: &str = "install it with DKMS from rtlat's source tree (dkms add kmod && dkms install rtlat-responder/1), or build it with scripts/kmod-build.sh and insmod the .ko it prints (docs/irq.md)";

/// The board build runs where rtlat's source (kmod/) is not: the module is
/// built elsewhere against the board's kernel.
#[cfg(not(feature = "host-tools"))]
pub const BUILD_HINT: &str = "build it from rtlat's source against this board's kernel (scripts/kmod-build.sh --kdir DIR, docs/irq.md), copy the .ko here and insmod it";

/// The module's name for modprobe.
const MODULE: &str = "rtlat_responder";

/// Load an installed module (DKMS, `make install`) with modprobe and wait
/// up to 2 s for its device; false when that did not work.
fn load_module(path: &Path) -> bool {
    let loaded = std::process::Command::new("modprobe")
        .args(["-q", MODULE])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !loaded {
        return false;
    }
    for _ in 0..200 {
        if path.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// Open the responder device for `what` (loading the module with modprobe
/// first if it is installed but not loaded), with errors that name the fix.
pub fn open_device(path: &Path, what: &str) -> Result<Responder> {
    let opened = match Responder::open(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && load_module(path) => Responder::open(path),
        r => r,
    };
    let dev = opened.map_err(|e| {
        let msg = match e.kind() {
            io::ErrorKind::NotFound => format!(
                "no {} for {what}: the rtlat-responder kernel module is not loaded (and 'modprobe {MODULE}' did not load it); {BUILD_HINT}",
                path.display()
            ),
            io::ErrorKind::PermissionDenied => {
                format!("no permission to open {}: run as root", path.display())
            }
            _ if e.raw_os_error() == Some(libc::EBUSY) => format!(
                "{} is in use (another rtlat runs a kernel reply): stop it first",
                path.display()
            ),
            _ => format!("cannot open {}: {e}", path.display()),
        };
        Error::env(msg).because(e)
    })?;
    let info = dev
        .info()
        .map_err(|e| Error::env(format!("{} does not answer: {e}", path.display())).because(e))?;
    if info.version != VERSION {
        return Err(Error::env(format!(
            "{} speaks version {} of the responder interface, this rtlat {}: build and load the module of this rtlat (kmod/)",
            path.display(),
            info.version,
            VERSION
        )));
    }
    Ok(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module's header, parsed: what the Rust side must match.
    const HEADER: &str = include_str!("../../kmod/rtlat_responder.h");

    /// `#define NAME VALUE` of the header, as a number.
    fn define(name: &str) -> u64 {
        let value = HEADER
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("no #define {name} in the header"));
        let value = value.split_whitespace().next().expect("a value");
        match value
            .strip_prefix("0x")
            .or_else(|| value.strip_prefix("0X"))
        {
            Some(hex) => u64::from_str_radix(hex, 16).expect("hex"),
            None => value.parse().expect("a number"),
        }
    }

    /// The fields of `struct NAME` as (name, size, alignment), in order, with
    /// the C types of the header: __u64, __u32, char arrays, nested structs.
    fn fields(name: &str) -> Vec<(String, usize, usize)> {
        let start = HEADER
            .find(&format!("struct {name} {{"))
            .unwrap_or_else(|| panic!("no struct {name} in the header"));
        let body = &HEADER[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("};").unwrap()];
        body.lines()
            .map(|l| l.split("/*").next().unwrap().trim())
            .filter(|l| !l.is_empty())
            .map(|l| {
                let decl = l.trim_end_matches(';');
                let (ty, field) = decl.rsplit_once(' ').expect("type and name");
                let (field, count) = match field.split_once('[') {
                    Some((f, n)) => (f, define(n.trim_end_matches(']')) as usize),
                    None => (field, 1),
                };
                let (size, align) = match ty {
                    "__u64" => (8, 8),
                    "__u32" => (4, 4),
                    "char" => (1, 1),
                    _ => {
                        let inner = ty.strip_prefix("struct ").expect("a struct");
                        (c_size(inner), c_align(inner))
                    }
                };
                (field.to_string(), size * count, align)
            })
            .collect()
    }

    fn c_align(name: &str) -> usize {
        fields(name).iter().map(|f| f.2).max().unwrap_or(1)
    }

    /// Offsets of each field of `struct NAME` and its size, by C's rules.
    fn c_layout(name: &str) -> (Vec<(String, usize)>, usize) {
        let mut at = 0usize;
        let mut out = Vec::new();
        for (field, size, align) in fields(name) {
            at = at.next_multiple_of(align);
            out.push((field, at));
            at += size;
        }
        (out, at.next_multiple_of(c_align(name)))
    }

    fn c_size(name: &str) -> usize {
        c_layout(name).1
    }

    fn c_offsets(name: &str) -> Vec<usize> {
        c_layout(name).0.into_iter().map(|f| f.1).collect()
    }

    #[test]
    fn layouts_match_the_c_header() {
        use std::mem::{offset_of, size_of};
        assert_eq!(VERSION as u64, define("RTLAT_RESP_VERSION"));
        assert_eq!(NAME_LEN as u64, define("RTLAT_RESP_NAME_LEN"));
        assert_eq!(REASON_LEN as u64, define("RTLAT_RESP_REASON_LEN"));
        assert_eq!(SPIN_MAX_NS, define("RTLAT_RESP_SPIN_MAX_NS"));
        assert_eq!(SPIN_IRQS_OFF as u64, define("RTLAT_RESP_SPIN_IRQS_OFF"));
        for (mode, name) in [
            (ResponderMode::Thread, "THREAD"),
            (ResponderMode::Kthread, "KTHREAD"),
            (ResponderMode::Irq, "IRQ"),
        ] {
            assert_eq!(mode as u64, define(&format!("RTLAT_RESP_MODE_{name}")));
        }

        // Each struct: its size and every field's offset, in the header's order.
        macro_rules! same_layout {
            ($t:ty, $c:literal, $($f:ident),+) => {
                assert_eq!(size_of::<$t>(), c_size($c), "size of {}", $c);
                assert_eq!(vec![$(offset_of!($t, $f)),+], c_offsets($c), "offsets of {}", $c);
            };
        }
        same_layout!(LineRaw, "rtlat_resp_line", chip, name, offset);
        same_layout!(
            ConfigRaw,
            "rtlat_resp_config",
            input,
            output,
            mode,
            priority,
            flags,
            reserved
        );
        same_layout!(
            InfoRaw,
            "rtlat_resp_info",
            seen,
            answered,
            coalesced,
            dropped,
            version,
            preempt_rt,
            running,
            mode,
            reason
        );
        same_layout!(SpinRaw, "rtlat_resp_spin", ns, flags, reserved);
        same_layout!(
            Record,
            "rtlat_resp_record",
            seq,
            edge_ns,
            start_ns,
            reply_ns,
            level,
            reserved
        );

        // The request numbers, from the header's _IOR/_IOW/_IO lines and the
        // kernel's encoding: direction << 30 | size << 16 | magic << 8 | nr
        // (asm-generic: none 0, read 2, write 1), or on powerpc, mips and
        // sparc direction << 29 with none 1, read 2, write 4.
        let (none, read, write, shift) = if IOC_THREE_DIR_BITS {
            (1u32, 2u32, 4u32, 29)
        } else {
            (0, 2, 1, 30)
        };
        let magic = define("RTLAT_RESP_IOC_MAGIC") as u32;
        let request = |name: &str| -> u32 {
            let line = HEADER
                .lines()
                .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("no {name}"));
            let (kind, args) = line.split_once('(').expect("a macro");
            let args: Vec<&str> = args.trim_end_matches(')').split(", ").collect();
            let nr: u32 = args[1].parse().expect("nr");
            let (dir, size) = match kind {
                "_IO" => (none, 0),
                "_IOR" => (read, c_size(args[2].trim_start_matches("struct "))),
                "_IOW" => (write, c_size(args[2].trim_start_matches("struct "))),
                other => panic!("{other}"),
            };
            (dir << shift) | ((size as u32) << 16) | (magic << 8) | nr
        };
        assert_eq!(IOC_INFO, request("RTLAT_RESP_IOC_INFO"));
        assert_eq!(IOC_START, request("RTLAT_RESP_IOC_START"));
        assert_eq!(IOC_STOP, request("RTLAT_RESP_IOC_STOP"));
        assert_eq!(IOC_SPIN, request("RTLAT_RESP_IOC_SPIN"));
    }

    #[test]
    fn names_too_long_for_the_module_are_refused() {
        assert!(line_raw(&GpioLine::Name("x".repeat(64))).is_err());
        let r = line_raw(&GpioLine::Label {
            label: "gpio-sim.0-node0".into(),
            offset: 3,
        })
        .unwrap();
        assert_eq!(
            (&r.chip[..16], r.offset, r.name[0]),
            (&b"gpio-sim.0-node0"[..], 3, 0)
        );
    }
}
