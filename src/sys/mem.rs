//! Memory locking and stack prefaulting.

use std::io;

/// Lock all current and future pages of the process into RAM as they are
/// used: pages present now are locked at once, others when first touched
/// (`MCL_ONFAULT`, Linux 4.4), so code and stack the run never touches (most
/// of the binary's text, unused stack) take no memory. The heap, where every
/// buffer of the run was allocated before this call, is populated for
/// writing (as `MCL_CURRENT` alone does), so that no page of it faults later,
/// not even one shared copy-on-write with a process forked before. The
/// measuring threads prefault their stacks. On a kernel without
/// `MCL_ONFAULT`, everything mapped is locked.
pub fn lock_all() -> io::Result<()> {
    use rustix::mm::MlockAllFlags;
    let all = MlockAllFlags::CURRENT | MlockAllFlags::FUTURE;
    match rustix::mm::mlockall(all | MlockAllFlags::ONFAULT) {
        Err(rustix::io::Errno::INVAL) => Ok(rustix::mm::mlockall(all)?),
        Err(e) => Err(e.into()),
        Ok(()) => {
            populate_heap();
            Ok(())
        }
    }
}

/// Fault in every page of the `[heap]` mapping for writing (best effort:
/// `MADV_POPULATE_WRITE` needs Linux 5.14).
fn populate_heap() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let Some(range) = maps
        .lines()
        .find(|l| l.ends_with("[heap]"))
        .and_then(|l| l.split_whitespace().next())
    else {
        return;
    };
    let Some((Ok(start), Ok(end))) = range
        .split_once('-')
        .map(|(a, b)| (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)))
    else {
        return;
    };
    // SAFETY: MADV_POPULATE_WRITE faults in the pages of an existing,
    // writable private mapping (the heap, as /proc/self/maps lists it) as a
    // write would, without changing their contents.
    let _ = unsafe {
        rustix::mm::madvise(
            start as *mut std::ffi::c_void,
            end.saturating_sub(start),
            rustix::mm::Advice::LinuxPopulateWrite,
        )
    };
}

/// Undo [`lock_all`].
pub fn unlock_all() {
    let _ = rustix::mm::munlockall();
}

/// Touch `bytes` of the calling thread's stack so its pages are present
/// (and, under mlockall, locked) before the first sample.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    fn touch(depth: usize) {
        let mut page = [0u8; CHUNK];
        // Keep the compiler from eliding the page or the recursion.
        std::hint::black_box(&mut page);
        if depth > 1 {
            touch(depth - 1);
        }
        std::hint::black_box(&page);
    }
    touch(bytes.div_ceil(CHUNK).max(1));
}

/// Pre-fault a heap reserve of `bytes` for the non-real-time reporter and keep
/// it: with trimming and mmap-backed allocations off, memory freed by the
/// reporter returns to this reserve instead of the kernel, so under mlockall
/// the resident size stays flat for the whole run (the technique the RT wiki
/// recommends for glibc). A no-op on other C libraries.
pub fn reserve_heap(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator tunables.
        // No top pad either: the heap grows by what the reserve asks, not by
        // 128 kB more that lock_all would populate and hold for nothing.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
            libc::mallopt(libc::M_MMAP_MAX, 0);
            libc::mallopt(libc::M_TOP_PAD, 0);
        }
        let mut reserve = vec![0u8; bytes];
        // Write every page so it is resident (calloc may hand out untouched zero pages).
        for i in (0..bytes).step_by(4096) {
            reserve[i] = 1;
        }
        std::hint::black_box(&mut reserve);
        drop(reserve);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Make room in `v` for `n` elements and write every slot of it once (with
/// `fill`, dropped again), keeping what `v` holds: the buffer is resident
/// from now on, so that filling it later neither reallocates nor faults in
/// new pages, and a long run's memory does not grow as it fills.
pub fn room_written<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
    let len = v.len();
    if n > len {
        v.reserve_exact(n - len);
        v.resize(n, fill);
        std::hint::black_box(&mut *v).truncate(len);
    }
}

/// The process's anonymous resident memory, in kB (for tests that a buffer
/// is resident from when it is made).
#[cfg(test)]
pub fn rss_anon_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("RssAnon")
}
