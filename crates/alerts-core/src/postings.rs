//! GIN's compressed posting list, decoded: the heap TIDs an entry of a GIN
//! index lists inline, as `ginpostinglist.c` writes them. The first TID is
//! stored whole; each next one is the difference from the one before, of
//! the TID as one integer (block number times 2^11 plus offset), in
//! 7-bit groups, low group first, the high bit of a byte set when another
//! byte follows (the seventh byte, if any, carries 8 bits).
//!
//! The direct walk reads a GIN entry in place when the value is rare
//! (`src/search/scan/entries.rs`); a list that does not decode to as many
//! TIDs as the entry says, or to TIDs out of order, is refused (None) and
//! the caller asks GIN itself.

/// A heap TID: block number and offset (1-based).
pub type Tid = (u32, u16);

/// Bits of the offset in a TID as one integer (`MaxHeapTuplesPerPageBits`).
const OFFSET_BITS: u32 = 11;

fn to_int((block, offset): Tid) -> u64 {
    ((block as u64) << OFFSET_BITS) | offset as u64
}

fn to_tid(v: u64) -> Option<Tid> {
    let block = u32::try_from(v >> OFFSET_BITS).ok()?;
    let offset = (v & ((1 << OFFSET_BITS) - 1)) as u16;
    (offset != 0).then_some((block, offset))
}

/// The next varbyte integer of `bytes` from `*at`, `*at` moved past it;
/// None when the bytes end inside it.
fn varbyte(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for group in 0..7u32 {
        let c = *bytes.get(*at)? as u64;
        *at += 1;
        if group == 6 {
            return Some(value | (c << 42));
        }
        value |= (c & 0x7f) << (7 * group);
        if c & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The TIDs of one posting-list segment: `first`, then those `bytes`
/// encode; None when the bytes are malformed (a varbyte cut short, a
/// zero or overflowing difference) or do not give `expected` TIDs.
pub fn decode(first: Tid, bytes: &[u8], expected: usize) -> Option<Vec<Tid>> {
    to_tid(to_int(first))?;
    let mut tids = Vec::with_capacity(expected);
    tids.push(first);
    let mut value = to_int(first);
    let mut at = 0;
    while at < bytes.len() {
        let delta = varbyte(bytes, &mut at)?;
        if delta == 0 || tids.len() >= expected {
            return None;
        }
        value = value.checked_add(delta)?;
        tids.push(to_tid(value)?);
    }
    (tids.len() == expected).then_some(tids)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ginCompressPostingList`'s encoding, for the tests.
    fn encode(tids: &[Tid]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut prev = to_int(tids[0]);
        for &t in &tids[1..] {
            let mut d = to_int(t) - prev;
            prev = to_int(t);
            for group in 0..7 {
                if group == 6 {
                    out.push(d as u8);
                    break;
                }
                let more = d >= 0x80;
                out.push((d & 0x7f) as u8 | if more { 0x80 } else { 0 });
                d >>= 7;
                if !more {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn round_trips() {
        let lists: Vec<Vec<Tid>> = vec![
            vec![(0, 1)],
            vec![(0, 1), (0, 2), (0, 291)],
            vec![(7, 3), (7, 4), (9, 1), (4_000, 17), (4_000_000, 2)],
            vec![(1, 1), (u32::MAX, 2047)],
        ];
        for tids in lists {
            let bytes = encode(&tids);
            assert_eq!(decode(tids[0], &bytes, tids.len()), Some(tids.clone()));
        }
    }

    #[test]
    fn known_bytes() {
        // (0,1) then +1 -> (0,2); +2048 -> (1,2): 0x80 0x10
        assert_eq!(
            decode((0, 1), &[0x01, 0x80, 0x10], 3),
            Some(vec![(0, 1), (0, 2), (1, 2)])
        );
    }

    #[test]
    fn refuses_malformed() {
        // cut inside a varbyte
        assert_eq!(decode((0, 1), &[0x81], 2), None);
        // a zero difference (not strictly increasing)
        assert_eq!(decode((0, 1), &[0x00], 2), None);
        // fewer or more TIDs than the entry says
        assert_eq!(decode((0, 1), &[0x01], 3), None);
        assert_eq!(decode((0, 1), &[0x01, 0x01], 2), None);
        // offset 0 is no TID
        assert_eq!(decode((0, 0), &[], 1), None);
        assert_eq!(decode((0, 1), &[0xff, 0x0f], 2), None); // +2047: (1, 0)
                                                            // past the largest block
        assert_eq!(decode((u32::MAX, 2047), &[0x02], 2), None);
    }
}
