//! EXPLAIN of the node: how its pages are found, and with ANALYZE what
//! its searches did.

use pgrx::pg_sys;

use super::super::shape::Shape;
use crate::search::trace::Trace;

/// `ExplainCustomScan`: the containments the node tests (`held.rs`), how
/// pages are found; with ANALYZE, what the searches did.
#[pgrx::pg_guard]
pub(super) unsafe extern "C-unwind" fn explain(
    node: *mut pg_sys::CustomScanState,
    ancestors: *mut pg_sys::List,
    es: *mut pg_sys::ExplainState,
) {
    // SAFETY: the node is ours and begun; the shape's columns are the
    // table's.
    unsafe {
        let run = &*(*(node as *mut super::State)).run;
        super::held::explain(node, ancestors, es, run.shape.held, run.removed);
        let columns = run
            .shape
            .columns
            .iter()
            .map(|&(attno, _)| {
                crate::columns::name_of(crate::compat::attribute(run.desc, attno as i32))
            })
            .collect();
        // planned as one relation (`one_rel.rs`): its range table entry
        // left unexpanded
        let scan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
        let rte = crate::pg_list::nth::<pg_sys::RangeTblEntry>(
            (*(*node).ss.ps.state).es_range_table,
            (*scan).scan.scanrelid as usize - 1,
        );
        let one_rel = rte.is_some_and(|rte| !(*rte).inh);
        properties(es, &run.shape, run.pages, &run.trace, columns, one_rel);
    }
}

/// How pages are found; with ANALYZE, what the searches did.
///
/// # Safety
/// `es` is the running EXPLAIN's state; `columns` the names of the
/// columns tested in the search.
unsafe fn properties(
    es: *mut pg_sys::ExplainState,
    shape: &Shape,
    pages: u64,
    trace: &Trace,
    columns: Vec<String>,
    one_rel: bool,
) {
    // SAFETY: strings are copied by EXPLAIN.
    unsafe {
        let text = |label: &std::ffi::CStr, value: &str| {
            let v = std::ffi::CString::new(value).expect("no NUL");
            pg_sys::ExplainPropertyText(label.as_ptr(), v.as_ptr(), es);
        };
        let int = |label: &std::ffi::CStr, value: u64| {
            pg_sys::ExplainPropertyInteger(label.as_ptr(), std::ptr::null(), value as i64, es);
        };
        text(
            c"Route",
            "chosen per page from the filter: walk of the pagination index, then tenant keys or GIN when rare",
        );
        let mut first = if shape.count {
            "LIMIT + OFFSET rows".to_string()
        } else {
            "50 rows".to_string()
        };
        if shape.merged {
            first = format!("1 row (a partition read in a merge), then {first}");
        }
        text(c"First Page", &first);
        if shape.partitioned {
            text(
                c"Partitions",
                "searched whole: each partition's index walked, in turn when partitioned by id ranges, else rows merged by id",
            );
            if one_rel {
                text(c"Planned", "as one relation, its partitions not planned");
            }
        }
        if shape.ascending {
            text(c"Order", "oldest first (id ascending)");
        }
        if shape.reader != 0 {
            // the role Postgres reads the table as (a view's owner): its
            // searches run as it
            let name = pg_sys::GetUserNameFromId(shape.reader.into(), true);
            let name = if name.is_null() {
                shape.reader.to_string()
            } else {
                crate::datum::cstr_owned(name)
            };
            text(c"Reads As", &format!("{name} (the view's owner)"));
        }
        if !columns.is_empty() {
            text(c"Columns Tested In Search", &columns.join(", "));
        }
        if shape.implied_lower + shape.implied_upper > 0 {
            text(
                c"Window From",
                "the time bounds, by the table's alerts_ulid_near constraint",
            );
        }
        if !shape.ids_unique {
            text(
                c"Ids Unique",
                "no (rows sharing a page's last id are read whole)",
            );
        }
        if (*es).analyze {
            let t = trace;
            int(c"Pages", pages);
            let routes: Vec<String> = crate::search::trace::Route::ALL
                .iter()
                .zip(t.pages)
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| format!("{} x{n}", r.label()))
                .collect();
            if !routes.is_empty() {
                text(c"Routes Taken", &routes.join(", "));
            }
            if let Some((hits, entries)) = t.left_after {
                text(
                    c"Left The Walk",
                    &format!("after {hits} matches in {entries} entries (rare: the cheaper path answers the rest)"),
                );
            }
            int(c"Index Entries Walked", t.entries);
            int(c"Rows Rechecked", t.candidates);
            int(c"Bloom False Positives", t.candidates - t.matches);
            if t.skipped_by_check > 0 {
                int(c"Partitions Skipped By CHECK", t.skipped_by_check);
            }
            if t.pruned_by_time > 0 {
                int(c"Partitions Pruned By Time", t.pruned_by_time);
            }
        }
    }
}

/// Adds what one page's search did to what the node's searches did.
pub fn add_trace(total: &mut Trace, t: Trace) {
    total.entries += t.entries;
    total.candidates += t.candidates;
    total.matches += t.matches;
    total.skipped_by_check += t.skipped_by_check;
    total.pruned_by_time += t.pruned_by_time;
    for (a, b) in total.pages.iter_mut().zip(t.pages) {
        *a += b;
    }
    if t.left_after.is_some() {
        total.left_after = t.left_after;
    }
}
