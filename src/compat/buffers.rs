//! Buffer content locks, which PostgreSQL 19 made an inline function
//! (part of `compat.rs`).

use pgrx::pg_sys;

/// Takes a share lock on `buffer`'s content (`LockBuffer`). PostgreSQL 19
/// made `LockBuffer` an inline function over `LockBufferInternal` and
/// `UnlockBuffer` (no symbol to link), its mode a `BufferLockMode`.
///
/// # Safety
/// `buffer` is pinned by this backend.
pub unsafe fn lock_buffer_share(buffer: pg_sys::Buffer) {
    // SAFETY: as the caller's.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as i32);
        #[cfg(feature = "pg19")]
        pg_sys::LockBufferInternal(buffer, pg_sys::BufferLockMode::BUFFER_LOCK_SHARE);
    }
}

/// Releases this backend's content lock on `buffer` (`LockBuffer` with
/// `BUFFER_LOCK_UNLOCK`), keeping the pin.
///
/// # Safety
/// `buffer` is pinned and locked by this backend.
pub unsafe fn unlock_buffer(buffer: pg_sys::Buffer) {
    // SAFETY: as the caller's.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_UNLOCK as i32);
        #[cfg(feature = "pg19")]
        pg_sys::UnlockBuffer(buffer);
    }
}

/// `LockBuffer`'s share lock and unlock as raw calls, with no guard of
/// pgrx's, for `unguarded.rs`'s batches (its rules apply).
pub mod raw_buffer_lock {
    use pgrx::pg_sys::Buffer;
    use std::ffi::c_int;

    unsafe extern "C-unwind" {
        #[cfg(not(feature = "pg19"))]
        fn LockBuffer(buffer: Buffer, mode: c_int);
        #[cfg(feature = "pg19")]
        fn LockBufferInternal(buffer: Buffer, mode: c_int);
        #[cfg(feature = "pg19")]
        fn UnlockBuffer(buffer: Buffer);
    }

    /// # Safety
    /// `buffer` pinned; inside a guarded batch.
    pub unsafe fn share(buffer: Buffer) {
        // SAFETY: as the caller's.
        unsafe {
            #[cfg(not(feature = "pg19"))]
            LockBuffer(buffer, pgrx::pg_sys::BUFFER_LOCK_SHARE as c_int);
            #[cfg(feature = "pg19")]
            LockBufferInternal(
                buffer,
                pgrx::pg_sys::BufferLockMode::BUFFER_LOCK_SHARE as c_int,
            );
        }
    }

    /// # Safety
    /// `buffer` pinned and locked; inside a guarded batch.
    pub unsafe fn unlock(buffer: Buffer) {
        // SAFETY: as the caller's.
        unsafe {
            #[cfg(not(feature = "pg19"))]
            LockBuffer(buffer, pgrx::pg_sys::BUFFER_LOCK_UNLOCK as c_int);
            #[cfg(feature = "pg19")]
            UnlockBuffer(buffer);
        }
    }
}
