//! `alerts_bloom`, `alerts_mask`, `alerts_bloom_match`, `alerts_attrs_match`
//! and small helpers. See `sql/alerts.sql` for their SQL declarations.

use alerts_core::bloom::bloom;
use alerts_core::{Filter, FORMAT_VERSION};
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};

use crate::datum::{arg, bitmap_arg, bitmap_datum, bitmap_datum_bits, error, jsonb_value, OrRaise};
use crate::filter_cache::compiled;

crate::datum::finfo_v1!(
    pg_finfo_alerts_bloom,
    pg_finfo_alerts_bloom_bits,
    pg_finfo_alerts_mask_bits,
    pg_finfo_alerts_column_bits,
    pg_finfo_alerts_bloom_reference,
    pg_finfo_alerts_mask,
    pg_finfo_alerts_bloom_match,
    pg_finfo_alerts_attrs_match,
    pg_finfo_alerts_bloom_elements,
    pg_finfo_alerts_format_version,
    pg_finfo_alerts_filter_jsonpath,
);

/// `alerts_bloom(attrs jsonb) RETURNS bit(512)`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom");
    // SAFETY: STRICT, one jsonb argument.
    bitmap_datum(&unsafe { crate::jsonb::bloom_of(arg(fcinfo, 0)) })
}

/// `alerts_bloom(attrs jsonb, bits int) RETURNS bit`: the bitmap folded to
/// a narrower column's width (`bit(256)`, `bit(128)`), or the 512 bits.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom_bits(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom");
    // SAFETY: STRICT, arguments (jsonb, int4).
    unsafe {
        let bits = width_arg(arg(fcinfo, 1));
        bitmap_datum_bits(&crate::jsonb::bloom_of(arg(fcinfo, 0)), bits)
    }
}

/// `alerts_mask(filter jsonb, bits int) RETURNS bit`: the mask folded to a
/// narrower column's width, to test as `bitmap & mask = mask`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_mask_bits(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_mask");
    // SAFETY: STRICT, arguments (jsonb, int4).
    unsafe {
        let bits = width_arg(arg(fcinfo, 1));
        let filter = jsonb_value(arg(fcinfo, 0));
        bitmap_datum_bits(&Filter::single_mask(&filter).or_raise(), bits)
    }
}

/// A bitmap width argument: 128, 256 or 512, else an ERROR naming the fix
/// (prefixed with the calling function's name, see `datum::enter`).
fn width_arg(d: Datum) -> usize {
    let bits = d.value() as i32;
    match usize::try_from(bits) {
        Ok(b) if alerts_core::bloom::width_ok(b) => b,
        _ => error(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("the bitmap width must be 512, 256 or 128, got {bits}"),
            "pass the width of the bitmap column (bit(512), bit(256) or bit(128))",
        ),
    }
}

/// `alerts_column_bits(rel regclass, bitmap_column name) RETURNS int`: the
/// width the trigger writes into that column (`datum::column_bits`, the one
/// rule every caller shares), NULL when the table has no such column or it
/// has another type.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_column_bits(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_column_bits");
    // The procedures (alerts_enable, alerts_rebuild, alerts_bloom_stats)
    // call this before their own statements: none runs while a foreign
    // function could capture one of the extension's calls.
    // SAFETY: inside the calling statement's transaction.
    unsafe { crate::overloads::refuse_foreign_connecting() };
    // SAFETY: STRICT, arguments (regclass, name); catalog reads through the
    // syscache, which answer "no such attribute" for a relation that is gone.
    unsafe {
        let relid = pg_sys::Oid::from(arg(fcinfo, 0).value() as u32);
        let name = arg(fcinfo, 1).cast_mut_ptr::<pg_sys::NameData>();
        let attnum = pg_sys::get_attnum(relid, (*name).data.as_ptr());
        let bits = (attnum > 0)
            .then(|| {
                let (mut typid, mut typmod, mut collation) =
                    (pg_sys::InvalidOid, -1, pg_sys::InvalidOid);
                pg_sys::get_atttypetypmodcoll(
                    relid,
                    attnum,
                    &mut typid,
                    &mut typmod,
                    &mut collation,
                );
                crate::datum::column_bits(typid, typmod)
            })
            .flatten();
        match bits {
            Some(b) => Datum::from(b as i32),
            None => {
                (*fcinfo).isnull = true;
                Datum::from(0usize)
            }
        }
    }
}

/// `alerts_bloom_reference(attrs jsonb) RETURNS bit(512)`: the same bitmap
/// through the text path (jsonb_out + serde_json + the core's encoder), kept
/// so tests can check the native walk against it on every row.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom_reference(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom_reference");
    // SAFETY: STRICT, one jsonb argument.
    let attrs = unsafe { jsonb_value(arg(fcinfo, 0)) };
    bitmap_datum(&bloom(&attrs).or_raise())
}

/// `alerts_mask(filter jsonb) RETURNS bit(512)`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_mask(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_mask");
    // SAFETY: STRICT, one jsonb argument.
    let filter = unsafe { jsonb_value(arg(fcinfo, 0)) };
    bitmap_datum(&Filter::single_mask(&filter).or_raise())
}

/// `alerts_bloom_match(bitmap bit(512), filter jsonb) RETURNS bool`: the
/// per-row probabilistic test. Compiles the filter once per call site and
/// reads the bitmap in place: no allocation per row.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom_match(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom_match");
    // SAFETY: STRICT, arguments (bit, jsonb).
    unsafe {
        let f = compiled(fcinfo, arg(fcinfo, 1));
        let bm = bitmap_arg(arg(fcinfo, 0));
        Datum::from(f.bloom_match_bytes(bm))
    }
}

/// `alerts_attrs_match(attrs jsonb, filter jsonb) RETURNS bool`: the exact test.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_attrs_match(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_attrs_match");
    // SAFETY: STRICT, arguments (jsonb, jsonb).
    unsafe {
        let f = compiled(fcinfo, arg(fcinfo, 1));
        Datum::from(crate::jsonb::exact_match_of(f, arg(fcinfo, 0), &[]))
    }
}

/// `alerts_bloom_elements(attrs jsonb) RETURNS int`: elements hashed for a row.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom_elements(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom_elements");
    // SAFETY: STRICT, one jsonb argument.
    let n = unsafe { crate::jsonb::element_count_of(arg(fcinfo, 0)) };
    Datum::from(i32::try_from(n).unwrap_or(i32::MAX))
}

/// `alerts_format_version() RETURNS int`.
///
/// # Safety
/// Called by Postgres through the V1 convention.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_format_version(_fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_format_version");
    Datum::from(FORMAT_VERSION as i32)
}

/// `alerts_filter_jsonpath(filter jsonb) RETURNS jsonpath`: a predicate every
/// row matching the filter satisfies with `attribute_values @@ p`, in the form
/// a GIN index answers in one scan (the candidates `alerts_search` asks GIN
/// for); NULL when the filter has none (`{}`, a key with `[]`, nested values).
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_filter_jsonpath(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_filter_jsonpath");
    // SAFETY: STRICT, one jsonb argument; the compiled filter lives in fn_extra.
    let path = unsafe { compiled(fcinfo, arg(fcinfo, 0)) }.gin_jsonpath();
    match path {
        Some(p) => crate::datum::jsonpath_datum(&p),
        None => {
            // SAFETY: returning SQL NULL from a V1 function.
            unsafe { (*fcinfo).isnull = true };
            Datum::from(0usize)
        }
    }
}
