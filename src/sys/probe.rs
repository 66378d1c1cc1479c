//! Harmless probes of what the system permits, for `rtlat check`.
//!
//! Every probe undoes what it did: the real-time probe runs in a short-lived
//! thread (scheduling is per thread), the memory probe locks and unlocks one
//! private page of its own.

use std::io;

use rustix::process::Resource;

use super::sched::{self, Sched};

/// `CAP_IPC_LOCK`: lock memory regardless of `RLIMIT_MEMLOCK`.
pub const CAP_IPC_LOCK: u32 = 14;
/// `CAP_SYS_NICE`: real-time policies and priorities regardless of `RLIMIT_RTPRIO`.
pub const CAP_SYS_NICE: u32 = 23;

/// Can a thread of this process switch itself to SCHED_FIFO (priority 1)?
pub fn can_use_rt_fifo() -> Result<(), io::Error> {
    can_use(Sched::Fifo(1))
}

/// Can a thread of this process switch itself to `policy`? The attempt
/// happens in a throwaway thread, so the caller's own scheduling is
/// untouched.
pub fn can_use(policy: Sched) -> Result<(), io::Error> {
    std::thread::Builder::new()
        .name("rtlat-probe".into())
        .spawn(move || sched::set_current(policy))?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the probe thread panicked")))
}

/// Can this process hold a DMA latency request (`/dev/cpu_dma_latency`
/// opened for writing; nothing is written)?
pub fn can_hold_dma_latency() -> Result<(), io::Error> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(super::pm::DEVICE)
        .map(drop)
}

/// Can this process lock memory? Locks and unlocks one private anonymous
/// page, which shares nothing with the rest of the process.
pub fn can_mlock() -> Result<(), io::Error> {
    let len = rustix::param::page_size();
    // SAFETY: a new private anonymous mapping; no existing memory is affected.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(super::last_error());
    }
    // SAFETY: `addr..addr+len` is the mapping created above.
    let locked = if unsafe { libc::mlock(addr, len) } == 0 {
        // SAFETY: the same range, locked just above.
        unsafe { libc::munlock(addr, len) };
        Ok(())
    } else {
        Err(super::last_error())
    };
    // SAFETY: unmaps only the mapping created above, which nothing else references.
    unsafe { libc::munmap(addr, len) };
    locked
}

/// Soft and hard limit of `resource`; `RLIM_INFINITY` is `u64::MAX`.
fn getrlimit(resource: Resource) -> Option<(u64, u64)> {
    let lim = rustix::process::getrlimit(resource);
    let widen = |v: Option<u64>| v.unwrap_or(u64::MAX);
    Some((widen(lim.current), widen(lim.maximum)))
}

/// Soft and hard `RLIMIT_RTPRIO` (highest real-time priority allowed without
/// `CAP_SYS_NICE`); `RLIM_INFINITY` is `u64::MAX`.
pub fn rlimit_rtprio() -> Option<(u64, u64)> {
    getrlimit(Resource::Rtprio)
}

/// Soft and hard `RLIMIT_MEMLOCK` in bytes (without `CAP_IPC_LOCK`);
/// `RLIM_INFINITY` is `u64::MAX`.
pub fn rlimit_memlock() -> Option<(u64, u64)> {
    getrlimit(Resource::Memlock)
}

/// Soft and hard `RLIMIT_STACK` in bytes (the main thread's stack, `ulimit
/// -s`); `RLIM_INFINITY` is `u64::MAX`.
pub fn rlimit_stack() -> Option<(u64, u64)> {
    getrlimit(Resource::Stack)
}

/// Does the calling thread hold capability `cap` in its effective set?
/// `None` when `/proc/self/status` cannot be read.
pub fn has_capability(cap: u32) -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let mask = u64::from_str_radix(hex, 16).ok()?;
    Some(cap < 64 && mask & (1u64 << cap) != 0)
}

/// The hypervisor's CPUID signature (leaf 0x4000_0000), named where known
/// (`KVM`, `Hyper-V`, `VMware`, `Xen`, `QEMU`, …); `None` when CPUID does not
/// report a hypervisor, and always on architectures without CPUID.
pub fn cpuid_hypervisor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // `__cpuid` is an unsafe fn on older toolchains and safe on newer ones.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU and only reads registers.
        let leaf1 = unsafe { __cpuid(1) };
        if leaf1.ecx & (1 << 31) == 0 {
            return None; // no hypervisor-present bit: leaf 0x4000_0000 is meaningless
        }
        #[allow(unused_unsafe)]
        // SAFETY: as above; the hypervisor bit makes leaf 0x4000_0000 meaningful.
        let hv = unsafe { __cpuid(0x4000_0000) };
        let mut sig = Vec::with_capacity(12);
        for reg in [hv.ebx, hv.ecx, hv.edx] {
            sig.extend_from_slice(&reg.to_le_bytes());
        }
        Some(hypervisor_name(&sig))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// A name for a 12-byte CPUID hypervisor signature.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn hypervisor_name(sig: &[u8]) -> String {
    const KNOWN: &[(&[u8], &str)] = &[
        (b"KVMKVMKVM", "KVM"),
        (b"Microsoft Hv", "Hyper-V"),
        (b"VMwareVMware", "VMware"),
        (b"XenVMMXenVMM", "Xen"),
        (b"TCGTCGTCGTCG", "QEMU"),
        (b"VBoxVBoxVBox", "VirtualBox"),
        (b"bhyve bhyve ", "bhyve"),
        (b" lrpepyh  vr", "Parallels"),
        (b"ACRNACRNACRN", "ACRN"),
        (b"QNXQVMBSQG", "QNX"),
    ];
    if let Some((_, name)) = KNOWN.iter().find(|(s, _)| sig.starts_with(s)) {
        return name.to_string();
    }
    let text: String = sig
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let text = text.trim();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        text.to_string()
    } else {
        "unknown hypervisor".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimits_are_readable() {
        let (soft, hard) = rlimit_memlock().expect("getrlimit(RLIMIT_MEMLOCK)");
        assert!(soft <= hard);
        let (soft, hard) = rlimit_rtprio().expect("getrlimit(RLIMIT_RTPRIO)");
        assert!(soft <= hard);
    }

    #[test]
    fn probes_do_not_panic_and_leave_the_caller_alone() {
        // SAFETY: sched_getscheduler has no memory-safety preconditions.
        let before = unsafe { libc::sched_getscheduler(0) };
        let _ = can_use_rt_fifo();
        let _ = can_mlock();
        // SAFETY: as above.
        let after = unsafe { libc::sched_getscheduler(0) };
        assert_eq!(before, after);
        assert!(has_capability(CAP_SYS_NICE).is_some());
        let _ = cpuid_hypervisor();
    }

    #[test]
    fn hypervisor_signatures() {
        assert_eq!(hypervisor_name(b"KVMKVMKVM\0\0\0"), "KVM");
        assert_eq!(hypervisor_name(b"Microsoft Hv"), "Hyper-V");
        assert_eq!(hypervisor_name(b"NewVisor\0\0\0\0"), "NewVisor");
        assert_eq!(hypervisor_name(b"\x01\x02garbage!!"), "unknown hypervisor");
    }
}
