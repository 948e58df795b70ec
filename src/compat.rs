//! Everything that differs between the PostgreSQL majors the extension
//! builds for (15 to 19; the Cargo features `pg15` ... `pg19`). The
//! rest of the code calls these functions and never tests a version itself,
//! so a new major means reading this one file.

use pgrx::pg_sys;

/// Sets `search_path` for the current GUC nest level (as a function's `SET`
/// clause would), to be restored by `AtEOXact_GUC` at the end of the call or
/// by the transaction's abort on error.
///
/// # Safety
/// Must run inside a transaction, after `NewGUCNestLevel`.
pub unsafe fn set_local_search_path(value: &std::ffi::CStr) {
    // SAFETY: both strings are NUL-terminated and live for the call;
    // set_config_option copies them.
    unsafe {
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
    }
}

/// The `pg_attribute` entry of column `attno` (1-based) of a tuple
/// descriptor. PostgreSQL 18 put a `CompactAttribute` array first in
/// `TupleDescData` and the full entries after it (its `TupleDescAttr`
/// macro), where 15 and 16 have them as the `attrs` member.
///
/// # Safety
/// `tupdesc` must be valid and `attno` one of its columns.
pub unsafe fn attribute<'a>(
    tupdesc: pg_sys::TupleDesc,
    attno: i32,
) -> &'a pg_sys::FormData_pg_attribute {
    let i = attno as usize - 1;
    // SAFETY: as the caller's; the entries are laid out as each version's
    // TupleDescAttr reads them.
    unsafe {
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        let first = (*tupdesc).attrs.as_ptr();
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        let first = (*tupdesc)
            .compact_attrs
            .as_ptr()
            .add((*tupdesc).natts as usize)
            .cast::<pg_sys::FormData_pg_attribute>();
        &*first.add(i)
    }
}

/// Begins an index scan of `index` on `heap` with `nkeys` scan keys and no
/// ordering operators. PostgreSQL 18 added an instrumentation argument, 19
/// the scan's options (none here).
///
/// # Safety
/// Both relations must be open and locked; `snapshot` must outlive the scan.
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: as the caller's.
    unsafe {
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        let scan = pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0);
        #[cfg(feature = "pg18")]
        let scan = pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0);
        #[cfg(feature = "pg19")]
        let scan = pg_sys::index_beginscan(
            heap,
            index,
            snapshot,
            std::ptr::null_mut(),
            nkeys,
            0,
            pg_sys::ScanOptions::SO_NONE,
        );
        scan
    }
}

/// Begins a bitmap scan of `index` with `nkeys` scan keys. PostgreSQL 18
/// added an instrumentation argument.
///
/// # Safety
/// The index must be open and locked; `snapshot` must outlive the scan.
pub unsafe fn index_beginscan_bitmap(
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: as the caller's.
    unsafe {
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        let scan = pg_sys::index_beginscan_bitmap(index, snapshot, nkeys);
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        let scan = pg_sys::index_beginscan_bitmap(index, snapshot, std::ptr::null_mut(), nkeys);
        scan
    }
}

/// A TID bitmap of at most `work_mem` (PostgreSQL 18 takes a `Size`).
///
/// # Safety
/// Must run in a transaction; the bitmap lives in the current memory
/// context until `tbm_free`.
pub unsafe fn tbm_create() -> *mut pg_sys::TIDBitmap {
    // SAFETY: a local bitmap (no shared memory area).
    unsafe {
        let bytes = pg_sys::work_mem as usize * 1024;
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        let tbm = pg_sys::tbm_create(bytes as std::ffi::c_long, std::ptr::null_mut());
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        let tbm = pg_sys::tbm_create(bytes, std::ptr::null_mut());
        tbm
    }
}

/// Calls `page` for each heap page of a TID bitmap, in block order, with
/// its offsets, or None for a lossy page (every tuple of the page may
/// match); stops when it returns false. Returns whether every page was
/// seen. PostgreSQL 18 replaced the iterator's result array by
/// `tbm_extract_page_tuple`.
///
/// # Safety
/// `tbm` must be a live local bitmap, not iterated before.
pub unsafe fn tbm_pages(
    tbm: *mut pg_sys::TIDBitmap,
    page: &mut dyn FnMut(pg_sys::BlockNumber, Option<&[pg_sys::OffsetNumber]>) -> bool,
) -> bool {
    // SAFETY: the iterator is ended before returning; each result is read
    // before the next call.
    unsafe {
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        {
            let it = pg_sys::tbm_begin_iterate(tbm);
            let mut all = true;
            loop {
                let r = pg_sys::tbm_iterate(it);
                if r.is_null() {
                    break;
                }
                let n = (*r).ntuples;
                let offsets = (n >= 0).then(|| (*r).offsets.as_slice(n as usize));
                if !page((*r).blockno, offsets) {
                    all = false;
                    break;
                }
            }
            pg_sys::tbm_end_iterate(it);
            all
        }
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        {
            let it = pg_sys::tbm_begin_private_iterate(tbm);
            let mut r = pg_sys::TBMIterateResult::default();
            let mut offsets = [0 as pg_sys::OffsetNumber; 2048];
            let mut all = true;
            while pg_sys::tbm_private_iterate(it, &mut r) {
                let seen = if r.lossy {
                    None
                } else {
                    let n = pg_sys::tbm_extract_page_tuple(
                        &mut r,
                        offsets.as_mut_ptr(),
                        offsets.len() as u32,
                    );
                    Some(&offsets[..n.max(0) as usize])
                };
                if !page(r.blockno, seen) {
                    all = false;
                    break;
                }
            }
            pg_sys::tbm_end_private_iterate(it);
            all
        }
    }
}

/// Whether a path key sorts descending. PostgreSQL 18 replaced the btree
/// strategy number (`pk_strategy`) by a comparison type (`pk_cmptype`).
///
/// # Safety
/// `pathkey` must be a valid PathKey.
pub unsafe fn pathkey_descending(pathkey: *const pg_sys::PathKey) -> bool {
    // SAFETY: as the caller's.
    unsafe {
        #[cfg(not(any(feature = "pg18", feature = "pg19")))]
        let descending = (*pathkey).pk_strategy == pg_sys::BTGreaterStrategyNumber as i32;
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        let descending = (*pathkey).pk_cmptype == pg_sys::CompareType::COMPARE_GT;
        descending
    }
}

/// Whether ordering operator `op` is a btree `>` (sorts descending).
/// PostgreSQL 18 answers with a comparison type where 15 and 16 give the
/// btree strategy number.
///
/// # Safety
/// In a transaction (reads the syscache).
pub unsafe fn ordering_op_descending(op: pg_sys::Oid) -> bool {
    let (mut family, mut input) = (pg_sys::InvalidOid, pg_sys::InvalidOid);
    #[cfg(not(any(feature = "pg18", feature = "pg19")))]
    let (mut how, greater) = (0i16, pg_sys::BTGreaterStrategyNumber as i16);
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    let (mut how, greater) = (
        pg_sys::CompareType::COMPARE_INVALID,
        pg_sys::CompareType::COMPARE_GT,
    );
    // SAFETY: as the caller's; the out-parameters are ours.
    unsafe {
        pg_sys::get_ordering_op_properties(op, &mut family, &mut input, &mut how) && how == greater
    }
}

/// Asks for a heap-tuple scan slot for a custom scan node being created,
/// where the version lets the node say so: PostgreSQL 16 added
/// `CustomScanState.slotOps`, which `ExecInitCustomScan` reads. On 15 the
/// slot is virtual until [`heap_scan_slot_begun`] makes it again.
///
/// # Safety
/// `css` must be a node just allocated by `CreateCustomScanState`.
pub unsafe fn heap_scan_slot_asked(css: *mut pg_sys::CustomScanState) {
    #[cfg(not(feature = "pg15"))]
    // SAFETY: as the caller's; the ops are Postgres' own static table.
    unsafe {
        (*css).slotOps = &raw const pg_sys::TTSOpsHeapTuple;
    }
    #[cfg(feature = "pg15")]
    let _ = css;
}

/// On PostgreSQL 15, in `BeginCustomScan`: the virtual scan slot
/// `ExecInitCustomScan` made is replaced by a heap-tuple one, and what was
/// compiled for the slot's type (the projection and the quals, whose
/// column fetches are left out for a virtual slot, also by JIT) is built
/// again for the new one, as 16's `ExecInitCustomScan` builds them. A
/// no-op on 16 and later ([`heap_scan_slot_asked`]).
///
/// # Safety
/// `css` must be a node of a plan with a `scanrelid` and no
/// `custom_scan_tlist`, its relation open, in `BeginCustomScan`.
pub unsafe fn heap_scan_slot_begun(css: *mut pg_sys::CustomScanState, estate: *mut pg_sys::EState) {
    #[cfg(feature = "pg15")]
    // SAFETY: as the caller's; the old slot and expressions stay in the
    // query's memory, unused.
    unsafe {
        let ss = &raw mut (*css).ss;
        let plan = (*css).ss.ps.plan as *mut pg_sys::CustomScan;
        let desc = (*(*ss).ss_currentRelation).rd_att;
        pg_sys::ExecInitScanTupleSlot(estate, ss, desc, &raw const pg_sys::TTSOpsHeapTuple);
        pg_sys::ExecAssignScanProjectionInfoWithVarno(ss, (*plan).scan.scanrelid as i32);
        (*css).ss.ps.qual = pg_sys::ExecInitQual((*plan).scan.plan.qual, css.cast());
    }
    #[cfg(not(feature = "pg15"))]
    let _ = (css, estate);
}

/// Whether a table's `CHECK` constraint holds for every row it has: it is
/// validated, and (PostgreSQL 18's `NOT ENFORCED`) enforced.
pub fn check_holds(check: &pg_sys::ConstrCheck) -> bool {
    #[cfg(not(any(feature = "pg18", feature = "pg19")))]
    let enforced = true;
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    let enforced = check.ccenforced;
    enforced && check.ccvalid
}

/// The `CHECK` constraints of open relation `rel` that hold for every row
/// ([`check_holds`]), each with its name and expression tree (made in the
/// current memory context).
///
/// # Safety
/// `rel` is open, and stays so while the iterator is used.
pub unsafe fn holding_checks(
    rel: pg_sys::Relation,
) -> impl Iterator<Item = (*const std::ffi::c_char, *mut pg_sys::Node)> {
    // SAFETY: as the caller's; the array is read within its length.
    unsafe {
        let constr = (*(*rel).rd_att).constr;
        let n = if constr.is_null() {
            0
        } else {
            usize::from((*constr).num_check)
        };
        (0..n).filter_map(move |i| {
            let check = &*(*constr).check.add(i);
            (check_holds(check) && !check.ccbin.is_null()).then(|| {
                let node = pg_sys::stringToNode(check.ccbin).cast::<pg_sys::Node>();
                (check.ccname.cast_const(), node)
            })
        })
    }
}

/// Whether a `pg_constraint` row holds for every row of its table:
/// validated, and (PostgreSQL 18's `NOT ENFORCED`) enforced.
pub fn constraint_row_holds(form: &pg_sys::FormData_pg_constraint) -> bool {
    #[cfg(not(any(feature = "pg18", feature = "pg19")))]
    let enforced = true;
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    let enforced = form.conenforced;
    enforced && form.convalidated
}

/// Role `role`'s privilege `mode` on schema `namespace`. PostgreSQL 16
/// replaced `pg_namespace_aclcheck` with the generic `object_aclcheck`.
///
/// # Safety
/// Inside a transaction.
pub unsafe fn namespace_aclcheck(
    namespace: pg_sys::Oid,
    role: pg_sys::Oid,
    mode: pg_sys::AclMode,
) -> pg_sys::AclResult::Type {
    // SAFETY: a catalog lookup.
    unsafe {
        #[cfg(feature = "pg15")]
        return pg_sys::pg_namespace_aclcheck(namespace, role, mode);
        #[cfg(not(feature = "pg15"))]
        return pg_sys::object_aclcheck(pg_sys::NamespaceRelationId, namespace, role, mode);
    }
}

/// A syscache's number as `SearchSysCache1` takes it: PostgreSQL 19's
/// `SysCacheIdentifier` is already an `int`, 15 to 18's an unsigned enum.
#[allow(clippy::unnecessary_cast)]
pub fn cache_id(id: pg_sys::SysCacheIdentifier::Type) -> i32 {
    id as i32
}

pub mod buffers;
pub mod planner;
pub use buffers::{lock_buffer_share, unlock_buffer};
pub use planner::PlannerCall;
