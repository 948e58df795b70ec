//! The bloom bitmap: 512 bits, 7 positions per element. On-disk format v1.
//!
//! ```text
//! h        = xxh3_64(element bytes), seed 0
//! pos_i    = (h >> (9 * i)) & 511   for i = 0..7   (bits 0..62 of h, 9 at a time)
//! bit p    = byte p / 8, mask 0x80 >> (p mod 8)
//! ```
//!
//! Bit 0 is the leftmost bit of the Postgres bit string (the high bit of the
//! first data byte), so `B'1000…'` has bit 0 set.
//!
//! Narrower columns (`bit(256)`, `bit(128)`) hold the same bitmap folded:
//! bit `p` of the 512 is bit `p mod W` of the W, that is the OR of the
//! 512-bit bitmap's W-bit slices. A mask folded the same way keeps every
//! test a necessary condition (a row whose bitmap covers a mask has a folded
//! bitmap that covers the folded mask), so pages stay exact; they only read
//! more false candidates.
//!
//! Why 9-bit slices and not double hashing (`h1 + i * h2`): with m = 512 an
//! odd step takes only 256 values, so two elements with the same step and
//! nearby starts share most positions. Measured at 30 elements a row, double
//! hashing gave 2.8x the textbook false-positive rate; independent slices of
//! one 64-bit hash match the formula (test `false_positive_rate_matches_the_formula`).
//! Positions of one element may coincide (with replacement, as the formula assumes).

use bitvec::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::encoding::{for_each_element, write_element};
use crate::error::Error;

/// Version of the element encoding + hash layout. Bump on any change.
pub const FORMAT_VERSION: u32 = 1;
/// Bits in a bitmap.
pub const BITMAP_BITS: usize = 512;
/// Bytes in a bitmap.
pub const BITMAP_BYTES: usize = BITMAP_BITS / 8;
/// Hash positions per element.
pub const HASHES: u32 = 7;
/// The bitmap widths a column may have: the 512 bits, or folded to fewer.
pub const WIDTHS: [usize; 3] = [128, 256, 512];

/// Whether `bits` is a width a bitmap column may have ([`WIDTHS`]).
pub fn width_ok(bits: usize) -> bool {
    WIDTHS.contains(&bits)
}

/// `out` set to `bytes` folded to `out.len()` bytes: the OR of its slices of
/// that length. `out.len()` must divide `bytes.len()`.
fn fold_into(bytes: &[u8], out: &mut [u8]) {
    let n = out.len();
    debug_assert!(n > 0 && bytes.len() % n == 0);
    out.copy_from_slice(&bytes[..n]);
    for slice in bytes[n..].chunks_exact(n) {
        for (o, b) in out.iter_mut().zip(slice) {
            *o |= *b;
        }
    }
}

/// A 512-bit bloom bitmap in Postgres bit-string byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bitmap(pub [u8; BITMAP_BYTES]);

impl Default for Bitmap {
    fn default() -> Self {
        Bitmap([0; BITMAP_BYTES])
    }
}

impl std::fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bitmap({})", self.to_hex())
    }
}

/// The 7 bit positions of one element's bytes.
#[inline]
pub fn positions(element: &[u8]) -> [u16; HASHES as usize] {
    let h = xxh3_64(element);
    let mut out = [0u16; HASHES as usize];
    for (i, p) in out.iter_mut().enumerate() {
        *p = ((h >> (9 * i)) & (BITMAP_BITS as u64 - 1)) as u16;
    }
    out
}

impl Bitmap {
    /// Sets the bits of one element's bytes.
    #[inline]
    pub fn add_element(&mut self, element: &[u8]) {
        let bits = self.0.view_bits_mut::<Msb0>();
        for p in positions(element) {
            bits.set(p as usize, true);
        }
    }

    /// Sets the bits of `(key, value)`, using `buf` as scratch space.
    #[inline]
    pub fn add(&mut self, buf: &mut Vec<u8>, key: &str, tag: u8, value: &[u8]) {
        write_element(buf, key, tag, value);
        self.add_element(buf);
    }

    /// Sets the bits of `(key bytes, value)`, using `buf` as scratch space.
    #[inline]
    pub fn add_bytes(&mut self, buf: &mut Vec<u8>, key: &[u8], tag: u8, value: &[u8]) {
        crate::encoding::write_element_bytes(buf, key, tag, value);
        self.add_element(buf);
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u32 {
        self.0.iter().map(|b| b.count_ones()).sum()
    }

    /// Union in place.
    pub fn union_with(&mut self, other: &Bitmap) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a |= *b;
        }
    }

    /// `self ⊇ mask`: every bit of the mask is set here.
    pub fn contains(&self, mask: &Bitmap) -> bool {
        self.0.iter().zip(mask.0.iter()).all(|(a, m)| a & m == *m)
    }

    /// The bitmap folded to `bits` bits (one of [`WIDTHS`]): bit `p` set
    /// when any bit `q` with `q mod bits = p` is.
    pub fn folded(&self, bits: usize) -> Vec<u8> {
        assert!(width_ok(bits), "bitmap width {bits}");
        let mut out = vec![0u8; bits / 8];
        fold_into(&self.0, &mut out);
        out
    }

    /// Lowercase hex of the 64 bytes (for golden vectors and messages).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bitmap as a `0`/`1` string, bit 0 first, like Postgres prints `bit(512)`.
    pub fn to_bit_string(&self) -> String {
        self.0
            .view_bits::<Msb0>()
            .iter()
            .map(|b| if *b { '1' } else { '0' })
            .collect()
    }

    /// Native-endian words for the allocation-free per-row test; masks are
    /// converted the same way, so the AND test is byte-order independent.
    #[inline]
    pub fn words(&self) -> [u64; BITMAP_BYTES / 8] {
        words_of(&self.0)
    }
}

/// Reads bitmap bytes (64, or a folded bitmap's 32 or 16) as native-endian
/// words; the words past them are 0.
#[inline]
pub fn words_of(bytes: &[u8]) -> [u64; BITMAP_BYTES / 8] {
    let mut w = [0u64; BITMAP_BYTES / 8];
    for (i, chunk) in bytes.chunks_exact(8).enumerate() {
        w[i] = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
    }
    w
}

/// The bloom bitmap of an attributes object (see `encoding` for the rules).
pub fn bloom(attrs: &serde_json::Value) -> Result<Bitmap, Error> {
    let mut bm = Bitmap::default();
    let mut buf = Vec::with_capacity(64);
    for_each_element(attrs, |k, e| bm.add(&mut buf, k, e.tag, &e.bytes))?;
    Ok(bm)
}

/// Number of elements an attributes object yields.
pub fn element_count(attrs: &serde_json::Value) -> Result<usize, Error> {
    let mut n = 0;
    for_each_element(attrs, |_, _| n += 1)?;
    Ok(n)
}

/// Expected false-positive rate of a single-value test on a row of `n`
/// elements in a bitmap of `bits` bits: (1 - e^(-k n / m))^k.
pub fn expected_fp_rate(n: f64, bits: usize) -> f64 {
    let k = HASHES as f64;
    (1.0 - (-k * n / bits as f64).exp()).powf(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::write_element;
    use serde_json::json;

    /// Golden vectors: the on-disk format. If one of these changes, every
    /// stored bitmap is wrong: bump FORMAT_VERSION and ship a rebuild.
    #[test]
    fn golden_positions() {
        let mut buf = Vec::new();
        let cases: [(&str, u8, &str, [u16; 7]); 4] = [
            ("team", b's', "t1", GOLDEN[0]),
            ("feature", b's', "alerts", GOLDEN[1]),
            ("a:b", b's', "c", GOLDEN[2]),
            ("count", b'n', "1", GOLDEN[3]),
        ];
        for (k, tag, v, want) in cases {
            write_element(&mut buf, k, tag, v.as_bytes());
            assert_eq!(positions(&buf), want, "{k}={v}");
        }
    }

    // Computed by an independent implementation (Python's xxhash package),
    // not by this code.
    const GOLDEN: [[u16; 7]; 4] = [
        [476, 90, 445, 186, 461, 470, 325],
        [237, 497, 236, 33, 449, 369, 229],
        [49, 165, 215, 51, 448, 355, 22],
        [8, 305, 329, 478, 231, 495, 129],
    ];
    const GOLDEN_BITMAP_HEX: &str = "08000000400003000000082000000000000000000000002002000019040c00000000140000000000040008000040400000000000000000044004120800004000";

    #[test]
    fn golden_bitmap() {
        let bm = bloom(&json!({"team": "t1", "feature": ["alerts", "billing"], "sev": 2})).unwrap();
        assert_eq!(bm.to_hex(), GOLDEN_BITMAP_HEX);
        assert_eq!(bloom(&json!({})).unwrap(), Bitmap::default());
    }

    #[test]
    fn folding_is_position_mod_width() {
        // Every element's positions, taken mod the width, are the folded
        // bitmap's bits; 512 is the bitmap itself.
        let attrs = json!({"team": "t1", "feature": ["alerts", "billing"], "sev": 2});
        let bm = bloom(&attrs).unwrap();
        assert_eq!(bm.folded(512), bm.0.to_vec());
        let mut buf = Vec::new();
        for bits in [128usize, 256] {
            let mut want = vec![0u8; bits / 8];
            for (k, tag, v) in [
                ("team", b's', "t1"),
                ("feature", b's', "alerts"),
                ("feature", b's', "billing"),
                ("sev", b'n', "2"),
            ] {
                write_element(&mut buf, k, tag, v.as_bytes());
                for p in positions(&buf) {
                    want.view_bits_mut::<Msb0>().set(p as usize % bits, true);
                }
            }
            assert_eq!(bm.folded(bits), want, "{bits}");
        }
        assert!(!width_ok(64) && !width_ok(500) && width_ok(256));
    }

    #[test]
    fn bit_zero_is_leftmost() {
        let mut bm = Bitmap::default();
        bm.0.view_bits_mut::<Msb0>().set(0, true);
        assert_eq!(bm.0[0], 0x80);
        assert!(bm.to_bit_string().starts_with("10"));
    }
}
