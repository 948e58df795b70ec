//! ULIDs: 48-bit Unix milliseconds ‖ 80 random bits, as 26 characters of
//! Crockford base32 (uppercase). Their byte order is their time order, which
//! is why the pagination index can use a text column with `COLLATE "C"`.

use crate::error::{Error, ErrorKind};

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Largest millisecond a ULID can hold (year 10889).
pub const MAX_MS: u64 = (1 << 48) - 1;
pub const LEN: usize = 26;

/// Encodes time and randomness (only the low 80 bits of `rand` are used).
pub fn encode(ms: u64, rand: u128) -> [u8; LEN] {
    assert!(ms <= MAX_MS);
    let v: u128 = ((ms as u128) << 80) | (rand & ((1u128 << 80) - 1));
    let mut out = [0u8; LEN];
    for (i, c) in out.iter_mut().enumerate() {
        let shift = 5 * (LEN - 1 - i);
        *c = ALPHABET[((v >> shift) & 31) as usize];
    }
    out
}

/// The smallest ULID of millisecond `ms`: its time part, then zeros.
pub fn floor(ms: u64) -> [u8; LEN] {
    encode(ms, 0)
}

fn value_of(c: u8) -> Option<u8> {
    let c = c.to_ascii_uppercase();
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u8)
}

/// Decodes a ULID (case-insensitive) into (milliseconds, 80 random bits).
pub fn decode(s: &str) -> Result<(u64, u128), Error> {
    let shown = crate::encoding::truncate(s, 40);
    if s.len() != LEN && !s.is_ascii() {
        return Err(Error::new(
            ErrorKind::InvalidText,
            format!("\"{shown}\" is not a ULID: it has characters outside Crockford base32"),
            "ULIDs use the digits 0-9 and the letters A-Z without I, L, O and U",
        ));
    }
    if s.len() != LEN {
        return Err(Error::new(
            ErrorKind::InvalidText,
            format!(
                "\"{shown}\" is not a ULID: it has {} characters, a ULID has 26",
                s.len()
            ),
            "a ULID is 26 characters of Crockford base32, for example 01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ));
    }
    let mut v: u128 = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let d = value_of(b).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidText,
                format!(
                    "\"{shown}\" is not a ULID: character {} is not Crockford base32",
                    i + 1
                ),
                "ULIDs use the digits 0-9 and the letters A-Z without I, L, O and U",
            )
        })?;
        if i == 0 && d > 7 {
            return Err(Error::new(
                ErrorKind::InvalidText,
                format!("\"{shown}\" is not a ULID: it is larger than the largest ULID 7ZZZZZZZZZZZZZZZZZZZZZZZZZ"),
                "the first character of a ULID is 0-7",
            ));
        }
        v = (v << 5) | d as u128;
    }
    Ok(((v >> 80) as u64, v & ((1u128 << 80) - 1)))
}

/// Microseconds between the Unix epoch and the Postgres epoch (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// Unix milliseconds of a Postgres `timestamptz` (microseconds since
/// 2000-01-01), floored; `None` for +infinity or past the last ULID
/// millisecond. Times before 1970 (and -infinity) clamp to 0: every ULID is at
/// or after them, so as a lower bound 0 is exact.
pub fn unix_ms_of_pg_timestamp(ts: i64) -> Option<u64> {
    if ts == i64::MAX {
        return None;
    }
    let ms = (ts as i128 + PG_EPOCH_US as i128).div_euclid(1000);
    if ms < 0 {
        Some(0)
    } else if ms > MAX_MS as i128 {
        None
    } else {
        Some(ms as u64)
    }
}

/// The Postgres `timestamptz` of a ULID millisecond.
pub fn pg_timestamp_of_unix_ms(ms: u64) -> i64 {
    ms as i64 * 1000 - PG_EPOCH_US
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pg_timestamp_edges() {
        assert_eq!(unix_ms_of_pg_timestamp(0), Some(946_684_800_000));
        assert_eq!(unix_ms_of_pg_timestamp(-PG_EPOCH_US), Some(0));
        assert_eq!(unix_ms_of_pg_timestamp(-PG_EPOCH_US - 1), Some(0));
        assert_eq!(unix_ms_of_pg_timestamp(i64::MIN), Some(0));
        assert_eq!(unix_ms_of_pg_timestamp(i64::MAX), None);
        assert_eq!(unix_ms_of_pg_timestamp(1_999), Some(946_684_800_001));
        assert_eq!(unix_ms_of_pg_timestamp(-1), Some(946_684_799_999));
        assert_eq!(pg_timestamp_of_unix_ms(946_684_800_001), 1_000);
    }

    #[test]
    fn known_vectors() {
        // From the ULID spec: ulid(1469918176385) = 01ARYZ6S41TSV4RRFFQ69G5FAV.
        assert_eq!(
            decode("01ARYZ6S41TSV4RRFFQ69G5FAV").unwrap().0,
            1469918176385
        );
        assert_eq!(&floor(1469918176385), b"01ARYZ6S410000000000000000");
        assert_eq!(&floor(0), b"00000000000000000000000000");
        assert_eq!(&encode(MAX_MS, u128::MAX), b"7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    }

    #[test]
    fn roundtrip_and_order() {
        let mut prev = floor(0);
        for ms in [1u64, 2, 1000, 1_700_000_000_000, MAX_MS] {
            let f = floor(ms);
            assert!(f > prev);
            prev = f;
            let s = std::str::from_utf8(&f).unwrap();
            assert_eq!(decode(s).unwrap(), (ms, 0));
            assert_eq!(decode(&s.to_lowercase()).unwrap(), (ms, 0));
        }
    }

    #[test]
    fn malformed() {
        for bad in [
            "",
            "01ARYZ6S41",
            "01ARYZ6S41TSV4RRFFQ69G5FAVX",
            "01ARYZ6S41TSV4RRFFQ69G5FAU",
            "81ARYZ6S41TSV4RRFFQ69G5FAV",
            "01ARYZ6S41TSV4RRFFQ69G5FA!",
            "01ARYZ6S41TSV4RRFFQ69G5FÀ",
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }
}
