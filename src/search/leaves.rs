//! A partitioned table read by the direct walk: each leaf's pagination
//! index walked in place, as a plain table's is (`scan/`), and the leaves'
//! rows merged newest first.
//!
//! The leaves that may hold the call's rows are found once
//! (`partitions::leaves`: pruned by their bounds when partitioned by `id`,
//! and to the tenant's partition below a hash level). Partitioned by `id`
//! on one level, they hold ranges that do not overlap: each is walked into
//! the page in turn, newest range first, until the page is full; older
//! leaves are not opened. Otherwise (by `created_at`, a default
//! partition, levels) their ids may overlap. A leaf whose validated
//! `CHECK` constraints keep its ids out of the window (`checks.rs`) is
//! locked but not opened; one whose largest id, any tenant's, is below
//! the window (the high end of a btree led by `id`, such as a primary key
//! `(id, created_at)`) is left unopened; a leaf the
//! session remembers as rare for the pair is answered whole by GIN, its
//! newest rows set aside for the merge. Every other leaf is opened and
//! its newest id in the window read (the first entry of its walk, left
//! for the walk), and they are walked in that order, each for as many
//! rows as the page still needs below its newest id (rows already found
//! above it beat every row it has), until the page is full of rows newer
//! than the next leaf's newest id; the rows are merged newest first.
//!
//! One partition set for the call: the leaves are opened, and locked, at
//! the start, and every read of the call (the walks, the rare paths'
//! statements) is of those leaves. Each leaf keeps its own statements and
//! route memory in the session (`session.rs`), as a Citus shard does, and
//! returns rows of the partitioned table's type. When any leaf cannot be
//! walked directly (another access method, a foreign table, no usable
//! pagination index), or the role may not read one as it is (no `SELECT`
//! granted on it, or a row-level policy of its own: the rare paths'
//! statements name the leaf), the call takes the statement walk instead.

use pgrx::pg_sys::{self, Datum, Oid};

use super::args::Args;
use super::call::Call;
use super::layout::Layout;
use super::page::Page;
use super::scan::{self, IndexWalk};
use super::session::{self, Held, Table};
use super::trace::{self, Route};
use super::{checks, partitions, rare, reader, walk};
use crate::datum::text_cmp;

/// One leaf of the call: its session entry, its call, its walk once
/// begun, and its newest id in the window (read for a merge).
struct Leaf<'a> {
    oid: Oid,
    table: Held<Table>,
    call: Call<'a>,
    layout: Layout,
    walk: Option<IndexWalk<'a>>,
    newest: Vec<u8>,
    /// Its ids are below this, where its bounds say so.
    upper: Option<Vec<u8>>,
}

/// Fills `page` (newest first) from the leaves of partitioned table
/// `parent` by the direct walk; false, having read nothing, when a leaf
/// cannot be walked directly.
///
/// # Safety
/// Inside a search: the call's datums are live, `parent` is locked and
/// read with its own privileges (`reader::plain_read`).
pub unsafe fn fill<'a>(parent: Oid, args: &'a Args<'a>, page: &mut Page) -> bool {
    // SAFETY: as the caller's; each leaf is locked before its caches are
    // read, and every walk begun here is ended here.
    unsafe {
        // a plain query's scan: the partitions of its plan
        let found = partitions::leaves(parent, (args.org, args.floor, args.before), args.pinned);
        // every leaf first: the call reads all of them directly, or none
        let mut leaves = Vec::new();
        for (i, &leaf) in found.oids.iter().enumerate() {
            // ids that overlap: a leaf whose CHECK keeps them out of the
            // window is locked, not opened
            if !found.by_id && checks::outside_window(leaf, args.floor, args.before) {
                trace::skipped_by_check();
                continue;
            }
            match prepare(
                leaf,
                parent,
                args,
                found.bounds.get(i).and_then(Option::as_ref),
            ) {
                Some(l) => leaves.push(l),
                None => return false,
            }
        }
        if found.by_id {
            in_order(leaves, args, page);
        } else {
            merged(leaves, args, parent, page);
        }
        true
    }
}

/// Leaves of ranges of ids that do not overlap, newest range first: each
/// walked into the page in turn, until it is full. Older leaves are not
/// opened.
///
/// # Safety
/// As [`fill`].
unsafe fn in_order<'a>(mut leaves: Vec<Leaf<'a>>, args: &'a Args<'a>, page: &mut Page) {
    for leaf in leaves.iter_mut() {
        if page.is_full() {
            break;
        }
        // SAFETY: as the caller's; the walk is ended before the next.
        unsafe {
            let mut walk = begin(leaf, args);
            walk_into(leaf, &mut walk, page);
            walk.end();
        }
    }
}

/// Leaves whose ids may overlap: opened, each one's newest id in the
/// window read, and walked in that order, each for as many rows as the
/// page still needs; the rows merged newest first.
///
/// A leaf's rows above the next leaf's newest id beat every row still to
/// be read: while no rows wait for a merge, they go straight into the
/// page, and only the rest are kept aside. Leaves that do not overlap (a
/// table partitioned by `created_at` whose ids follow it) are read as
/// [`in_order`] reads them, with no row copied twice.
///
/// A leaf whose bounds put a top on its ids (by time, where the parent
/// declares how ids follow it) is opened only once every leaf opened has
/// its newest id at or below that top, newest top first: a page filled
/// from the newest days opens none of the older ones.
///
/// # Safety
/// As [`fill`].
unsafe fn merged<'a>(leaves: Vec<Leaf<'a>>, args: &'a Args<'a>, parent: Oid, page: &mut Page) {
    // SAFETY: as the caller's; every walk begun here is ended here.
    unsafe {
        let Some(collation) = leaves.first().map(|l| l.layout.cols.id_collation) else {
            return; // no leaf in the window
        };
        let id_column = pg_sys::get_attnum(parent, c"id".as_ptr());
        let ids = (id_column, collation);
        // Rows found but not yet in the page, newest first, with their ids.
        let mut waiting: Vec<(Vec<u8>, Datum)> = Vec::new();
        // the leaves with a top, lowest top last... popped highest first
        let (mut pending, eager): (Vec<_>, Vec<_>) =
            leaves.into_iter().partition(|l| l.upper.is_some());
        crate::unguarded::sort_by_text(
            &mut pending,
            |l| l.upper.as_deref().unwrap_or_default(),
            collation,
            false,
        );
        let mut open = Vec::new();
        for l in eager {
            open.extend(opened(l, args, page, ids, &mut waiting));
        }
        crate::unguarded::sort_by_text(&mut open, |l| &l.newest, collation, true);
        let mut done = Vec::new();
        loop {
            // every leaf that may hold an id above the best open one's
            // newest is opened first
            while let Some(top) = pending.last().and_then(|l| l.upper.as_deref()) {
                if open
                    .first()
                    .is_some_and(|b: &Leaf| text_cmp(top, &b.newest, collation).is_le())
                {
                    break;
                }
                let l = pending.pop().expect("a top");
                if let Some(l) = opened(l, args, page, ids, &mut waiting) {
                    let at = open
                        .iter()
                        .take_while(|o| text_cmp(&o.newest, &l.newest, collation).is_ge())
                        .count();
                    open.insert(at, l);
                }
            }
            if open.is_empty() {
                break;
            }
            let mut leaf = open.remove(0);
            // waiting rows above the leaf's newest id beat all of its rows
            let newest = std::mem::take(&mut leaf.newest);
            let beat = waiting
                .iter()
                .take_while(|(id, _)| text_cmp(id, &newest, collation).is_gt())
                .count();
            for (_, row) in waiting.drain(..beat) {
                page.add_row(row);
            }
            if page.is_full() {
                done.push(leaf);
                break;
            }
            // above every row still to read: the next open leaf's newest
            // id, or the top of the leaves not opened, whichever is higher
            let tops = [
                open.first().map(|l| l.newest.clone()),
                pending.last().and_then(|l| l.upper.clone()),
            ];
            let next = tops.into_iter().flatten().reduce(|a, b| {
                if text_cmp(&a, &b, collation).is_ge() {
                    a
                } else {
                    b
                }
            });
            let mut walk = leaf.walk.take().expect("begun when opened");
            // Nothing waiting: rows above `next` go to the page (the last
            // leaf's all do). Else every row waits.
            let straight = waiting.is_empty();
            match (straight, next) {
                (true, None) => {}
                (true, Some(next)) => page.divert(Some(next), id_column, collation),
                (false, _) => page.divert(None, id_column, collation),
            }
            walk_into(&mut leaf, &mut walk, page);
            waiting.extend(page.take_aside());
            if !straight {
                // stable: a leaf's rows of one id keep their order
                crate::unguarded::sort_by_text(&mut waiting, |w| &w.0, collation, true);
                waiting.truncate(page.want.max(0) as usize);
            }
            leaf.walk = Some(walk);
            done.push(leaf);
        }
        for (_, row) in waiting {
            if !page.add_row(row) {
                break;
            }
        }
        for walk in open.into_iter().chain(done).filter_map(|l| l.walk) {
            walk.end();
        }
    }
}

/// Leaf `leaf` opened for the merge: None when it has no row in the
/// window (its largest id, any tenant's, below it: one descent along a
/// btree led by id, which compares nothing, where the tenant's entries
/// take a search), or GIN answered it whole (a leaf the session found
/// rare for the pair: its rows added to `waiting`, kept newest first and
/// no more than the page wants); else with its walk begun and its newest
/// id in the window read.
///
/// # Safety
/// As [`fill`].
unsafe fn opened<'a>(
    mut l: Leaf<'a>,
    args: &'a Args<'a>,
    page: &mut Page,
    (id_column, collation): (i16, Oid),
    waiting: &mut Vec<(Vec<u8>, Datum)>,
) -> Option<Leaf<'a>> {
    // SAFETY: as the caller's; a walk begun and not kept is ended.
    unsafe {
        if below_window(&l) {
            return None;
        }
        if answered_whole(&mut l, args, page, (id_column, collation), waiting) {
            crate::unguarded::sort_by_text(waiting, |w| &w.0, collation, true);
            waiting.truncate(page.want.max(0) as usize);
            return None;
        }
        let mut walk = l.walk.take().unwrap_or_else(|| begin(&l, args));
        match walk.first_id() {
            Some(id) => {
                l.newest = id;
                l.walk = Some(walk);
                Some(l)
            }
            None => {
                walk.end();
                None
            }
        }
    }
}

/// Whether leaf `leaf` has no row in the call's window: its largest id,
/// from a btree led by `id` (`scan::largest_id`), is below the window's
/// floor. False when it has no such index.
///
/// # Safety
/// As [`fill`].
unsafe fn below_window(leaf: &Leaf) -> bool {
    let Some(index) = leaf.layout.id_index else {
        return false;
    };
    let cols = leaf.layout.cols;
    // SAFETY: as the caller's; the leaf is locked, its layout this epoch's.
    unsafe {
        scan::largest_id(leaf.oid, index, (cols.id, cols.id_collation)).is_some_and(|id| {
            let floor = crate::datum::varlena_bytes(leaf.call.floor);
            text_cmp(&id, floor, cols.id_collation).is_lt()
        })
    }
}

/// A leaf the session found rare for the call's pair lately, answered
/// whole by GIN (`rare::gin_in_place`): its newest matches
/// in the window, as many as the page wants, added to `waiting` (in no
/// order). Its pagination index is not read: the merge needs no newest
/// id of a leaf read whole. False, having added nothing, when the entries
/// do not answer; the walk begun is left in `leaf.walk`.
///
/// # Safety
/// As [`fill`].
unsafe fn answered_whole<'a>(
    leaf: &mut Leaf<'a>,
    args: &'a Args<'a>,
    page: &mut Page,
    (id_column, collation): (i16, Oid),
    waiting: &mut Vec<(Vec<u8>, Datum)>,
) -> bool {
    let call = &leaf.call;
    if !call.paths.gin || call.compiled.matches_nothing() {
        return false;
    }
    let routes = &leaf.table.value.as_ref().expect("prepared").routes;
    // SAFETY: the call's datums are live.
    let (Some(key), Some(_)) = (unsafe { walk::remembered(routes, call) }) else {
        return false;
    };
    // SAFETY: as the caller's; the walk begun is ended here or by the
    // merge.
    unsafe {
        let mut walk = begin(leaf, args);
        let call = &leaf.call;
        // a first page's window has no top: the ids at or after '8' too
        let upper = (!call.first_page).then_some(call.before);
        trace::page_starts(Route::RememberedKeys);
        page.divert(None, id_column, collation);
        let (answered, cost) =
            walk::timed(|| rare::gin_in_place(call, &mut walk, page, ((call.floor, false), upper)));
        waiting.extend(page.take_aside());
        if answered {
            walk.end();
            let table = leaf.table.value.as_mut().expect("prepared");
            table.routes.answered(key, cost);
        } else {
            leaf.walk = Some(walk);
        }
        answered
    }
}

/// Leaf `leaf` of `parent` checked and its caches read for the call, with
/// its statements (prepared on first use); None when it cannot be walked
/// directly. A leaf of an id range (`bounds`) is read within it: from its
/// upper bound down when that is below the call's cursor (a first page's
/// '8'), as a next page is (it holds no id at or after it, so there are
/// none to look for at the top), and down to its lower bound when that
/// is above the window's floor. The rare paths' weeks then are its own,
/// not the window's: the tenant keys of a month's leaf are not looked up
/// for the weeks of the month before.
///
/// # Safety
/// As [`fill`].
unsafe fn prepare<'a>(
    leaf: Oid,
    parent: Oid,
    args: &Args<'a>,
    bounds: Option<&partitions::IdBounds>,
) -> Option<Leaf<'a>> {
    // SAFETY: as the caller's; the leaf is locked first.
    unsafe {
        if pg_sys::get_rel_relkind(leaf) != pg_sys::RELKIND_RELATION as std::ffi::c_char {
            return None;
        }
        pg_sys::LockRelationOid(leaf, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        // The rare paths' statements name the leaf, and Postgres checks
        // the leaf's own privileges and policies on them (not on a query
        // of the partitioned table): a role that may not read the leaf as
        // it is reads through the partitioned table's statements instead.
        if !reader::plain_read(leaf) {
            return None;
        }
        let mut table = session::table(leaf, parent);
        let indexes = table.value.as_mut()?.statements.indexes.get(leaf);
        let layout = indexes.direct.filter(|_| indexes.page)?;
        let mut call = args.call(&indexes);
        let collation = layout.cols.id_collation;
        let (lower, upper) = bounds.map_or((None, None), |(l, u)| (l.as_deref(), u.as_deref()));
        if let Some(upper) = upper.filter(|_| call.ascending.is_none()) {
            let before = crate::datum::varlena_bytes(call.before);
            if text_cmp(upper, before, collation).is_lt() {
                call.before = crate::datum::text_of(upper);
                call.first_page = false;
            }
        }
        if let Some(lower) = lower {
            let floor = crate::datum::varlena_bytes(call.floor);
            if text_cmp(lower, floor, collation).is_gt() {
                call.floor = crate::datum::text_of(lower);
            }
        }
        Some(Leaf {
            oid: leaf,
            table,
            call,
            layout,
            walk: None,
            newest: Vec::new(),
            upper: upper.map(<[u8]>::to_vec),
        })
    }
}

/// The leaf's walk, begun (its relations opened).
///
/// # Safety
/// As [`fill`].
unsafe fn begin<'a>(leaf: &Leaf<'a>, args: &'a Args<'a>) -> IndexWalk<'a> {
    // SAFETY: as the caller's.
    unsafe {
        IndexWalk::begin(
            leaf.oid,
            args.relid,
            leaf.layout,
            &leaf.call,
            args.columns.as_ref().map(|(_, c)| c),
        )
    }
}

/// The leaf walked into `page`: the page walk and its rare paths.
///
/// # Safety
/// As [`fill`]; `walk` is the leaf's.
unsafe fn walk_into(leaf: &mut Leaf, walk: &mut IndexWalk, page: &mut Page) {
    let table = leaf.table.value.as_mut().expect("prepared");
    // SAFETY: as the caller's.
    unsafe {
        walk::fill(
            &mut table.statements,
            &mut table.routes,
            &leaf.call,
            walk,
            page,
        )
    }
}
