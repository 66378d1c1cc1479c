//! Memory locking and stack prefaulting.

use std::io;

/// Lock all current and future pages of the process into RAM.
pub fn lock_all() -> io::Result<()> {
    // SAFETY: mlockall has no memory-safety preconditions.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// Undo [`lock_all`].
pub fn unlock_all() {
    // SAFETY: munlockall has no memory-safety preconditions.
    unsafe { libc::munlockall() };
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
