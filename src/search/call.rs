//! One call as the page algorithms see it: its checked arguments and what
//! the table offers for its filter (`Call`), and the bounds of a page read
//! oldest first (`Ascending`).

use alerts_core::keys::week_bound;
use alerts_core::walk::RarePaths;
use alerts_core::Filter;
use pgrx::pg_sys::{self, AttrNumber, Datum};

use super::{spi, trace};

/// A page read oldest first (`ORDER BY id ASC`, from the custom scan):
/// the window is `[floor, upper)` (no upper bound when None), read from
/// above `after`, the last page's last id, when there is one.
#[derive(Clone, Copy)]
pub struct Ascending {
    pub after: Option<Datum>,
    pub upper: Option<Datum>,
}

/// One call's arguments, checked, and what the table offers for its filter.
pub struct Call<'a> {
    pub org: Datum,
    pub filter: Datum,
    pub compiled: &'a Filter,
    /// The column filter (`columns => ...`), when given.
    pub columns: Option<Datum>,
    /// The window's smallest id (`alerts_ulid_floor(since)`).
    pub floor: Datum,
    /// Ids below this: `before_id`, or '8' (after every ULID) on a first
    /// page.
    pub before: Datum,
    pub first_page: bool,
    pub paths: RarePaths,
    /// Ids compare byte by byte (a direct walk of a `C` or `POSIX` id):
    /// false where unknown, which only costs the rare paths a shortcut.
    pub ids_bytewise: bool,
    /// The filter as one GIN jsonpath, when it has that form.
    pub jsonpath: Option<std::sync::Arc<str>>,
    /// Oldest first; None: newest first, below `before`.
    pub ascending: Option<Ascending>,
    /// Keys where the exact check refuses an array (`Args::whole`).
    pub whole: &'a [String],
    /// Bounds on time columns the direct walk tests (`Args::times`).
    pub times: &'a [TimeBound],
}

/// A query's bound on a `timestamptz` column of the rows' type
/// (`created_at >= now() - interval '30 days'`), from the custom scan:
/// the direct walk tests it in its exact check, so that a row outside it
/// is dropped before it becomes a page's row, and a page that cannot fill
/// ends the search. The executor still tests the qual itself: a route
/// that does not test it (a statement) only returns rows it drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeBound {
    /// The column, numbered as in the rows' type.
    pub attno: AttrNumber,
    /// How the column compares with `value` for the row to be kept.
    pub keep: std::cmp::Ordering,
    /// Kept also when equal (`>=`, `<=`, `=`).
    pub or_equal: bool,
    /// The bound's microseconds (timestamptz's own representation, whose
    /// comparison is the integers').
    pub value: i64,
}

impl TimeBound {
    /// Whether a row whose column holds `t` (None: NULL) passes the bound.
    pub fn admits(&self, t: Option<i64>) -> bool {
        t.is_some_and(|t| {
            let o = t.cmp(&self.value);
            o == self.keep || (self.or_equal && o.is_eq())
        })
    }
}

impl Call<'_> {
    /// What id `id` tells of the weeks of the ids beside it in this
    /// table's order (`alerts_core::keys::week_bound`): None, nothing.
    pub fn week_bound(&self, id: &[u8]) -> Option<Option<u64>> {
        week_bound(id, self.ids_bytewise)
    }

    /// Runs one of the statements that check rows exactly, whose last
    /// parameter is the column filter, with `args` before it.
    ///
    /// # Safety
    /// SPI is connected; `args` match the statement's other parameters.
    pub unsafe fn execute(
        &self,
        plan: pg_sys::SPIPlanPtr,
        args: &[Datum],
    ) -> *mut pg_sys::SPITupleTable {
        let all: Vec<Option<Datum>> = args.iter().copied().map(Some).collect();
        // SAFETY: as the caller's.
        unsafe { self.execute_nullable(plan, &all) }
    }

    /// As [`Call::execute`], with arguments that may be NULL.
    ///
    /// # Safety
    /// As [`Call::execute`].
    pub unsafe fn execute_nullable(
        &self,
        plan: pg_sys::SPIPlanPtr,
        args: &[Option<Datum>],
    ) -> *mut pg_sys::SPITupleTable {
        let mut all = args.to_vec();
        all.push(self.columns);
        trace::statement();
        // SAFETY: as the caller's.
        unsafe { spi::execute_nullable(plan, &all) }
    }
}
