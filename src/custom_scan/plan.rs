//! The plan made of the node's path: the quals the executor still tests,
//! the search's values (`custom_exprs`), their shape and the partitions
//! the plan read (`custom_private`), with the path's and the plan's
//! method tables.

use pgrx::pg_sys;

use super::shape::{Shape, NAME};

/// The methods of the path and the plan. Postgres keeps pointers to them;
/// they are never written after load.
pub(super) static mut PATH_METHODS: pg_sys::CustomPathMethods = pg_sys::CustomPathMethods {
    CustomName: NAME.as_ptr(),
    PlanCustomPath: Some(plan),
    ReparameterizeCustomPathByChild: None,
};
pub(super) static mut SCAN_METHODS: pg_sys::CustomScanMethods = pg_sys::CustomScanMethods {
    CustomName: NAME.as_ptr(),
    CreateCustomScanState: Some(super::exec::create_state),
};

/// `PlanCustomPath`: the plan of our path. Every qual stays with the
/// executor but the tenant's equality and the `id` bounds the search's
/// window keeps exactly, and the containments the node tests itself; the
/// search's values and those containments travel in `custom_exprs`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    clauses: *mut pg_sys::List,
    _custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: planner nodes; the plan is built in the planner's memory.
    unsafe {
        // what the offer put there (path.rs)
        let [exprs, ints, guaranteed] = crate::pg_list::cells((*best_path).custom_private) else {
            panic!("the path's custom_private holds three lists");
        };
        let (exprs, ints, guaranteed): (*mut pg_sys::List, *mut pg_sys::List, *mut pg_sys::List) = (
            exprs.ptr_value.cast(),
            ints.ptr_value.cast(),
            guaranteed.ptr_value.cast(),
        );
        let cscan =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()) as *mut pg_sys::CustomScan;
        (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
        (*cscan).scan.plan.targetlist = tlist;
        // every qual but those the node holds exactly (quals.rs)
        let mut qual: *mut pg_sys::List = std::ptr::null_mut();
        for rinfo in crate::pg_list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            if !(*rinfo).pseudoconstant && !pg_sys::list_member_ptr(guaranteed, rinfo.cast()) {
                qual = pg_sys::lappend(qual, (*rinfo).clause.cast());
            }
        }
        (*cscan).scan.plan.qual = qual;
        (*cscan).scan.scanrelid = (*rel).relid;
        (*cscan).flags = (*best_path).flags;
        (*cscan).custom_exprs = pg_sys::copyObjectImpl(exprs.cast()).cast();
        // the shape, and the partitions of a partitioned table searched
        // whole as this plan reads them (`search::partitions::planned_tree`)
        let shape = Shape::from_list(ints);
        let tree = shape.partitioned.then(|| {
            let relid = (**(*root).simple_rte_array.add((*rel).relid as usize)).relid;
            crate::search::partitions::planned_tree(root, relid)
        });
        (*cscan).custom_private = shape.to_private(tree.as_deref());
        (*cscan).methods = &raw const SCAN_METHODS;
        cscan.cast()
    }
}
