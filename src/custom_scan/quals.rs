//! Which of a scan's quals the custom scan can use, at plan time: equality
//! on the tenant, conditions on the attributes, bounds on `id`, and
//! equality of another column with a value or a list (`priority_id IN (1,
//! 2)`), which the search tests as its column filter (`columns`). Every
//! other qual stays with the executor, which checks it on each row the scan
//! returns: the search only has to return a superset of the query's rows,
//! in `id` order, and a qual it misreads could only cost time, never rows.
//! The exceptions are the quals a search's rows hold by construction: the
//! tenant's equality, and `id >=` / `id <` (its window, read from an index
//! in the column's collation), unless a row-level policy added them.
//!
//! A value is usable when the scan can compute it once, before its first
//! row: no column of the table, nothing volatile, no subquery (constants,
//! parameters, stable functions of them).

use pgrx::pg_sys::{self, AttrNumber, Oid};

use crate::pg_list;
use crate::search::Columns;
use crate::text_ops::{self, TEXT_EQ, TEXT_GE, TEXT_GT, TEXT_LE, TEXT_LT};

/// `jsonb @> jsonb`, `<@` (text's comparisons: `crate::text_ops`).
const JSONB_CONTAINS: u32 = 3246;
const JSONB_CONTAINED: u32 = 3250;

/// A condition on the attributes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `attribute_values @> value`.
    Contains,
    /// `alerts_attrs_match(attribute_values, filter)`.
    Filter,
    /// `attribute_values @> a OR attribute_values @> b ...`: that many
    /// values.
    AnyOf(usize),
}

impl Kind {
    /// How many values the condition has.
    pub fn values(self) -> usize {
        match self {
            Kind::AnyOf(n) => n,
            _ => 1,
        }
    }

    /// Its number in a plan's integer list, and back.
    pub fn to_int(self) -> i32 {
        match self {
            Kind::Contains => 0,
            Kind::Filter => 1,
            Kind::AnyOf(n) => 1 + n as i32,
        }
    }

    pub fn from_int(k: i32) -> Kind {
        match k {
            0 => Kind::Contains,
            1 => Kind::Filter,
            n => Kind::AnyOf(n as usize - 1),
        }
    }
}

/// The usable quals of one scan.
pub struct Usable {
    /// The tenant (`organisation_id = value`), and its qual.
    pub org: Option<*mut pg_sys::Expr>,
    pub org_qual: *mut pg_sys::RestrictInfo,
    /// The conditions on the attributes, with their values.
    pub filters: Vec<(Kind, Vec<*mut pg_sys::Expr>)>,
    /// Lower bounds on `id` (`>=`, or `>`: the executor drops the equal).
    pub lower: Vec<*mut pg_sys::Expr>,
    /// Upper bounds on `id` (`<`).
    pub upper: Vec<*mut pg_sys::Expr>,
    /// Upper bounds `id <= value` where `id` compares bytewise: the same
    /// as `id < value || E'\x01'` (no text lies between them).
    pub upper_inclusive: Vec<*mut pg_sys::Expr>,
    /// Other columns equal to a value, or to one of an array's (`= ANY`).
    pub columns: Vec<ColumnQual>,
    /// The quals every row of the search holds exactly (the tenant, `id >=`,
    /// `id <`), which the executor need not test again.
    pub guaranteed: Vec<*mut pg_sys::RestrictInfo>,
    /// The containments (`attribute_values @> value`) and filters
    /// (`alerts_attrs_match`) the node tests itself (`exec/held.rs`): none
    /// where a row-level policy adds quals, which Postgres tests before the
    /// query's own.
    pub held: Vec<*mut pg_sys::RestrictInfo>,
    /// Every qual the search applies (the others only filter the rows it
    /// returns: the walk reads past the rows they drop).
    pub used: Vec<*mut pg_sys::RestrictInfo>,
}

impl Usable {
    /// How many things were found: grows with each usable qual.
    fn count(&self) -> usize {
        self.org.is_some() as usize
            + self.filters.len()
            + self.lower.len()
            + self.upper.len()
            + self.upper_inclusive.len()
            + self.columns.len()
    }
}

/// `column = value` (`list` false) or `column = ANY (value)` (`list`
/// true), with the column type's own equality.
#[derive(Clone, Copy)]
pub struct ColumnQual {
    pub attno: AttrNumber,
    pub list: bool,
    pub value: *mut pg_sys::Expr,
}

/// The usable quals among `clauses` (a list of RestrictInfo) of the scan of
/// range table entry `varno`.
///
/// # Safety
/// `clauses` is the rel's `baserestrictinfo`.
pub unsafe fn usable(clauses: *mut pg_sys::List, varno: u32, cols: &Columns) -> Usable {
    let mut found = Usable {
        org: None,
        org_qual: std::ptr::null_mut(),
        filters: Vec::new(),
        lower: Vec::new(),
        upper: Vec::new(),
        upper_inclusive: Vec::new(),
        columns: Vec::new(),
        guaranteed: Vec::new(),
        held: Vec::new(),
        used: Vec::new(),
    };
    let mut policy = false;
    // SAFETY: planner nodes, read only.
    unsafe {
        for rinfo in pg_list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            if (*rinfo).pseudoconstant {
                continue;
            }
            policy |= (*rinfo).security_level > 0;
            let before = found.count();
            let clause = (*rinfo).clause as *mut pg_sys::Node;
            match (*clause).type_ {
                pg_sys::NodeTag::T_OpExpr => {
                    let had = (found.org.is_some(), found.lower.len() + found.upper.len());
                    let filters = found.filters.len();
                    let strict = operator(clause as *mut pg_sys::OpExpr, varno, cols, &mut found);
                    if found.filters.len() > filters {
                        found.held.push(rinfo); // a containment
                    }
                    if !had.0 && found.org.is_some() {
                        found.org_qual = rinfo;
                    }
                    // the tenant's equality and the bounds the window keeps
                    // exactly hold for every row a search returns: the
                    // executor need not test them again (a policy's quals
                    // it still tests)
                    let used = (had.0 != found.org.is_some() && found.org_qual == rinfo)
                        || (strict && had.1 != found.lower.len() + found.upper.len());
                    if used && (*rinfo).security_level == 0 {
                        found.guaranteed.push(rinfo);
                    }
                }
                pg_sys::NodeTag::T_BoolExpr => {
                    // containments OR'ed, every one of them
                    let b = clause as *mut pg_sys::BoolExpr;
                    if (*b).boolop == pg_sys::BoolExprType::OR_EXPR {
                        let args = pg_list::ptrs::<pg_sys::Node>((*b).args);
                        let n = args.len();
                        let values: Vec<_> = args
                            .map_while(|arg| containment(arg, varno, cols))
                            .collect();
                        if values.len() >= 2 && values.len() == n {
                            found.filters.push((Kind::AnyOf(values.len()), values));
                        }
                    }
                }
                pg_sys::NodeTag::T_ScalarArrayOpExpr => {
                    let op = clause as *mut pg_sys::ScalarArrayOpExpr;
                    if let (true, Some((column, value))) = ((*op).useOr, two((*op).args)) {
                        if let Some(attno) =
                            equality_column(column, varno, cols, (*op).opno, (*op).inputcollid)
                        {
                            if computable(value) {
                                found.columns.push(ColumnQual {
                                    attno,
                                    list: true,
                                    value: value as *mut pg_sys::Expr,
                                });
                            }
                        }
                    }
                }
                pg_sys::NodeTag::T_FuncExpr => {
                    let f = clause as *mut pg_sys::FuncExpr;
                    if let Some((column, value)) = two((*f).args) {
                        if is_attrs_match((*f).funcid)
                            && is_column(column, varno, cols.attrs)
                            && computable(value)
                        {
                            found
                                .filters
                                .push((Kind::Filter, vec![value as *mut pg_sys::Expr]));
                            found.held.push(rinfo); // tested as containments are
                        }
                    }
                }
                _ => {}
            }
            if found.count() != before {
                found.used.push(rinfo);
            }
        }
    }
    if policy {
        found.held.clear();
    }
    found
}

/// One operator clause: `column op value` or `value op column`; true when
/// it is an `id` bound the window keeps exactly (`>=`, `<`; not `>`).
unsafe fn operator(
    op: *mut pg_sys::OpExpr,
    varno: u32,
    cols: &Columns,
    found: &mut Usable,
) -> bool {
    // SAFETY: a planner node, read only.
    unsafe {
        let Some((a, b)) = two((*op).args) else {
            return false;
        };
        let opno = u32::from((*op).opno);
        let collation = (*op).inputcollid;
        // (column on the left, value, operator as if the column were left)
        let (column, value, opno) = if computable(b) {
            (a, b, opno)
        } else if computable(a) {
            (b, a, commuted(opno))
        } else {
            return false;
        };
        let id_bound = collation == cols.id_collation && is_column(column, varno, cols.id);
        match opno {
            TEXT_EQ if collation == cols.org_collation && is_column(column, varno, cols.org) => {
                found.org.get_or_insert(value as *mut pg_sys::Expr);
            }
            TEXT_GE | TEXT_GT if id_bound => {
                found.lower.push(value as *mut pg_sys::Expr);
                return opno == TEXT_GE;
            }
            TEXT_LT if id_bound => {
                found.upper.push(value as *mut pg_sys::Expr);
                return true;
            }
            TEXT_LE if id_bound && cols.ids_bytewise() => {
                found.upper_inclusive.push(value as *mut pg_sys::Expr);
            }
            JSONB_CONTAINS if is_column(column, varno, cols.attrs) => found
                .filters
                .push((Kind::Contains, vec![value as *mut pg_sys::Expr])),
            _ => {
                if let Some(attno) =
                    equality_column(column, varno, cols, Oid::from(opno), collation)
                {
                    found.columns.push(ColumnQual {
                        attno,
                        list: false,
                        value: value as *mut pg_sys::Expr,
                    });
                }
            }
        }
        false
    }
}

/// The value of `node` when it is `attribute_values @> value` (or `value <@
/// attribute_values`) with a value the scan can compute.
unsafe fn containment(
    node: *mut pg_sys::Node,
    varno: u32,
    cols: &Columns,
) -> Option<*mut pg_sys::Expr> {
    // SAFETY: planner nodes, read only.
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_OpExpr {
            return None;
        }
        let op = node as *mut pg_sys::OpExpr;
        let (a, b) = two((*op).args)?;
        match u32::from((*op).opno) {
            JSONB_CONTAINS if is_column(a, varno, cols.attrs) && computable(b) => Some(b.cast()),
            JSONB_CONTAINED if is_column(b, varno, cols.attrs) && computable(a) => Some(a.cast()),
            _ => None,
        }
    }
}

/// The two arguments of an operator or function, when it has two.
///
/// # Safety
/// `args` is a planner node's list of arguments.
unsafe fn two(args: *mut pg_sys::List) -> Option<(*mut pg_sys::Node, *mut pg_sys::Node)> {
    // SAFETY: as the caller's.
    unsafe {
        match pg_list::cells(args) {
            [a, b] => Some((a.ptr_value.cast(), b.ptr_value.cast())),
            _ => None,
        }
    }
}

/// The operator with its arguments swapped, for the ones recognised.
fn commuted(opno: u32) -> u32 {
    match opno {
        JSONB_CONTAINED => JSONB_CONTAINS,
        JSONB_CONTAINS => JSONB_CONTAINED,
        other => text_ops::commuted(other).unwrap_or(other),
    }
}

/// Whether `node` is column `attno` of the scanned relation (under a
/// binary-compatible cast at most).
unsafe fn is_column(mut node: *mut pg_sys::Node, varno: u32, attno: AttrNumber) -> bool {
    // SAFETY: planner nodes, read only.
    unsafe {
        while (*node).type_ == pg_sys::NodeTag::T_RelabelType {
            node = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
        }
        if (*node).type_ != pg_sys::NodeTag::T_Var {
            return false;
        }
        let v = node as *mut pg_sys::Var;
        (*v).varno as u32 == varno && (*v).varlevelsup == 0 && (*v).varattno == attno
    }
}

/// The column of `node` when it is a column of the scanned relation other
/// than the search's own, compared by `opno` in its collation, and `opno`
/// is its type's own equality, for a type whose values read back exactly
/// from their text (the column filter's form): integers, `bool`, `text`
/// (no length limit), `uuid`, enums. Others stay with the executor alone.
unsafe fn equality_column(
    node: *mut pg_sys::Node,
    varno: u32,
    cols: &Columns,
    opno: Oid,
    collation: Oid,
) -> Option<AttrNumber> {
    // SAFETY: planner nodes, read; a type cache lookup.
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_Var {
            return None;
        }
        let v = node as *mut pg_sys::Var;
        let attno = (*v).varattno;
        if (*v).varno as u32 != varno
            || (*v).varlevelsup != 0
            || attno <= 0
            || [cols.org, cols.id, cols.attrs, cols.bitmap].contains(&attno)
            || (*v).vartypmod != -1
            || (*v).varcollid != collation
        {
            return None;
        }
        let ty = (*v).vartype;
        let exact_text = [
            pg_sys::INT2OID,
            pg_sys::INT4OID,
            pg_sys::INT8OID,
            pg_sys::BOOLOID,
            pg_sys::TEXTOID,
            pg_sys::UUIDOID,
        ]
        .contains(&ty)
            || pg_sys::type_is_enum(ty);
        if !exact_text {
            return None;
        }
        let cache = pg_sys::lookup_type_cache(ty, pg_sys::TYPECACHE_EQ_OPR as i32);
        ((*cache).eq_opr == opno).then_some(attno)
    }
}

/// Whether the scan can compute `node` once, before its first row.
pub(super) unsafe fn computable(node: *mut pg_sys::Node) -> bool {
    // SAFETY: planner nodes, read only.
    unsafe {
        !pg_sys::contain_var_clause(node)
            && !pg_sys::contain_volatile_functions(node)
            && !pg_sys::contain_subplans(node)
    }
}

/// Whether function `funcid` is this extension's `alerts_attrs_match` (a C
/// function of that symbol, two arguments).
unsafe fn is_attrs_match(funcid: Oid) -> bool {
    // SAFETY: catalog lookups by oid.
    unsafe {
        let name = pg_sys::get_func_name(funcid);
        if name.is_null() || std::ffi::CStr::from_ptr(name).to_bytes() != b"alerts_attrs_match" {
            return false;
        }
        pg_sys::get_func_nargs(funcid) == 2 && crate::overloads::language_is_c(funcid)
    }
}
