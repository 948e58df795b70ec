//! Conversions between Postgres datums and the core's types, and the mapping
//! of core errors to Postgres ERRORs.

use std::cell::Cell;

use alerts_core::bloom::width_ok;
use alerts_core::error::{Error, ErrorKind};
use alerts_core::{Bitmap, BITMAP_BITS};
use pgrx::pg_sys::{self, Datum};
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// A Rust string of a NUL-terminated C string from Postgres.
///
/// # Safety
/// `p` must point to a NUL-terminated string.
pub unsafe fn cstr_owned(p: *const std::ffi::c_char) -> String {
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned() }
}

/// Raises a core error as an ERROR with its hint. Never returns.
pub fn raise(e: Error) -> ! {
    let code = match e.kind {
        ErrorKind::InvalidParameter => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        ErrorKind::InvalidText => PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
        ErrorKind::OutOfRange => PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
    };
    error(code, e.message, &e.hint)
}

/// The SQL function being called, so that every ERROR names it (a slot of
/// the backend's state).
struct Caller(Cell<&'static str>);

impl Default for Caller {
    fn default() -> Self {
        Caller(Cell::new("alerts"))
    }
}

/// Records the SQL function now running (first thing in each entry point;
/// a store in the backend's state, nothing more).
pub fn enter(function: &'static str) {
    crate::backend::slot::<Caller>().0.set(function);
}

/// Raises an ERROR with a message and a hint. Never returns. The message is
/// prefixed with the SQL function's name unless it already starts with one.
pub fn error(code: PgSqlErrorCode, message: String, hint: &str) -> ! {
    let message = if message.starts_with("alerts_") {
        message
    } else {
        format!("{}: {message}", crate::backend::slot::<Caller>().0.get())
    };
    pgrx::pg_sys::panic::ErrorReport::new(code, message, "alerts")
        .set_hint(hint.to_string())
        .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// Unwraps a core result or raises its error.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => raise(e),
        }
    }
}

/// Argument `n` of a strict function (never null there).
///
/// # Safety
/// `fcinfo` must be the live call's, with at least `n + 1` arguments.
pub unsafe fn arg(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Datum {
    // SAFETY: the caller guarantees the argument exists.
    unsafe { pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, n) }
}

/// The bytes of a varlena datum, detoasted if needed. For a short in-line
/// value (a 72-byte bitmap, a small filter) this is a pointer into the tuple
/// or the constant: no copy, no allocation.
///
/// # Safety
/// `d` must be a non-null varlena datum valid for the current memory context.
pub unsafe fn varlena_bytes<'a>(d: Datum) -> &'a [u8] {
    // SAFETY: caller guarantees a valid varlena; detoast_packed returns either
    // the same pointer or a palloc'd copy in the current memory context.
    unsafe {
        let v = d.cast_mut_ptr::<pg_sys::varlena>();
        // In line and not compressed (the usual case, and every index
        // tuple's key): read in place, without a call into Postgres.
        let plain = pgrx::varatt_is_4b_u(v) || (pgrx::varatt_is_1b(v) && !pgrx::varatt_is_1b_e(v));
        let v = if plain {
            v
        } else {
            pg_sys::pg_detoast_datum_packed(v)
        };
        let len = pgrx::varsize_any_exhdr(v);
        let data = pgrx::vardata_any(v) as *const u8;
        std::slice::from_raw_parts(data, len)
    }
}

/// The tuple of a row value (a composite datum's header, not compressed):
/// what `heap_deform_tuple`, `heap_getattr`, a tuplestore or a slot read.
///
/// # Safety
/// `td` must point to a whole, detoasted composite datum.
pub unsafe fn row_tuple(td: pg_sys::HeapTupleHeader) -> pg_sys::HeapTupleData {
    // SAFETY: as the caller's; the length is the datum's own.
    unsafe {
        pg_sys::HeapTupleData {
            t_len: pgrx::varsize_any(td as *const pg_sys::varlena) as u32,
            t_data: td,
            ..Default::default()
        }
    }
}

/// The header of row value `d`, detoasted, as Postgres'
/// `DatumGetHeapTupleHeader` gives it: on the minors that version
/// composite datums (CVE-2026-6460: 15.20, 16.16, 17.12, 18.7 and later),
/// a datum formed by an earlier release comes back as a marked copy, so
/// that [`check_row`] checks it (pgrx's `datum_get_heap_tuple_header`).
///
/// # Safety
/// `d` must be a live composite datum.
pub unsafe fn row_header(d: pg_sys::Datum) -> pg_sys::HeapTupleHeader {
    // SAFETY: as the caller's.
    unsafe { pg_sys::datum_get_heap_tuple_header(d) }
}

/// ERRORs, as Postgres' `heap_getattr` does before it reads an attribute,
/// if `td` is a versioned row value that `desc` cannot read (formed under
/// an incompatible definition of its type). Compiled in only against
/// headers that version composite datums; elsewhere nothing to check.
///
/// # Safety
/// `td` a live row value's header, `desc` a live descriptor.
pub unsafe fn check_row(td: pg_sys::HeapTupleHeader, desc: pg_sys::TupleDesc) {
    pgrx::pg_sys::__pgrx_if_composite_datum_versioning! {
        // SAFETY: as the caller's; heap_datum_check wants a versioned datum.
        unsafe {
            let flag = pg_sys::HEAP_IS_DATUM as u16;
            if (*td).t_infomask & flag == flag
                && (*td).t_ctid.ip_posid == pg_sys::VersionedDatumOffsetNumber as u16
            {
                pg_sys::heap_datum_check(td, desc);
            }
        }
    }
    let _ = (td, desc);
}

/// Reads a bitmap datum: `bit(512)`, or folded to `bit(256)` or `bit(128)`
/// (16, 32 or 64 bytes). Any other length is an ERROR naming the fix.
///
/// # Safety
/// `d` must be a non-null `bit`/`varbit` datum.
pub unsafe fn bitmap_arg<'a>(d: Datum) -> &'a [u8] {
    // SAFETY: a varbit's payload is an int32 bit length then the bits.
    let bytes = unsafe { varlena_bytes(d) };
    let bit_len = if bytes.len() >= 4 {
        i32::from_ne_bytes(bytes[..4].try_into().unwrap())
    } else {
        -1
    };
    let ok =
        usize::try_from(bit_len).is_ok_and(|bits| width_ok(bits) && bytes.len() == 4 + bits / 8);
    if !ok {
        error(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("the bitmap must be bit(512), bit(256) or bit(128), got a bit string of length {bit_len}"),
            "pass the column filled by alerts_bloom() or alerts_bloom_trigger(), declared bit(512) (or bit(256), bit(128): the same bitmap folded)",
        );
    }
    &bytes[4..]
}

/// The width of a bitmap column's type: its `bit(n)` length, 512 for an
/// unconstrained `bit varying` (or one long enough); None for any other.
pub fn column_bits(typid: pg_sys::Oid, typmod: i32) -> Option<usize> {
    match typid {
        pg_sys::BITOID => usize::try_from(typmod).ok().filter(|&b| width_ok(b)),
        pg_sys::VARBITOID => (!(0..BITMAP_BITS as i32).contains(&typmod)).then_some(BITMAP_BITS),
        _ => None,
    }
}

/// Builds a fresh `bit(512)` datum in the current memory context.
pub fn bitmap_datum(bm: &Bitmap) -> Datum {
    bits_datum(&bm.0)
}

/// Builds a fresh bit string datum of `bytes` (all their bits) in the
/// current memory context.
pub fn bits_datum(bytes: &[u8]) -> Datum {
    let total = pg_sys::VARHDRSZ + 4 + bytes.len();
    let bits = (bytes.len() * 8) as i32;
    // SAFETY: palloc returns `total` writable bytes (or ERRORs); we fill the
    // varlena header, the int32 bit length and the data bytes.
    unsafe {
        let p = pg_sys::palloc(total) as *mut u8;
        pgrx::set_varsize_4b(p as *mut pg_sys::varlena, total as i32);
        std::ptr::copy_nonoverlapping(bits.to_ne_bytes().as_ptr(), p.add(pg_sys::VARHDRSZ), 4);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(pg_sys::VARHDRSZ + 4), bytes.len());
        Datum::from(p)
    }
}

/// The bitmap `bm` as a datum of `bits` bits (one of the widths).
pub fn bitmap_datum_bits(bm: &Bitmap, bits: usize) -> Datum {
    if bits == BITMAP_BITS {
        bitmap_datum(bm)
    } else {
        bits_datum(&bm.folded(bits))
    }
}

/// Parses a `jsonb` datum into a serde value (numbers kept exact).
///
/// # Safety
/// `d` must be a non-null `jsonb` datum.
pub unsafe fn jsonb_value(d: Datum) -> serde_json::Value {
    // SAFETY: jsonb_out takes a jsonb datum and returns a palloc'd C string.
    let text = unsafe {
        let detoasted = pg_sys::pg_detoast_datum_packed(d.cast_mut_ptr());
        let cstr = pgrx::direct_function_call::<&core::ffi::CStr>(
            pg_sys::jsonb_out,
            &[Some(Datum::from(detoasted))],
        )
        .expect("jsonb_out returns a string");
        let s = cstr.to_str().map(str::to_owned);
        pg_sys::pfree(cstr.as_ptr() as *mut std::ffi::c_void);
        s
    };
    let text = match text {
        Ok(t) => t,
        Err(_) => error(
            PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
            "alerts needs a UTF-8 database: jsonb text was not valid UTF-8".into(),
            "create the database with ENCODING 'UTF8'",
        ),
    };
    parse_json_text(&text)
}

/// Parses the text Postgres printed for a jsonb value. It is valid JSON, so
/// the only failure is serde_json's nesting limit.
pub fn parse_json_text(text: &str) -> serde_json::Value {
    match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => error(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("a nested value is too deep to index ({e})"),
            "values nested more than 127 levels deep are not supported; flatten the attribute",
        ),
    }
}

/// A `text` datum of raw bytes, in the current memory context.
pub fn text_of(bytes: &[u8]) -> Datum {
    // SAFETY: cstring_to_text_with_len copies `len` bytes into a new text.
    unsafe {
        Datum::from(pg_sys::cstring_to_text_with_len(
            bytes.as_ptr() as *const _,
            bytes.len() as i32,
        ))
    }
}

/// A `text` datum from a Rust string, in the current memory context.
pub fn text_datum(s: &str) -> Datum {
    text_of(s.as_bytes())
}

/// A `jsonpath` datum parsed from its text (through jsonpath's input function).
pub fn jsonpath_datum(text: &str) -> Datum {
    let c = std::ffi::CString::new(text).expect("jsonpath text has no NUL");
    // SAFETY: jsonpath_in parses a C string into a palloc'd jsonpath.
    unsafe {
        pgrx::direct_function_call_as_datum(pg_sys::jsonpath_in, &[Some(Datum::from(c.as_ptr()))])
            .expect("jsonpath")
    }
}

/// The jsonpaths parsed lately, kept for the next calls (a slot of the
/// backend's state): their text and a copy of their datum in
/// `TopMemoryContext`, up to [`KEPT_JSONPATHS`]; the copies dropped when
/// it fills, freed once no search runs (a search inside another's
/// statement may drop the ones the outer search still reads).
#[derive(Default)]
struct KeptJsonpaths {
    kept: std::cell::RefCell<Vec<(std::sync::Arc<str>, usize)>>,
    dropped: std::cell::RefCell<Vec<usize>>,
}

/// Jsonpaths kept at most (a filter's, and each of its clauses').
const KEPT_JSONPATHS: usize = 16;

/// [`jsonpath_datum`] of a filter's jsonpath (or a clause's), parsed once
/// for as long as the backend searches with the same one (every leaf of a
/// partitioned table, every call of a dashboard's page), not once a leaf.
/// The datum is only ever read (GIN's scan keys and `extractQuery`,
/// statements' parameters), and lives until [`free_dropped_jsonpaths`]
/// after it is dropped.
pub fn jsonpath_datum_kept(text: &std::sync::Arc<str>) -> Datum {
    let slot: &KeptJsonpaths = crate::backend::slot();
    let found = slot
        .kept
        .borrow()
        .iter()
        .find(|(t, _)| std::sync::Arc::ptr_eq(t, text) || **t == **text)
        .map(|(_, d)| *d);
    if let Some(d) = found {
        return Datum::from(d);
    }
    let parsed = jsonpath_datum(text);
    // SAFETY: a non-toasted varlena (jsonpath_in's result) copied whole
    // into a context that lives as long as the backend.
    unsafe {
        let p = parsed.cast_mut_ptr::<pg_sys::varlena>();
        let len = pgrx::varsize_any(p);
        let copy = pg_sys::MemoryContextAlloc(pg_sys::TopMemoryContext, len);
        std::ptr::copy_nonoverlapping(p as *const u8, copy as *mut u8, len);
        let mut kept = slot.kept.borrow_mut();
        if kept.len() >= KEPT_JSONPATHS {
            slot.dropped
                .borrow_mut()
                .extend(kept.drain(..).map(|(_, d)| d));
        }
        kept.push((text.clone(), copy as usize));
        Datum::from(copy)
    }
}

/// Frees the jsonpaths [`jsonpath_datum_kept`] dropped: called when the
/// outermost search ends (normally or by an error), when none can still
/// read one.
pub fn free_dropped_jsonpaths() {
    let slot: &KeptJsonpaths = crate::backend::slot();
    for old in slot.dropped.take() {
        // SAFETY: a copy made above, handed out no more.
        unsafe { pg_sys::pfree(old as *mut std::ffi::c_void) };
    }
}

/// `a` against `b` as the text type compares them in `collation` (one
/// guarded call; loops compare under one guard, `crate::unguarded`).
pub fn text_cmp(a: &[u8], b: &[u8], collation: pg_sys::Oid) -> std::cmp::Ordering {
    // SAFETY: one comparison of two live slices.
    unsafe { crate::unguarded::guarded(|g| crate::unguarded::text_cmp(g, a, b, collation)) }
}

/// A `jsonb` datum parsed from JSON text (through jsonb's input function).
pub fn jsonb_datum(text: &str) -> Datum {
    let c = std::ffi::CString::new(text).expect("JSON text has no NUL");
    // SAFETY: jsonb_in parses a C string into a palloc'd jsonb.
    unsafe {
        pgrx::direct_function_call_as_datum(pg_sys::jsonb_in, &[Some(Datum::from(c.as_ptr()))])
            .expect("jsonb")
    }
}

/// Declares `pg_finfo_<name>`, the record Postgres looks up to learn that the
/// C function `<name>` uses the version-1 calling convention. Takes the finfo
/// symbol itself because `macro_rules!` cannot paste identifiers.
macro_rules! finfo_v1 {
    ($($finfo:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc(hidden)]
        pub extern "C" fn $finfo() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
            const V1: ::pgrx::pg_sys::Pg_finfo_record = ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }
    )*};
}
pub(crate) use finfo_v1;
