//! Tenant keys: a row's attribute elements scoped to its tenant and to the
//! week of its ULID, hashed to 64 bits, for a GIN index over an expression
//! (`alerts_keys(organisation_id, id, attribute_values)`).
//!
//! A GIN index on the attributes themselves answers "which rows of the whole
//! table carry this value": its cost follows the value's frequency in every
//! tenant and in all of history, then the heap is read to keep this tenant's
//! window. With the tenant and the week in the key, a lookup returns only the
//! rows of one tenant and one week that may carry the value, so a rare value
//! costs its matches in the window, and the week buckets let a search read
//! the newest weeks first and stop when the page is full.
//!
//! key = xxh3_64(u32 BE length of the tenant ‖ tenant ‖ u64 BE week ‖
//! element bytes), as a signed 64-bit integer. Collisions only add
//! candidates: every candidate is checked exactly (tenant, window, filter).
//!
//! Week of an id: its first 10 characters read as a ULID time when they are
//! all uppercase Crockford base32 (then byte order = time order), else
//! [`NO_WEEK`]; searches include `NO_WEEK` keys in every range, bounded by
//! the id itself, so rows with other ids are still found exactly.

use xxhash_rust::xxh3::xxh3_64;

use crate::encoding::write_element_bytes;
use crate::filter::Clause;

/// Width of a bucket: one week of ULID time.
pub const WEEK_MS: u64 = 7 * 24 * 3600 * 1000;
/// Bucket of ids that do not start with an uppercase ULID time.
pub const NO_WEEK: u64 = u64::MAX;
/// Characters of a ULID that hold its time.
pub const TIME_CHARS: usize = 10;

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

fn strict_digit(b: u8) -> Option<u64> {
    ALPHABET.iter().position(|&a| a == b).map(|p| p as u64)
}

/// The ULID time of an id whose first 10 characters are uppercase Crockford
/// base32, else None.
pub fn time_of_id(id: &[u8]) -> Option<u64> {
    if id.len() < TIME_CHARS {
        return None;
    }
    let mut ms: u64 = 0;
    for &b in &id[..TIME_CHARS] {
        ms = ms * 32 + strict_digit(b)?;
    }
    Some(ms)
}

/// The week bucket of an id (see the module documentation).
pub fn week_of_id(id: &[u8]) -> u64 {
    time_of_id(id).map_or(NO_WEEK, |ms| ms / WEEK_MS)
}

/// The greatest week of any id that sorts at or below `id` and has a week:
/// the week of the greatest 10-character uppercase Crockford prefix that is
/// at most `id` (bytewise). For an id with a week that is its own week; for
/// one without (a lowercase ULID, `order-17`) it bounds the weeks of the
/// ids below it, so a search can skip weeks where no such id can be. None
/// when no id with a week sorts at or below `id`.
pub fn week_at_most(id: &[u8]) -> Option<u64> {
    let exact = id
        .iter()
        .take(TIME_CHARS)
        .take_while(|&&b| strict_digit(b).is_some())
        .count();
    if exact == TIME_CHARS {
        return Some(week_of_id(id));
    }
    // Keep id[..k], put the greatest digit below id[k] at k, then 'Z's.
    for k in (0..=exact).rev() {
        let Some(&limit) = id.get(k) else { continue };
        let Some(&below) = ALPHABET.iter().rev().find(|&&a| a < limit) else {
            continue;
        };
        let mut prefix = [b'Z'; TIME_CHARS];
        prefix[..k].copy_from_slice(&id[..k]);
        prefix[k] = below;
        return Some(week_of_id(&prefix));
    }
    None
}

/// What an id tells of the weeks of the ids that sort beside it, where ids
/// compare byte by byte (`bytewise`: `C`, `POSIX`) or in another collation
/// (ICU, a libc locale). Byte by byte, [`week_at_most`]: `Some(None)` when
/// no id with a week sorts at or below it. In another collation only an
/// id's own week says anything: there a lowercase ULID sorts among the
/// uppercase ones of its time (past every `01Z...` byte by byte), and a
/// locale may skip punctuation; `None` (nothing known) for an id without
/// a week, and the search bounds its weeks some other way.
pub fn week_bound(id: &[u8], bytewise: bool) -> Option<Option<u64>> {
    if bytewise {
        Some(week_at_most(id))
    } else {
        time_of_id(id).map(|ms| Some(ms / WEEK_MS))
    }
}

/// The smallest id prefix of a week: every id whose week is `week` or later
/// sorts at or after it, every id of an earlier week before it.
pub fn week_floor(week: u64) -> [u8; TIME_CHARS] {
    let mut ms = week.saturating_mul(WEEK_MS).min((1u64 << 50) - 1);
    let mut out = [b'0'; TIME_CHARS];
    for c in out.iter_mut().rev() {
        *c = ALPHABET[(ms % 32) as usize];
        ms /= 32;
    }
    out
}

/// Hashes one element of a tenant's week. `buf` is scratch space.
pub fn key(buf: &mut Vec<u8>, tenant: &[u8], week: u64, element: &[u8]) -> i64 {
    buf.clear();
    buf.extend_from_slice(&(tenant.len() as u32).to_be_bytes());
    buf.extend_from_slice(tenant);
    buf.extend_from_slice(&week.to_be_bytes());
    buf.extend_from_slice(element);
    xxh3_64(buf) as i64
}

/// Collects the keys of a row: call [`RowKeys::add`] for every element
/// `(key, tag, value)`, then [`RowKeys::finish`].
pub struct RowKeys<'a> {
    tenant: &'a [u8],
    week: u64,
    element: Vec<u8>,
    buf: Vec<u8>,
    keys: Vec<i64>,
}

impl<'a> RowKeys<'a> {
    pub fn new(tenant: &'a [u8], id: &[u8]) -> RowKeys<'a> {
        RowKeys {
            tenant,
            week: week_of_id(id),
            element: Vec::with_capacity(96),
            buf: Vec::with_capacity(128),
            keys: Vec::new(),
        }
    }

    pub fn add(&mut self, key_bytes: &[u8], tag: u8, value: &[u8]) {
        write_element_bytes(&mut self.element, key_bytes, tag, value);
        let k = key(&mut self.buf, self.tenant, self.week, &self.element);
        self.keys.push(k);
    }

    /// The row's keys, sorted, without duplicates.
    pub fn finish(mut self) -> Vec<i64> {
        self.keys.sort_unstable();
        self.keys.dedup();
        self.keys
    }
}

/// The keys one clause of a filter looks up for a tenant over weeks
/// `lo..=hi` plus [`NO_WEEK`]: a row of those weeks matching the clause has
/// at least one of them.
pub fn clause_keys(tenant: &[u8], lo: u64, hi: u64, clause: &Clause) -> Vec<i64> {
    let mut element = Vec::with_capacity(96);
    let mut buf = Vec::with_capacity(128);
    let mut out = Vec::new();
    for v in &clause.values {
        write_element_bytes(&mut element, clause.key.as_bytes(), v.tag, &v.bytes);
        for week in (lo..=hi).chain(std::iter::once(NO_WEEK)) {
            out.push(key(&mut buf, tenant, week, &element));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Cost model of the switch from the walk to the tenant-keys index, in
/// microseconds, measured on the benchmark's `full` data: a walk pays per
/// index entry; the keys path a fixed cost (statements, GIN lookups) and a
/// heap read and exact check per candidate.
pub const WALK_US_PER_ENTRY: f64 = 0.6;
pub const KEYS_US_FIXED: f64 = 150.0;
pub const KEYS_US_PER_CANDIDATE: f64 = 3.0;

/// After a chunk of `entries` index entries over `span_ms` of ULID time held
/// `hits` matches and the page still needs `want`: the number of weeks (at
/// most `max_weeks`) the keys path should read first, if that is estimated
/// cheaper than walking on. At the chunk's rate the walk needs
/// `(want - hits) / rate` more entries; the keys path reads the matches of
/// whole weeks, as many weeks as give the page half as much again at the
/// chunk's matches per week. No hits counts as half a hit: a rate below
/// what the chunk could show.
pub fn keys_cheaper(
    hits: i64,
    entries: i64,
    span_ms: u64,
    want: i64,
    max_weeks: u64,
) -> Option<u64> {
    if entries <= 0 {
        return None;
    }
    let rate = (hits as f64).max(0.5) / entries as f64;
    let per_week = rate * entries as f64 / span_ms.max(1) as f64 * WEEK_MS as f64;
    let weeks = (want as f64 * 1.5 / per_week)
        .ceil()
        .clamp(1.0, max_weeks.max(1) as f64);
    let keys_cost = KEYS_US_FIXED + per_week * weeks * KEYS_US_PER_CANDIDATE;
    let walk_cost = ((want - hits).max(1) as f64 / rate) * WALK_US_PER_ENTRY;
    (keys_cost < walk_cost).then_some(weeks as u64)
}

/// A walk read a whole window of `entries` entries and found `hits`
/// matches: would the keys path (every match of the window a candidate)
/// have been cheaper? Then the next calls for this tenant and filter take it.
pub fn keys_cheaper_than_walked(hits: i64, entries: i64) -> bool {
    KEYS_US_FIXED + hits as f64 * KEYS_US_PER_CANDIDATE < entries as f64 * WALK_US_PER_ENTRY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::for_each_element;
    use crate::ulid;
    use crate::Filter;
    use serde_json::json;

    fn row_keys(tenant: &str, id: &[u8], attrs: &serde_json::Value) -> Vec<i64> {
        let mut rk = RowKeys::new(tenant.as_bytes(), id);
        for_each_element(attrs, |k, e| rk.add(k.as_bytes(), e.tag, &e.bytes)).unwrap();
        rk.finish()
    }

    #[test]
    fn weeks_follow_id_order() {
        let a = ulid::encode(1_700_000_000_000, 5);
        let b = ulid::encode(1_700_000_000_000 + WEEK_MS, 0);
        assert_eq!(week_of_id(&a) + 1, week_of_id(&b));
        let w = week_of_id(&a);
        assert!(week_floor(w).as_slice() <= &a[..] && &a[..] < week_floor(w + 1).as_slice());
        assert!(&b[..] >= week_floor(w + 1).as_slice());
        assert_eq!(week_of_id(b"01h2xcejqtpb3tj0v2sqkmp4gr"), NO_WEEK); // lowercase
        assert_eq!(week_of_id(b"short"), NO_WEEK);
        assert_eq!(week_of_id(b"0000000000"), 0);
        assert_eq!(&week_floor(0), b"0000000000");
    }

    #[test]
    fn week_bound_trusts_bytes_only_byte_by_byte() {
        let a = ulid::encode(1_700_000_000_000, 5);
        let lower = a.to_ascii_lowercase();
        for bytewise in [true, false] {
            assert_eq!(week_bound(&a, bytewise), Some(Some(week_of_id(&a))));
        }
        assert_eq!(week_bound(&lower, true), Some(week_at_most(&lower)));
        assert_eq!(week_bound(&lower, false), None);
        assert_eq!(week_bound(b"!", true), Some(None));
        assert_eq!(week_bound(b"!", false), None);
        assert_eq!(week_bound(b"order-17", false), None);
    }

    #[test]
    fn week_at_most_bounds_every_id_below() {
        let a = ulid::encode(1_700_000_000_000, 5);
        assert_eq!(week_at_most(&a), Some(week_of_id(&a)));
        // A lowercase ULID sorts above every uppercase id of its prefix.
        assert_eq!(
            week_at_most(b"01keatap608jjkjx9sd1fxzkak"),
            Some(week_of_id(b"01ZZZZZZZZ"))
        );
        assert_eq!(week_at_most(b"01K"), Some(week_of_id(b"01JZZZZZZZ")));
        assert_eq!(week_at_most(b"order-17"), Some(week_of_id(b"ZZZZZZZZZZ")));
        assert_eq!(week_at_most(b"0"), None);
        assert_eq!(week_at_most(b""), None);
        assert_eq!(week_at_most(b"!"), None);
        // Against brute force: every id with a week at or below x has a
        // week at most week_at_most(x).
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let chars = b"0189AHJKZaz-~";
        for _ in 0..20_000 {
            let len = (next() % 12) as usize;
            let x: Vec<u8> = (0..len)
                .map(|_| chars[(next() % chars.len() as u64) as usize])
                .collect();
            let y: Vec<u8> = (0..TIME_CHARS)
                .map(|_| ALPHABET[(next() % 32) as usize])
                .collect();
            if y.as_slice() <= x.as_slice() {
                let bound = week_at_most(&x).expect("y is below x");
                assert!(week_of_id(&y) <= bound, "{:?} {:?}", x, y);
            }
        }
    }

    #[test]
    fn a_matching_row_has_a_key_of_every_clause() {
        let id = ulid::encode(1_750_000_000_000, 7);
        let week = week_of_id(&id);
        let attrs = json!({"team": "t1", "feature": ["a", "b"], "n": 1.0, "o": {"x": 1}});
        let keys = row_keys("org", &id, &attrs);
        let f =
            Filter::compile(&json!({"team": "t1", "feature": ["x", "b"], "n": 1, "o": {"x": 1}}))
                .unwrap();
        assert!(f.exact_match(&attrs).unwrap());
        for c in &f.clauses {
            let q = clause_keys(b"org", week - 2, week, c);
            assert!(q.iter().any(|k| keys.binary_search(k).is_ok()), "{}", c.key);
            // Another tenant or a later week shares no key with this row.
            let other = clause_keys(b"org2", week - 2, week, c);
            assert!(!other.iter().any(|k| keys.binary_search(k).is_ok()));
            let later = clause_keys(b"org", week + 1, week + 3, c);
            assert!(!later.iter().any(|k| keys.binary_search(k).is_ok()));
        }
        // Ids that are not ULIDs fall in NO_WEEK, which every lookup includes.
        let keys = row_keys("org", b"order-17", &attrs);
        let q = clause_keys(b"org", 10, 12, &f.clauses[0]);
        assert!(q.iter().any(|k| keys.binary_search(k).is_ok()));
    }

    #[test]
    fn cost_model_choices() {
        let day = 86_400_000;
        // 1000 entries over 9 hours (a 1M-alert tenant): 1% -> one week of
        // keys (~190 candidates) beats walking 4000 more entries; 0 hits ->
        // keys; 50% never reaches the choice but would walk.
        assert_eq!(keys_cheaper(10, 1000, day * 9 / 24, 50, 6), Some(1));
        assert_eq!(keys_cheaper(0, 1000, day * 9 / 24, 50, 6), Some(6));
        assert_eq!(keys_cheaper(40, 1000, day * 9 / 24, 50, 6), None);
        // A sparse tenant (1000 entries over 4 days) at 1%: a few weeks.
        assert_eq!(keys_cheaper(10, 1000, day * 4, 50, 6), Some(5));
        // A dense tenant at 5%: thousands of candidates a week: walk.
        assert_eq!(keys_cheaper(50, 1000, day / 24, 100, 6), None);
        assert_eq!(keys_cheaper(0, 0, day, 50, 6), None);
        // A whole small window: 834 entries with 8 matches -> keys next
        // time; with 410 matches -> walk; 200 entries -> walk.
        assert!(keys_cheaper_than_walked(8, 834));
        assert!(!keys_cheaper_than_walked(410, 834));
        assert!(!keys_cheaper_than_walked(0, 200));
    }
}
