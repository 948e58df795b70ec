//! The backend's C heap, as glibc manages it.
//!
//! glibc gives the free top of its heap back to the kernel once it exceeds
//! the trim threshold (128 KB in a new process) and takes it back, page
//! faults included, on the next allocation that needs it. A rare page
//! read through the tenant-keys index builds a TID bitmap of about 140 KB
//! and frees it at the end of the call; when nothing else was allocated
//! above it, every call gave those pages back and faulted them in again
//! (4 `brk` calls a call, about 25 µs of a 0.2 ms page).
//!
//! glibc raises the threshold itself, to twice the size of the first
//! mapped block a process frees (up to 64 MB), so a backend that ever
//! sorted a megabyte keeps that much. [`settle`] lets it see one such
//! block when the library loads: one megabyte mapped and unmapped, never
//! touched. Nothing is configured (`mallopt` would turn glibc's own
//! adjustment off for the whole process); glibc goes on adjusting by its
//! own rule, and a backend keeps at most 2 MB of freed memory for reuse.

/// The block glibc sees freed: its threshold for mapping a block becomes
/// this size, its trim threshold twice it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const BLOCK: usize = 1 << 20;

/// Lets glibc raise its trim threshold by its own rule (above); nothing
/// elsewhere.
pub fn settle() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc(size: usize) -> *mut std::ffi::c_void;
            fn free(ptr: *mut std::ffi::c_void);
        }
        // SAFETY: a block allocated and freed here, never written; the
        // pointer is hidden from the optimiser so the pair is not elided.
        unsafe {
            let block = std::hint::black_box(malloc(BLOCK));
            if !block.is_null() {
                free(block);
            }
        }
    }
}
