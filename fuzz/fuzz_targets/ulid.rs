//! Any text: decoding never panics, and what decodes encodes back to the
//! same ULID in uppercase.
#![no_main]
use alerts_core::ulid::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((ms, rand)) = decode(s) {
        assert_eq!(
            encode(ms, rand).as_slice(),
            s.to_ascii_uppercase().as_bytes()
        );
    }
});
