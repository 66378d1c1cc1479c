//! Anonymous memory mappings: [`SharedWords`], `u32` words shared with the
//! children forked after they exist (the switch protocol, wake lines, the
//! hackbench receivers' counters), and [`PrivateBuffer`], memory children do
//! not inherit. Both are one [`Mapping`] of whole pages.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;

const PAGE: usize = 4096;

/// An anonymous, zero-filled mapping of whole pages, unmapped when dropped.
struct Mapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

impl Mapping {
    /// `bytes` rounded up to whole pages; `sharing` is MAP_SHARED or MAP_PRIVATE.
    fn new(bytes: usize, sharing: libc::c_int) -> io::Result<Mapping> {
        let len = bytes.max(1).next_multiple_of(PAGE);
        // SAFETY: an anonymous mapping with no address hint: no existing memory
        // is affected; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                sharing | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(super::last_error());
        }
        let ptr = NonNull::new(p).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe the mapping this value created; no borrow outlives it.
        unsafe { libc::munmap(self.ptr.as_ptr(), self.len) };
    }
}

// SAFETY: the mapping is plain memory owned by this value; shared access goes
// through atomics or kernel objects made for concurrent use (futex words,
// sem_t), exclusive access through `&mut` (PrivateBuffer).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// Zero-initialised `u32` words in a `MAP_SHARED` mapping: visible to the
/// children forked after it exists, and page aligned, so the memory also fits
/// a kernel object such as a `sem_t` (see [`as_ptr`](SharedWords::as_ptr)).
pub struct SharedWords {
    map: Mapping,
    n: usize,
}

impl SharedWords {
    pub fn new(n: usize) -> io::Result<SharedWords> {
        Ok(SharedWords {
            map: Mapping::new(n * std::mem::size_of::<AtomicU32>(), libc::MAP_SHARED)?,
            n,
        })
    }

    /// Enough words for a `T` (placed at [`as_ptr`](SharedWords::as_ptr)).
    pub fn sized_for<T>() -> io::Result<SharedWords> {
        Self::new(std::mem::size_of::<T>().div_ceil(std::mem::size_of::<AtomicU32>()))
    }

    /// The words.
    #[inline(always)]
    pub fn words(&self) -> &[AtomicU32] {
        // SAFETY: the mapping holds at least `n` zero-initialised, page-aligned
        // u32s and lives as long as `self`; AtomicU32 has the layout of u32 and
        // zero is a valid value.
        unsafe { std::slice::from_raw_parts(self.map.ptr.as_ptr() as *const AtomicU32, self.n) }
    }

    /// Word `i` (panics when out of range).
    #[inline(always)]
    pub fn get(&self, i: usize) -> &AtomicU32 {
        &self.words()[i]
    }

    /// The start of the (page-aligned) memory, for a kernel object kept in it.
    #[inline(always)]
    pub fn as_ptr<T>(&self) -> *mut T {
        self.map.ptr.as_ptr().cast()
    }
}

/// A private, zeroed buffer of `u64` words that forked children do not inherit
/// (MADV_DONTFORK: a fork neither copies its page tables nor makes it
/// copy-on-write) and that is kept on small pages (MADV_NOHUGEPAGE), so
/// walking it misses in the TLB as a working set of that size should.
pub struct PrivateBuffer {
    map: Mapping,
}

impl PrivateBuffer {
    pub fn new(bytes: usize) -> io::Result<Self> {
        let map = Mapping::new(bytes.max(8), libc::MAP_PRIVATE)?;
        // SAFETY: advice on the mapping just created; failure only loses the advice.
        unsafe {
            libc::madvise(map.ptr.as_ptr(), map.len, libc::MADV_DONTFORK);
            libc::madvise(map.ptr.as_ptr(), map.len, libc::MADV_NOHUGEPAGE);
        }
        Ok(PrivateBuffer { map })
    }

    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: the mapping holds `len / 8` zero-initialised, page-aligned u64s,
        // is exclusively borrowed through `self` and lives as long as it.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr.as_ptr().cast(), self.map.len / 8) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn shared_words_start_at_zero() {
        let w = SharedWords::new(16).expect("mmap");
        assert_eq!(w.words().len(), 16);
        assert!(w.words().iter().all(|x| x.load(Ordering::Relaxed) == 0));
        w.get(15).store(7, Ordering::Relaxed);
        assert_eq!(w.words()[15].load(Ordering::Relaxed), 7);
        assert!(
            SharedWords::sized_for::<libc::sem_t>()
                .expect("mmap")
                .words()
                .len()
                >= std::mem::size_of::<libc::sem_t>() / 4
        );
    }

    #[test]
    fn private_buffer_is_zeroed_and_writable() {
        let mut b = PrivateBuffer::new(1 << 20).unwrap();
        let w = b.words();
        assert_eq!(w.len(), (1 << 20) / 8);
        assert!(w.iter().all(|&x| x == 0));
        w[w.len() - 1] = 5;
        assert_eq!(w[w.len() - 1], 5);
    }
}
