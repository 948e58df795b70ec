//! The node's values, computed once per scan (and again on rescan) from
//! the plan's expressions: the tenant, the filter the attribute conditions
//! imply, the column filter, the window's bounds and the first page's size.
//! Expressions are evaluated under pgrx's FFI guard: an ERROR while
//! evaluating one (an unset setting, a parameter that is not JSON) unwinds
//! these frames and is raised again where the executor called the node.

use alerts_core::containment::{implied_filter, whole_keys, Condition};
use alerts_core::ulid;
use pgrx::pg_sys::{self, Datum, Oid};

use super::{Phase, Run, DEFAULT_PAGE, MAX_PAGE};
use crate::custom_scan::quals::Kind;
use crate::datum::{jsonb_datum, jsonb_value, text_cmp, varlena_bytes};

/// The text of `value`, of type `ty`, by the type's output function.
///
/// # Safety
/// `value` is a non-null datum of type `ty`.
unsafe fn output_text(value: Datum, ty: Oid) -> String {
    // SAFETY: as the caller's.
    unsafe {
        let (mut out, mut varlena) = (Oid::INVALID, false);
        pg_sys::getTypeOutputInfo(ty, &mut out, &mut varlena);
        crate::datum::cstr_owned(pg_sys::OidOutputFunctionCall(out, value))
    }
}

/// The texts of the non-null elements of array `value` of element type
/// `ty` (NULLs never equal a column: they are left out).
///
/// # Safety
/// `value` is a non-null array datum of elements of type `ty`.
unsafe fn array_texts(value: Datum, ty: Oid) -> Vec<String> {
    // SAFETY: as the caller's; deconstruct_array fills n elements.
    unsafe {
        let array = pg_sys::pg_detoast_datum(value.cast_mut_ptr()) as *mut pg_sys::ArrayType;
        let (mut len, mut byval, mut align) = (0i16, false, 0 as std::ffi::c_char);
        pg_sys::get_typlenbyvalalign(ty, &mut len, &mut byval, &mut align);
        let (mut elems, mut nulls, mut n) = (std::ptr::null_mut(), std::ptr::null_mut(), 0);
        pg_sys::deconstruct_array(
            array,
            ty,
            len.into(),
            byval,
            align,
            &mut elems,
            &mut nulls,
            &mut n,
        );
        (0..n as usize)
            .filter(|&i| !*nulls.add(i))
            .map(|i| output_text(*elems.add(i), ty))
            .collect()
    }
}

/// Implied filters the session computed last (up to [`SESSION_IMPLIED`]),
/// by the conditions' kinds and raw jsonb bytes: a statement run again with
/// the same values neither converts them nor parses the filter again.
const SESSION_IMPLIED: usize = 256;

type ImpliedKey = (Vec<i32>, Vec<Option<Vec<u8>>>);

/// An implied filter's jsonb bytes, and its whole keys (`whole_keys`).
type ImpliedValue = (Vec<u8>, Option<Vec<String>>);

/// The implied filters kept (a slot of the backend's state).
#[derive(Default)]
struct Implied(std::cell::RefCell<std::collections::HashMap<ImpliedKey, ImpliedValue>>);

/// The jsonb filter the conditions imply (`implied_filter`), in the current
/// memory context, with the keys where a row the filter accepts holds
/// every containment unless its value there is an array (`whole_keys`);
/// None when a condition is NULL (no row matches).
///
/// # Safety
/// `values` are the conditions' values in order, live jsonb datums.
unsafe fn implied_datum(
    kinds: &[Kind],
    values: &[Option<Datum>],
) -> Option<(Datum, Option<Vec<String>>)> {
    // SAFETY: as the caller's; the copy is a whole varlena.
    unsafe {
        let key: ImpliedKey = (
            kinds.iter().map(|k| k.to_int()).collect(),
            values
                .iter()
                .map(|d| d.map(|d| varlena_bytes(d).to_vec()))
                .collect(),
        );
        // a jsonb of these contents, with a 4-byte header (aligned)
        let copy = |bytes: &[u8]| {
            let size = bytes.len() + pg_sys::VARHDRSZ;
            let p = pg_sys::palloc(size) as *mut pg_sys::varlena;
            pgrx::set_varsize_4b(p, size as i32);
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                pgrx::vardata_4b(p) as *mut u8,
                bytes.len(),
            );
            Datum::from(p)
        };
        let implied = &crate::backend::slot::<Implied>().0;
        if let Some(found) = implied
            .borrow()
            .get(&key)
            .map(|(b, w)| (copy(b), w.clone()))
        {
            return Some(found);
        }
        let jsons: Vec<Option<serde_json::Value>> =
            values.iter().map(|d| d.map(|d| jsonb_value(d))).collect();
        let mut conditions: Vec<Condition> = Vec::new();
        let mut at = jsons.iter();
        for &kind in kinds {
            let mine: Vec<&serde_json::Value> = at.by_ref().take(kind.values()).flatten().collect();
            conditions.push(match kind {
                _ if mine.is_empty() => return None, // NULL
                Kind::AnyOf(_) => Condition::AnyOf(mine),
                Kind::Contains if mine.len() == 1 => Condition::Contains(mine[0]),
                Kind::Filter if mine.len() == 1 => Condition::Filter(mine[0]),
                _ => return None, // NULL
            });
        }
        let filter = implied_filter(&conditions);
        let whole = whole_keys(&conditions, &filter);
        let d = jsonb_datum(&filter.to_string());
        let bytes = varlena_bytes(d).to_vec();
        let mut m = implied.borrow_mut();
        if m.len() >= SESSION_IMPLIED {
            m.clear();
        }
        m.insert(key, (bytes, whole.clone()));
        drop(m);
        Some((d, whole))
    }
}

impl Run {
    /// Computes the values; false when no row can match (a NULL value, or
    /// a filter that matches nothing).
    pub(super) unsafe fn start(&mut self, econtext: *mut pg_sys::ExprContext) -> bool {
        // A filter's errors are those of the qual it comes from.
        crate::datum::enter("alerts_attrs_match");
        // SAFETY: the expressions are initialised for this node; values are
        // computed in the values' memory.
        unsafe {
            pg_sys::MemoryContextReset(self.values_cxt);
            let old = pg_sys::MemoryContextSwitchTo(self.values_cxt);
            let ok = self.compute(econtext);
            pg_sys::MemoryContextSwitchTo(old);
            ok
        }
    }

    unsafe fn compute(&mut self, econtext: *mut pg_sys::ExprContext) -> bool {
        // SAFETY: as start's.
        unsafe {
            let mut values = Vec::with_capacity(self.exprs.len());
            for &e in &self.exprs {
                let eval = (*e).evalfunc.expect("an initialised expression");
                let mut isnull = false;
                // An ERROR while evaluating (an unset setting, a parameter
                // that is not JSON) comes back as a Rust panic through the
                // guard, unwinding these frames, and is raised again as the
                // same ERROR where the executor called us: never a longjmp
                // over Rust frames.
                let d = pg_sys::ffi::pg_guard_ffi_boundary(|| eval(e, econtext, &mut isnull));
                values.push((!isnull).then_some(d));
            }
            let shape = self.shape.clone();
            // A NULL tenant, filter or bound makes its qual NULL: no row.
            let Some(org) = values[0] else { return false };
            // the attribute conditions: a NULL value makes a condition NULL
            // (no row), except in an OR, where it only drops out
            let n_values: usize = shape.filters.iter().map(|k| k.values()).sum();
            let filters: Vec<Option<Datum>> = values[1..1 + n_values].to_vec();
            let mut at = values.into_iter().skip(1 + n_values);
            let mut take = |n: usize| -> Option<Vec<Datum>> { at.by_ref().take(n).collect() };
            let Some(mut lower) = take(shape.lower) else {
                return false;
            };
            let Some(mut upper) = take(shape.upper) else {
                return false;
            };
            let Some(upper_inclusive) = take(shape.upper_inclusive) else {
                return false;
            };
            let count = if shape.count { take(1) } else { None };
            let offset = if shape.offset { take(1) } else { None };
            // column = value, column = ANY (list): the search's column
            // filter, by the values' text (see quals::equality_column)
            let mut columns = serde_json::Map::new();
            for &(attno, list) in &shape.columns {
                let Some(Some(value)) = at.next() else {
                    return false;
                };
                let att = crate::compat::attribute(self.desc, attno as i32);
                let texts = if list {
                    array_texts(value, att.atttypid)
                } else {
                    vec![output_text(value, att.atttypid)]
                };
                if texts.is_empty() {
                    return false; // = ANY of no value (but NULLs): no row
                }
                columns.insert(
                    crate::columns::name_of(att),
                    serde_json::Value::Array(
                        texts.into_iter().map(serde_json::Value::String).collect(),
                    ),
                );
            }
            // the bounds a declared time column implies (`window.rs`): a
            // NULL one (the declaration does not hold for this snapshot)
            // bounds nothing
            let implied: Vec<Option<Datum>> = at
                .by_ref()
                .take(shape.implied_lower + shape.implied_upper)
                .collect();
            let (implied_lower, implied_upper) = implied.split_at(shape.implied_lower);
            lower.extend(implied_lower.iter().flatten());
            upper.extend(implied_upper.iter().flatten());
            // the time bounds the direct walk tests too: a NULL value makes
            // its qual NULL, no row
            let mut times = Vec::with_capacity(shape.times.len());
            for &(attno, op) in &shape.times {
                let Some(Some(value)) = at.next() else {
                    return false;
                };
                times.push(super::super::window::time_bound(
                    attno,
                    op,
                    value.value() as i64,
                ));
            }
            self.times = times;
            self.columns = (!columns.is_empty()).then(|| {
                let d = jsonb_datum(&serde_json::Value::Object(columns).to_string());
                let table = crate::datum::cstr_owned(pg_sys::get_rel_name(self.relid));
                (d, crate::columns::Columns::compile(d, self.desc, &table))
            });

            self.org = varlena_bytes(org).to_vec();
            let Some((filter, whole)) = implied_datum(&shape.filters, &filters) else {
                return false; // a NULL condition
            };
            self.filter = filter;
            self.whole = whole;
            let compiled = crate::filter_cache::session_filter(self.filter);
            if compiled.matches_nothing() {
                return false;
            }
            self.compiled = Some(compiled);

            let collation = self.id_collation;
            let bytes: Vec<Vec<u8>> = lower.iter().map(|&d| varlena_bytes(d).to_vec()).collect();
            let greatest = bytes.into_iter().max_by(|a, b| text_cmp(a, b, collation));
            // Oldest first, the window is one range from the bound (or from
            // the first id): no ids read apart.
            self.below_too = greatest.is_none() && !shape.ascending;
            self.floor = match greatest {
                Some(g) => g,
                None if shape.ascending => Vec::new(),
                None => ulid::floor(0).to_vec(),
            };
            self.after = None;
            // id <= v, in a bytewise collation: id < v || '\x01'
            let inclusive = upper_inclusive
                .iter()
                .map(|&d| [varlena_bytes(d), &[1u8]].concat());
            let bytes: Vec<Vec<u8>> = upper
                .iter()
                .map(|&d| varlena_bytes(d).to_vec())
                .chain(inclusive)
                .collect();
            self.upper = bytes.into_iter().min_by(|a, b| text_cmp(a, b, collation));
            self.before = self.upper.clone();

            // LIMIT + OFFSET rows first (a NULL limit is none); one more
            // where a page's last id may continue.
            let count = count.map(|v| v[0].value() as i64);
            let offset = offset.map_or(0, |v| (v[0].value() as i64).max(0));
            let wanted = count.map_or(DEFAULT_PAGE, |c| c.max(0).saturating_add(offset));
            let tie = (!self.shape.ids_unique) as i64;
            self.wanted = wanted.clamp(1, MAX_PAGE) + tie;
            self.size = if self.shape.merged {
                1 + tie
            } else {
                self.wanted
            };
            self.phase = Phase::Window;
            true
        }
    }
}
