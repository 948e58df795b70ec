//! The ends of a range of the pagination index, by a second scan beside
//! the walk's own (which keeps its place): the newest or oldest id above a
//! bound and below another, visible or not, for the rare paths' ranges.

use pgrx::pg_sys::{self, Datum};

use super::IndexWalk;
use crate::datum::text_cmp as compare;
use crate::unguarded::{self, guarded};

/// The id (column 2) of the next entry index scan `scan` reads in
/// `direction`, visible or not; None at the scan's end.
///
/// # Safety
/// The scan returns index tuples (`xs_want_itup`) of an index with
/// `natts` columns.
unsafe fn next_id(
    scan: pg_sys::IndexScanDesc,
    direction: pg_sys::ScanDirection::Type,
    natts: usize,
) -> Option<Vec<u8>> {
    let mut values = vec![Datum::from(0usize); natts];
    let mut nulls = vec![false; natts];
    let (v, n) = (values.as_mut_slice(), nulls.as_mut_slice());
    // SAFETY: as the caller's; the arrays have an entry per index column,
    // and the id is copied while the scan stands on its entry.
    unsafe {
        guarded(|g| unguarded::next_entry(g, scan, direction, true, v, n))
            .then(|| crate::datum::varlena_bytes(values[1]).to_vec())
    }
}

impl IndexWalk<'_> {
    /// The id of the walk's first entry, visible or not, read by the
    /// walk's own scan and left for its first chunk (one descent for
    /// both); None when the window has no entry. Before the first chunk.
    ///
    /// # Safety
    /// The relations are open; no chunk has been read.
    pub unsafe fn first_id(&mut self) -> Option<Vec<u8>> {
        // SAFETY: as the caller's; the entry is read while the scan
        // stands on it.
        unsafe {
            self.restart();
            let natts = (*(*self.index).rd_rel).relnatts as usize;
            let Some(id) = next_id(self.scan, self.direction, natts) else {
                self.done = true;
                return None;
            };
            self.pending = true;
            if self.open_top && compare(&id, b"8", self.layout.cols.id_collation).is_lt() {
                // A first page's scan read from the top: nothing is at or
                // above '8', and this is the newest id below it (what
                // `above` would find).
                self.below_eight = Some(Some(id.clone()));
            }
            Some(id)
        }
    }

    /// The oldest (or newest) id of the tenant's entries above `lower` (at
    /// it too when not strict) and below `upper` when there is one, visible
    /// or not: the oldest-first keys path only bounds its ranges with it,
    /// and a dead entry's id only widens them. A second scan; the walk's
    /// own keeps its place.
    ///
    /// # Safety
    /// The relations are open (between `begin` and `end`).
    pub unsafe fn edge(
        &mut self,
        (lower, strict): (Datum, bool),
        upper: Option<Datum>,
        oldest: bool,
    ) -> Option<Vec<u8>> {
        // SAFETY: as the caller's; the scan is ended here.
        unsafe {
            let saved = self.keys;
            let strategy = if strict {
                pg_sys::BTGreaterStrategyNumber
            } else {
                pg_sys::BTGreaterEqualStrategyNumber
            };
            self.key(1, 2, strategy, lower);
            match upper {
                Some(u) => self.key(2, 2, pg_sys::BTLessStrategyNumber, u),
                None => self.keys[2] = self.keys[1],
            }
            let mut keys = std::mem::replace(&mut self.keys, saved);
            // the walk's own direction reads oldest first when it is ascending
            let direction = if oldest == self.ascending {
                self.direction
            } else {
                -self.direction
            };
            self.first_entry(&mut keys, direction)
        }
    }

    /// The id of the first entry a second scan with `keys` reads in
    /// `direction`, visible or not; the walk's own scan keeps its place.
    ///
    /// # Safety
    /// The relations are open; `keys` are three keys of this index.
    pub(super) unsafe fn first_entry(
        &self,
        keys: &mut [pg_sys::ScanKeyData; 3],
        direction: pg_sys::ScanDirection::Type,
    ) -> Option<Vec<u8>> {
        // SAFETY: as the caller's; the scan is ended here.
        unsafe {
            let scan = crate::compat::index_beginscan(
                self.heap,
                self.index,
                pg_sys::GetActiveSnapshot(),
                3,
            );
            (*scan).xs_want_itup = true;
            pg_sys::index_rescan(scan, keys.as_mut_ptr(), 3, std::ptr::null_mut(), 0);
            let id = next_id(scan, direction, (*(*self.index).rd_rel).relnatts as usize);
            pg_sys::index_endscan(scan);
            id
        }
    }
}
