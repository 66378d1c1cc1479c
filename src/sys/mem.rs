//! Memory locking and stack prefaulting.

use std::io;

/// Lock all current and future pages of the process into RAM.
pub fn lock_all() -> io::Result<()> {
    use rustix::mm::MlockAllFlags;
    Ok(rustix::mm::mlockall(
        MlockAllFlags::CURRENT | MlockAllFlags::FUTURE,
    )?)
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
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
            libc::mallopt(libc::M_MMAP_MAX, 0);
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
