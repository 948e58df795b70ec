//! A query that is only an `alerts_search` call, and its arguments, when
//! a plan can hold them: each checked as the function checks it, so that
//! a call the function would refuse is left to the function and its
//! ERROR.

use pgrx::pg_sys::{self, Datum, Oid};

/// A lone call's arguments, as the planner's expressions: constants the
/// function takes, or parameters of the query (checked when it runs,
/// [`LoneCall::run_checked`]), and `since` also now's time less or plus a
/// constant interval.
pub struct LoneCall {
    pub funcid: Oid,
    pub relid: Oid,
    /// The tenant when it is a constant.
    pub org: Option<Datum>,
    pub args: [*mut pg_sys::Node; 4],
    /// The cursor: None on a first page (a NULL constant), else the
    /// expression and whether it is a constant (a parameter may be NULL).
    pub before: Option<(*mut pg_sys::Node, bool)>,
}

impl LoneCall {
    /// The statement's parameters in the order `search::planned_sql`
    /// numbers them.
    pub fn params(&self) -> Vec<*mut pg_sys::Node> {
        let mut p = self.args.to_vec();
        p.extend(self.before.map(|b| b.0));
        p
    }

    /// The arguments to check when the plan runs (tenant, filter, since,
    /// page size): None when none is a parameter (constants were checked
    /// here).
    pub fn run_checked(&self) -> Option<[*mut pg_sys::Node; 4]> {
        // SAFETY: the arguments are expressions.
        let param = |n: &*mut pg_sys::Node| unsafe { (**n).type_ != pg_sys::NodeTag::T_Const };
        self.args.iter().any(param).then_some(self.args)
    }
}

/// The call when `parse` is a query of one `alerts_search` call in `FROM`
/// and nothing else (its columns selected as they are, in any order) with
/// arguments a plan can hold (no column filter); None for any other
/// query.
///
/// # Safety
/// A query being planned.
pub unsafe fn lone_call(parse: *mut pg_sys::Query) -> Option<LoneCall> {
    // SAFETY: the query's nodes, read; the call's arguments are copied
    // before they are simplified.
    unsafe {
        let q = &*parse;
        if q.commandType != pg_sys::CmdType::CMD_SELECT
            || !q.utilityStmt.is_null()
            || q.hasAggs
            || q.hasWindowFuncs
            || q.hasTargetSRFs
            || q.hasSubLinks
            || q.hasDistinctOn
            || q.hasRecursive
            || q.hasModifyingCTE
            || q.hasForUpdate
            || q.hasRowSecurity
            || !q.cteList.is_null()
            || !q.groupClause.is_null()
            || !q.groupingSets.is_null()
            || !q.havingQual.is_null()
            || !q.windowClause.is_null()
            || !q.distinctClause.is_null()
            || !q.sortClause.is_null()
            || !q.limitCount.is_null()
            || !q.limitOffset.is_null()
            || !q.rowMarks.is_null()
            || !q.setOperations.is_null()
            || crate::pg_list::len(q.rtable) != 1
            || q.jointree.is_null()
            || !(*q.jointree).quals.is_null()
            || crate::pg_list::len((*q.jointree).fromlist) != 1
            || crate::pg_list::len(q.targetList) == 0
        {
            return None;
        }
        let rte = crate::pg_list::nth::<pg_sys::RangeTblEntry>(q.rtable, 0)?;
        let from = crate::pg_list::nth::<pg_sys::Node>((*q.jointree).fromlist, 0)?;
        if (*rte).rtekind != pg_sys::RTEKind::RTE_FUNCTION
            || (*rte).funcordinality
            || crate::pg_list::len((*rte).functions) != 1
            || (*from).type_ != pg_sys::NodeTag::T_RangeTblRef
            || (*(from as *mut pg_sys::RangeTblRef)).rtindex != 1
        {
            return None;
        }
        for tle in crate::pg_list::ptrs::<pg_sys::TargetEntry>(q.targetList) {
            let var = (*tle).expr as *mut pg_sys::Var;
            if (*tle).resjunk
                || (*var).xpr.type_ != pg_sys::NodeTag::T_Var
                || (*var).varno != 1
                || (*var).varlevelsup != 0
                || (*var).varattno < 1
            {
                return None;
            }
        }
        let rtfunc = crate::pg_list::nth::<pg_sys::RangeTblFunction>((*rte).functions, 0)?;
        let f = (*rtfunc).funcexpr as *mut pg_sys::FuncExpr;
        if (*f).xpr.type_ != pg_sys::NodeTag::T_FuncExpr || !is_alerts_search((*f).funcid) {
            return None;
        }
        // Named and defaulted arguments in place, constants folded (a
        // stable expression such as `now() - interval '30 days'` stays).
        let f = pg_sys::eval_const_expressions(
            std::ptr::null_mut(),
            pg_sys::copyObjectImpl(f.cast()).cast(),
        ) as *mut pg_sys::FuncExpr;
        if (*f).xpr.type_ != pg_sys::NodeTag::T_FuncExpr {
            return None;
        }
        let args: Vec<*mut pg_sys::Node> = crate::pg_list::ptrs((*f).args).collect();
        if args.len() < 6 {
            return None;
        }
        let relid = match constant(args[0]) {
            Some((c, _)) => pg_sys::get_typ_typrelid((*c).consttype),
            None => pg_sys::InvalidOid,
        };
        // each a value the function takes, or a parameter of its type
        let org = value_or_param(args[1], pg_sys::TEXTOID)?;
        let filter = value_or_param(args[2], pg_sys::JSONBOID)?;
        let page_size = value_or_param(args[5], pg_sys::INT4OID)?;
        let no_columns = args
            .get(6)
            .is_none_or(|&a| matches!(constant(a), Some((_, None))));
        let before = match constant(args[4]) {
            Some((_, None)) => None,
            Some(_) => Some((args[4], true)),
            None => Some((args[4], false)),
        };
        if relid == pg_sys::InvalidOid
            || !no_columns
            || (before.is_some_and(|b| !b.1) && !is_param(args[4], pg_sys::TEXTOID))
            || page_size.is_some_and(|s| (s.value() as i32) < 1)
            || filter.is_some_and(|f| {
                alerts_core::Filter::compile(&crate::datum::jsonb_value(f)).is_err()
            })
            || !(since_holds(args[3]) || is_param(args[3], pg_sys::TIMESTAMPTZOID))
        {
            return None;
        }
        Some(LoneCall {
            funcid: (*f).funcid,
            relid,
            org,
            args: [args[1], args[2], args[3], args[5]],
            before,
        })
    }
}

/// `node`'s value when it is a constant the function takes (not NULL),
/// None when it is a parameter of type `typ` (its value checked when the
/// plan runs), or no answer (None outside) for anything else.
///
/// # Safety
/// `node` is an expression.
unsafe fn value_or_param(node: *mut pg_sys::Node, typ: Oid) -> Option<Option<Datum>> {
    // SAFETY: as the caller's.
    unsafe {
        match constant(node) {
            Some((_, Some(v))) => Some(Some(v)),
            Some((_, None)) => None,
            None => is_param(node, typ).then_some(None),
        }
    }
}

/// Whether `node` is a parameter of the query of type `typ`, as it is or
/// through casts (a driver's `$3::timestamptz` of a text value, or an
/// `int2` for an `integer`): its value is the same wherever the plan
/// evaluates it.
///
/// # Safety
/// `node` is an expression.
unsafe fn is_param(node: *mut pg_sys::Node, typ: Oid) -> bool {
    // SAFETY: each tag is read before the cast.
    unsafe {
        if pg_sys::exprType(node) != typ {
            return false;
        }
        let mut e = node;
        loop {
            e = match (*e).type_ {
                pg_sys::NodeTag::T_Param => {
                    return (*(e as *mut pg_sys::Param)).paramkind
                        == pg_sys::ParamKind::PARAM_EXTERN;
                }
                pg_sys::NodeTag::T_RelabelType => (*(e as *mut pg_sys::RelabelType)).arg.cast(),
                pg_sys::NodeTag::T_CoerceViaIO => (*(e as *mut pg_sys::CoerceViaIO)).arg.cast(),
                pg_sys::NodeTag::T_FuncExpr => {
                    let f = e as *mut pg_sys::FuncExpr;
                    let cast = matches!(
                        (*f).funcformat,
                        pg_sys::CoercionForm::COERCE_IMPLICIT_CAST
                            | pg_sys::CoercionForm::COERCE_EXPLICIT_CAST
                    );
                    match crate::pg_list::nth::<pg_sys::Node>((*f).args, 0) {
                        Some(arg) if cast && crate::pg_list::len((*f).args) == 1 => arg,
                        _ => return false,
                    }
                }
                _ => return false,
            };
        }
    }
}

/// `node` as a constant and its value (None: NULL).
///
/// # Safety
/// `node` is an expression.
unsafe fn constant(node: *mut pg_sys::Node) -> Option<(*mut pg_sys::Const, Option<Datum>)> {
    // SAFETY: the node's tag is read before it is cast.
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_Const {
            return None;
        }
        let c = node as *mut pg_sys::Const;
        Some((c, (!(*c).constisnull).then_some((*c).constvalue)))
    }
}

/// Whether function `funcid` is this library's `alerts_search` (whatever
/// its schema or name: the C function it calls).
///
/// # Safety
/// A transaction is open.
unsafe fn is_alerts_search(funcid: Oid) -> bool {
    // SAFETY: a catalog read of a function the query names; the lookup's
    // memory is the planner's.
    unsafe {
        if pg_sys::get_func_rettype(funcid) != pg_sys::ANYELEMENTOID {
            return false;
        }
        let mut finfo = pg_sys::FmgrInfo::default();
        pg_sys::fmgr_info(funcid, &mut finfo);
        finfo.fn_addr.map(|f| f as usize)
            == Some(crate::search::alerts_search as *const () as usize)
    }
}

/// Whether `since` is a value the function would take (not NULL, within
/// the ULID range) in every execution of the plan: a constant it takes,
/// or now's time (`now()`, `CURRENT_TIMESTAMP`, `statement_timestamp()`)
/// less or plus a constant interval (its arithmetic's own ERROR, if any,
/// is the same in both).
///
/// # Safety
/// `since` is an expression.
unsafe fn since_holds(since: *mut pg_sys::Node) -> bool {
    // SAFETY: each node's tag is read before it is cast.
    unsafe {
        if let Some((_, value)) = constant(since) {
            return value.is_some_and(|v| {
                alerts_core::ulid::unix_ms_of_pg_timestamp(v.value() as i64).is_some()
            });
        }
        if (*since).type_ != pg_sys::NodeTag::T_OpExpr {
            return false;
        }
        let op = since as *mut pg_sys::OpExpr;
        let args: Vec<*mut pg_sys::Node> = crate::pg_list::ptrs((*op).args).collect();
        let [now, interval] = args[..] else {
            return false;
        };
        let now_is_now = match (*now).type_ {
            pg_sys::NodeTag::T_FuncExpr => {
                let f = now as *mut pg_sys::FuncExpr;
                (*f).args.is_null()
                    && [
                        pg_sys::F_NOW,
                        pg_sys::F_STATEMENT_TIMESTAMP,
                        pg_sys::F_TRANSACTION_TIMESTAMP,
                    ]
                    .contains(&(*f).funcid.to_u32())
            }
            pg_sys::NodeTag::T_SQLValueFunction => {
                let v = now as *mut pg_sys::SQLValueFunction;
                (*v).op == pg_sys::SQLValueFunctionOp::SVFOP_CURRENT_TIMESTAMP
            }
            _ => false,
        };
        now_is_now
            && [
                pg_sys::F_TIMESTAMPTZ_MI_INTERVAL,
                pg_sys::F_TIMESTAMPTZ_PL_INTERVAL,
            ]
            .contains(&(*op).opfuncid.to_u32())
            && matches!(constant(interval), Some((_, Some(_))))
    }
}
