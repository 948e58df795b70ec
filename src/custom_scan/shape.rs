//! What a plan of the node carries: its `custom_exprs` in order (the
//! tenant, the attribute conditions, the lower and upper bounds on `id`, the
//! query's `LIMIT` and `OFFSET`, the column values, the bounds implied by
//! a declared time column, the time bounds it tests, the containments the
//! node tests itself), described by a list of
//! integers in `custom_private` (beside the partitions the plan read).
//! Written by the planner (`path.rs`, `plan.rs`), read by the executor
//! (`exec/`), which share nothing else.

use pgrx::pg_sys::{self, AttrNumber};

use super::quals::Kind;
use crate::pg_list;

/// The node's name in plans: `Custom Scan (AlertsSearch)`.
pub const NAME: &std::ffi::CStr = c"AlertsSearch";

/// What a plan's `custom_exprs` hold, read back from `custom_private`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The table's ids are unique (a unique index on them, or on the
    /// tenant and them): a page can end anywhere.
    pub ids_unique: bool,
    pub filters: Vec<Kind>,
    pub lower: usize,
    pub upper: usize,
    pub count: bool,
    pub offset: bool,
    /// Columns tested as the search's column filter: (column number,
    /// whether the value is a list).
    pub columns: Vec<(AttrNumber, bool)>,
    /// Upper bounds `id <= value` (after the `<` ones).
    pub upper_inclusive: usize,
    /// The query wants the rows oldest first (`ORDER BY id ASC`).
    pub ascending: bool,
    /// The table is a child its parent's plan reads beside its siblings in
    /// a merge (`search::part_key::merges_children`): the merge reads the first row
    /// of every child, and most give no more, so the first page is of one
    /// row.
    pub merged: bool,
    /// The scan is of a partitioned table as a whole: the search walks its
    /// partitions in turn (by `id` ranges) or merges them
    /// (`alerts.custom_scan_partitioned`).
    pub partitioned: bool,
    /// The role the query reads the table as (a view's owner), whose
    /// searches run as it; 0: the role running the query.
    pub reader: u32,
    /// The last `held` of `custom_exprs` are the query's containments
    /// (`quals::Usable::held`), which the node tests itself, on the
    /// attributes (column `attrs`), instead of the executor.
    pub held: usize,
    pub attrs: AttrNumber,
    /// Bounds on `id` implied by bounds on the time column the table
    /// declares ids follow (`window.rs`), after the column values: lower,
    /// then upper; a NULL one bounds nothing.
    pub implied_lower: usize,
    pub implied_upper: usize,
    /// Quals on `timestamptz` columns the node's direct walk tests too
    /// (`window::tested`), after the implied bounds: (column, operator).
    pub times: Vec<(AttrNumber, i32)>,
}

impl Shape {
    fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.ids_unique as i32, self.filters.len() as i32];
        v.extend(self.filters.iter().map(|&k| k.to_int()));
        v.extend([
            self.lower as i32,
            self.upper as i32,
            self.count as i32,
            self.offset as i32,
        ]);
        v.push(self.columns.len() as i32);
        v.extend(self.columns.iter().flat_map(|&(a, l)| [a as i32, l as i32]));
        v.push(self.upper_inclusive as i32);
        v.push(self.ascending as i32);
        v.push(self.merged as i32);
        v.push(self.partitioned as i32);
        v.push(self.reader as i32);
        v.extend([self.held as i32, self.attrs as i32]);
        v.extend([self.implied_lower as i32, self.implied_upper as i32]);
        v.push(self.times.len() as i32);
        v.extend(self.times.iter().flat_map(|&(a, op)| [a as i32, op]));
        v
    }

    fn from_ints(v: &[i32]) -> Shape {
        let n = v[1] as usize;
        let rest = &v[2 + n..];
        Shape {
            ids_unique: v[0] != 0,
            filters: v[2..2 + n].iter().map(|&k| Kind::from_int(k)).collect(),
            lower: rest[0] as usize,
            upper: rest[1] as usize,
            count: rest[2] != 0,
            offset: rest[3] != 0,
            columns: rest[5..5 + 2 * rest[4] as usize]
                .chunks(2)
                .map(|c| (c[0] as AttrNumber, c[1] != 0))
                .collect(),
            upper_inclusive: rest[5 + 2 * rest[4] as usize] as usize,
            ascending: rest[6 + 2 * rest[4] as usize] != 0,
            merged: rest[7 + 2 * rest[4] as usize] != 0,
            partitioned: rest[8 + 2 * rest[4] as usize] != 0,
            reader: rest[9 + 2 * rest[4] as usize] as u32,
            held: rest[10 + 2 * rest[4] as usize] as usize,
            attrs: rest[11 + 2 * rest[4] as usize] as AttrNumber,
            implied_lower: rest[12 + 2 * rest[4] as usize] as usize,
            implied_upper: rest[13 + 2 * rest[4] as usize] as usize,
            times: rest[15 + 2 * rest[4] as usize..]
                .chunks(2)
                .take(rest[14 + 2 * rest[4] as usize] as usize)
                .map(|c| (c[0] as AttrNumber, c[1]))
                .collect(),
        }
    }

    /// The shape as an integer list (`IntList`), for `custom_private`.
    ///
    /// # Safety
    /// In a transaction; the list is made in the current memory.
    pub unsafe fn to_list(&self) -> *mut pg_sys::List {
        // SAFETY: as the caller's.
        unsafe { pg_list::int_list(&self.to_ints()) }
    }

    /// A plan's `custom_private`: the shape, and the partitions a
    /// partitioned table searched whole reads (`tree`, None for any other
    /// scan).
    ///
    /// # Safety
    /// In a transaction; the list is made in the current memory.
    pub unsafe fn to_private(&self, tree: Option<&[pg_sys::Oid]>) -> *mut pg_sys::List {
        // SAFETY: as the caller's.
        unsafe {
            let oids = pg_list::oid_list(tree.unwrap_or_default());
            pg_sys::lappend(
                pg_sys::lappend(std::ptr::null_mut(), self.to_list().cast()),
                oids.cast(),
            )
        }
    }

    /// The shape and partitions of a list made by [`Shape::to_private`].
    ///
    /// # Safety
    /// `list` is such a list.
    pub unsafe fn from_private(list: *mut pg_sys::List) -> (Shape, Option<Vec<pg_sys::Oid>>) {
        // SAFETY: as the caller's.
        unsafe {
            let [ints, oids] = pg_list::cells(list) else {
                panic!("a plan's custom_private holds two lists");
            };
            let shape = Shape::from_list(ints.ptr_value.cast());
            let oids = pg_list::cells(oids.ptr_value.cast());
            let tree = shape
                .partitioned
                .then(|| oids.iter().map(|c| c.oid_value).collect());
            (shape, tree)
        }
    }

    /// The shape of a list made by [`Shape::to_list`].
    ///
    /// # Safety
    /// `list` is such a list.
    pub unsafe fn from_list(list: *mut pg_sys::List) -> Shape {
        // SAFETY: as the caller's.
        let ints: Vec<i32> = unsafe { pg_list::cells(list).iter().map(|c| c.int_value).collect() };
        Shape::from_ints(&ints)
    }
}
