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

/// Whether `s` is a ULID in its canonical form (26 uppercase Crockford
/// base32 characters, as [`encode`] writes them) whose time lies within
/// `within_us` microseconds of the Postgres `timestamptz` `at`: the row
/// relation `alerts_ulid_near` declares. Infinite times are near nothing.
pub fn near(s: &str, at: i64, within_us: i64) -> bool {
    let Ok((ms, rand)) = decode(s) else {
        return false;
    };
    if encode(ms, rand) != s.as_bytes() || at == i64::MIN || at == i64::MAX {
        return false;
    }
    let id_us = ms as i128 * 1000 - PG_EPOCH_US as i128;
    (id_us - at as i128).abs() <= within_us as i128
}

/// An id no row near its time (`near`, `within_us`) with a time at or
/// after `ts` has an id below: the lower bound on `id` that `created_at >=
/// ts` implies. Past the last ULID: `8`, above every canonical ULID.
pub fn lower_of_time(ts: i64, within_us: i64) -> Vec<u8> {
    if ts == i64::MIN {
        return floor(0).to_vec();
    }
    if ts == i64::MAX {
        return b"8".to_vec();
    }
    let ms = (ts as i128 - within_us as i128 + PG_EPOCH_US as i128).div_euclid(1000);
    match ms {
        ..0 => floor(0).to_vec(),
        ms if ms > MAX_MS as i128 => b"8".to_vec(),
        ms => floor(ms as u64).to_vec(),
    }
}

/// An id above every id of a row near its time with a time at or before
/// `ts`: the strict upper bound on `id` that `created_at <= ts` (or `<`)
/// implies.
pub fn upper_of_time(ts: i64, within_us: i64) -> Vec<u8> {
    if ts == i64::MIN {
        return floor(0).to_vec();
    }
    if ts == i64::MAX {
        return b"8".to_vec();
    }
    let ms = (ts as i128 + within_us as i128 + PG_EPOCH_US as i128).div_euclid(1000) + 1;
    match ms {
        ..0 => floor(0).to_vec(),
        ms if ms > MAX_MS as i128 => b"8".to_vec(),
        ms => floor(ms as u64).to_vec(),
    }
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

    #[test]
    fn time_bounds_hold_every_near_id() {
        // ids of times around a bound, within tolerances of 0 to 2 s
        let base = 1_700_000_000_000u64;
        for within_us in [0i64, 999, 1000, 1_500_000, 2_000_000] {
            for d_ms in -3000i64..3000 {
                let ms = (base as i64 + d_ms) as u64;
                let id = encode(ms, 0x1234_5678_9abc_def0_1234);
                let s = std::str::from_utf8(&id).unwrap();
                let id_ts = pg_timestamp_of_unix_ms(ms);
                // the row's time: anywhere within the tolerance of its id's
                for at in [id_ts - within_us, id_ts, id_ts + within_us, id_ts + 777] {
                    if !near(s, at, within_us) {
                        continue;
                    }
                    for bound in [at, at - 1, at - 1000, at + 1, at + 1000] {
                        if at >= bound {
                            assert!(id.as_slice() >= lower_of_time(bound, within_us).as_slice());
                        }
                        if at <= bound {
                            assert!(id.as_slice() < upper_of_time(bound, within_us).as_slice());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn near_wants_the_canonical_form() {
        let id = encode(1_700_000_000_000, 42);
        let s = std::str::from_utf8(&id).unwrap();
        let at = pg_timestamp_of_unix_ms(1_700_000_000_000);
        assert!(near(s, at, 0));
        assert!(!near(&s.to_ascii_lowercase(), at, 0));
        assert!(!near(s, at + 1, 0));
        assert!(near(s, at + 1, 1));
        assert!(!near(s, i64::MAX, i64::MAX));
        assert!(!near("not a ulid", at, 1));
        assert_eq!(lower_of_time(i64::MIN, 0), floor(0).to_vec());
        assert_eq!(upper_of_time(i64::MAX, 0), b"8".to_vec());
        assert_eq!(upper_of_time(-PG_EPOCH_US - 5000, 0), floor(0).to_vec());
        assert!(
            upper_of_time(pg_timestamp_of_unix_ms(MAX_MS), 0) > encode(MAX_MS, u128::MAX).to_vec()
        );
    }
}
