//! The query's containments (`attribute_values @> value`) and filters
//! (`alerts_attrs_match(attribute_values, filter)`) the node tests itself,
//! where the executor would test them again on every row it returns
//! (`quals::Usable::held`).
//!
//! A page's rows passed the search's filter, which they imply
//! (`containment::implied_filter`). Where the filter tests what the
//! containments ask but for accepting an array holding the value, and
//! keeps each filter's clauses as they are (`containment::whole_keys`:
//! strings and booleans), the search is told the containments' keys
//! (`Args::whole`) and the direct walk's exact check refuses an array
//! there: its rows need nothing more (`search::rows` says which pages are
//! so). Rows of statements (the statement walk, the rare paths) get one
//! key lookup per key, that the value is not an array. Otherwise, and on
//! the rows of a repeated id (read whole, by no filter), the node
//! evaluates the quals themselves, as the executor would have.

use pgrx::pg_sys;

use super::Run;

/// The plan's values (each initialised alone) and its containments (as
/// one qual, null when there are none), from `custom_exprs`.
///
/// # Safety
/// `cscan` is the node's plan and `ps` its state, being begun.
pub(super) unsafe fn init(
    cscan: *mut pg_sys::CustomScan,
    ps: *mut pg_sys::PlanState,
    held: usize,
) -> (Vec<*mut pg_sys::ExprState>, *mut pg_sys::ExprState) {
    // SAFETY: as the caller's.
    unsafe {
        let list = (*cscan).custom_exprs;
        let n = crate::pg_list::len(list) - held;
        let values = crate::pg_list::ptrs::<pg_sys::Expr>(list)
            .take(n)
            .map(|e| pg_sys::ExecInitExpr(e, ps))
            .collect();
        let qual = if held == 0 {
            std::ptr::null_mut()
        } else {
            pg_sys::ExecInitQual(pg_sys::list_copy_tail(list, n as i32), ps)
        };
        (values, qual)
    }
}

impl Run {
    /// Whether the row in `slot` (`self.current`) holds the query's
    /// containments; a row that does not is counted.
    ///
    /// # Safety
    /// `slot` holds the row; `econtext` is the node's.
    pub(super) unsafe fn holds(
        &mut self,
        slot: *mut pg_sys::TupleTableSlot,
        econtext: *mut pg_sys::ExprContext,
    ) -> bool {
        if self.held.is_null() {
            return true;
        }
        // SAFETY: the row is live; what is read or computed goes to the
        // row's memory, reset by the executor before the next row.
        let keep = unsafe {
            let old = pg_sys::MemoryContextSwitchTo((*econtext).ecxt_per_tuple_memory);
            let keep = match &self.whole {
                // the search's exact check refused arrays there, or
                // there are none to look for
                Some(keys) if self.ready_filtered && (self.ready_whole || keys.is_empty()) => true,
                Some(keys) if self.ready_filtered => {
                    let mut isnull = false;
                    let attrs = pg_sys::heap_getattr(
                        &mut self.current,
                        self.shape.attrs.into(),
                        self.desc,
                        &mut isnull,
                    );
                    !isnull && crate::jsonb::no_array_at(attrs, keys)
                }
                _ => {
                    (*econtext).ecxt_scantuple = slot;
                    let qual = self.held;
                    let eval = (*qual).evalfunc.expect("an initialised qual");
                    let mut isnull = false;
                    // an ERROR comes back as a panic through the guard and
                    // is raised again where the executor called the node
                    let d =
                        pg_sys::ffi::pg_guard_ffi_boundary(|| eval(qual, econtext, &mut isnull));
                    !isnull && d.value() != 0
                }
            };
            pg_sys::MemoryContextSwitchTo(old);
            if !keep {
                pg_sys::MemoryContextReset((*econtext).ecxt_per_tuple_memory);
            }
            keep
        };
        self.removed += u64::from(!keep);
        keep
    }
}

/// EXPLAIN of the containments: the expression, and with ANALYZE the rows
/// they removed.
///
/// # Safety
/// `node` is the begun node, `es` the running EXPLAIN's state.
pub(super) unsafe fn explain(
    node: *mut pg_sys::CustomScanState,
    ancestors: *mut pg_sys::List,
    es: *mut pg_sys::ExplainState,
    held: usize,
    removed: u64,
) {
    if held == 0 {
        return;
    }
    // SAFETY: as the caller's; the expressions are the plan's.
    unsafe {
        let plan = (*node).ss.ps.plan;
        let list = (*(plan as *mut pg_sys::CustomScan)).custom_exprs;
        let tail = pg_sys::list_copy_tail(list, (crate::pg_list::len(list) - held) as i32);
        let context = pg_sys::set_deparse_context_plan((*es).deparse_cxt, plan, ancestors);
        let prefix = (*es).verbose; // as Postgres shows a scan's quals
        let text = pg_sys::deparse_expression(
            pg_sys::make_ands_explicit(tail).cast(),
            context,
            prefix,
            false,
        );
        pg_sys::ExplainPropertyText(c"Attribute Filter".as_ptr(), text, es);
        // as Postgres shows its filters' count: in text, when not 0
        if (*es).analyze
            && (removed > 0 || (*es).format != pg_sys::ExplainFormat::EXPLAIN_FORMAT_TEXT)
        {
            pg_sys::ExplainPropertyInteger(
                c"Rows Removed by Attribute Filter".as_ptr(),
                std::ptr::null(),
                removed as i64,
                es,
            );
        }
    }
}
