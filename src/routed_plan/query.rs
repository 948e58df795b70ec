//! The routed statement as a query: the page's SQL with its arguments as
//! parameters (`search::planned_sql`), parsed and rewritten as any query,
//! then each parameter replaced by the call's own expression, and the
//! call's columns selected in the call's order.

use pgrx::pg_sys;

use super::call::LoneCall;

/// The parameters' types, in `search::planned_sql`'s order.
const TYPES: [pg_sys::Oid; 5] = [
    pg_sys::TEXTOID,
    pg_sys::JSONBOID,
    pg_sys::TIMESTAMPTZOID,
    pg_sys::INT4OID,
    pg_sys::TEXTOID,
];

/// The query `parse` (a lone call, `call`) is planned as: `q` (the page's
/// SQL parsed, [`parsed`]) with the call's arguments, selecting the
/// columns `parse` selects. None when it has a form this does not know
/// (the call is then planned as it is).
///
/// # Safety
/// A query being planned and its call; `q` is a copy of the parsed page
/// of the call's table, edited here.
pub unsafe fn routed_query(
    parse: *mut pg_sys::Query,
    call: &LoneCall,
    q: *mut pg_sys::Query,
) -> Option<*mut pg_sys::Query> {
    // SAFETY: the copy's nodes are edited in place; the original query is
    // only read.
    unsafe {
        let params = call.params();
        (*q).jointree.as_mut()?.quals = substituted((*(*q).jointree).quals, &params)?;
        (*q).limitCount = substituted((*q).limitCount, &params)?;
        (*q).targetList = call_columns((*parse).targetList, q)?;
        (*q).canSetTag = (*parse).canSetTag;
        (*q).querySource = (*parse).querySource;
        (*q).queryId = (*parse).queryId;
        (*q).stmt_location = (*parse).stmt_location;
        (*q).stmt_len = (*parse).stmt_len;
        Some(q)
    }
}

/// `sql` parsed, analyzed and rewritten with `n` parameters, names
/// resolved by `pg_catalog` alone (as the search's own statements): the
/// one query it is, or None when a row security policy applies to it.
///
/// # Safety
/// In a transaction.
pub unsafe fn parsed(sql: &str, n: usize) -> Option<*mut pg_sys::Query> {
    let text = std::ffi::CString::new(sql).ok()?;
    // SAFETY: as the caller's; the nest level restores the path, and an
    // ERROR aborts the transaction, which restores it too.
    unsafe {
        let level = pg_sys::NewGUCNestLevel();
        crate::compat::set_local_search_path(c"pg_catalog, pg_temp");
        let raw = pg_sys::pg_parse_query(text.as_ptr());
        let stmt = crate::pg_list::nth::<pg_sys::RawStmt>(raw, 0);
        let queries = stmt.map(|s| {
            pg_sys::pg_analyze_and_rewrite_fixedparams(
                s,
                text.as_ptr(),
                TYPES.as_ptr(),
                n as i32,
                std::ptr::null_mut(),
            )
        });
        pg_sys::AtEOXact_GUC(true, level);
        let queries = queries?;
        if crate::pg_list::len(queries) != 1 {
            return None;
        }
        let q = crate::pg_list::nth::<pg_sys::Query>(queries, 0)?;
        (!(*q).hasRowSecurity).then_some(q)
    }
}

/// `node` with each parameter `$k` replaced by `params[k - 1]` (a copy):
/// None when a node is of a kind the page's SQL does not have.
///
/// # Safety
/// `node` is an expression of the parsed page (or null).
unsafe fn substituted(
    node: *mut pg_sys::Node,
    params: &[*mut pg_sys::Node],
) -> Option<*mut pg_sys::Node> {
    // SAFETY: each node's tag is read before it is cast; lists are edited
    // in place.
    unsafe {
        if node.is_null() {
            return Some(node);
        }
        let args = match (*node).type_ {
            pg_sys::NodeTag::T_Param => {
                let p = node as *mut pg_sys::Param;
                let k = usize::try_from((*p).paramid).ok()?.checked_sub(1)?;
                if (*p).paramkind != pg_sys::ParamKind::PARAM_EXTERN || k >= params.len() {
                    return None;
                }
                return Some(pg_sys::copyObjectImpl(params[k].cast()).cast());
            }
            pg_sys::NodeTag::T_Var | pg_sys::NodeTag::T_Const => return Some(node),
            pg_sys::NodeTag::T_RelabelType => {
                let r = node as *mut pg_sys::RelabelType;
                (*r).arg = substituted((*r).arg.cast(), params)?.cast();
                return Some(node);
            }
            pg_sys::NodeTag::T_NullTest => {
                let t = node as *mut pg_sys::NullTest;
                (*t).arg = substituted((*t).arg.cast(), params)?.cast();
                return Some(node);
            }
            pg_sys::NodeTag::T_OpExpr => (*(node as *mut pg_sys::OpExpr)).args,
            pg_sys::NodeTag::T_FuncExpr => (*(node as *mut pg_sys::FuncExpr)).args,
            pg_sys::NodeTag::T_BoolExpr => (*(node as *mut pg_sys::BoolExpr)).args,
            _ => return None,
        };
        for i in 0..crate::pg_list::len(args) {
            let cell = (*args).elements.add(i);
            (*cell).ptr_value = substituted((*cell).ptr_value.cast(), params)?.cast();
        }
        Some(node)
    }
}

/// The target list of the routed query `q` for the columns the call's
/// query selects (`call_tlist`, each a column of the call's row type, in
/// its order and with its names), and the page's sort key after them,
/// unseen.
///
/// # Safety
/// `q` selects each live column of the table once, as the page's SQL
/// does; `call_tlist` is a lone call's.
unsafe fn call_columns(
    call_tlist: *mut pg_sys::List,
    q: *mut pg_sys::Query,
) -> Option<*mut pg_sys::List> {
    // SAFETY: the queries' nodes; the entries are copies.
    unsafe {
        let routed: Vec<*mut pg_sys::TargetEntry> = crate::pg_list::ptrs((*q).targetList).collect();
        let column_of = |tle: *mut pg_sys::TargetEntry| -> Option<i16> {
            let mut e = (*tle).expr as *mut pg_sys::Node;
            if (*e).type_ == pg_sys::NodeTag::T_FuncExpr {
                e = crate::pg_list::nth((*(e as *mut pg_sys::FuncExpr)).args, 0)?;
            }
            ((*e).type_ == pg_sys::NodeTag::T_Var).then(|| (*(e as *mut pg_sys::Var)).varattno)
        };
        let sort = crate::pg_list::nth::<pg_sys::SortGroupClause>((*q).sortClause, 0)?;
        let mut out: *mut pg_sys::List = std::ptr::null_mut();
        for (i, wanted) in crate::pg_list::ptrs::<pg_sys::TargetEntry>(call_tlist).enumerate() {
            let attno = (*((*wanted).expr as *mut pg_sys::Var)).varattno;
            let from = *routed.iter().find(|&&t| column_of(t) == Some(attno))?;
            let tle = pg_sys::copyObjectImpl(from.cast()) as *mut pg_sys::TargetEntry;
            (*tle).resno = (i + 1) as i16;
            (*tle).resname = (*wanted).resname;
            (*tle).ressortgroupref = 0;
            out = pg_sys::lappend(out, tle.cast());
        }
        let key = pg_sys::get_sortgroupclause_tle(sort, (*q).targetList);
        let key = pg_sys::copyObjectImpl(key.cast()) as *mut pg_sys::TargetEntry;
        (*key).resno = (crate::pg_list::len(out) + 1) as i16;
        (*key).resname = std::ptr::null_mut();
        (*key).resjunk = true;
        Some(pg_sys::lappend(out, key.cast()))
    }
}
