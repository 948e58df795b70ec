//! `alerts_bloom_trigger()`: a BEFORE INSERT OR UPDATE row trigger that sets
//! the bitmap column from the attributes column on every write, so a direct
//! write to the bitmap can never leave it out of step.
//!
//! Trigger arguments: `(attributes_column, bitmap_column)`, defaulting to
//! `attribute_values` and `attribute_values_bitmap`.

use std::ffi::CStr;

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};
use pgrx::PgSqlErrorCode;

use crate::datum::{bitmap_datum_bits, error};

crate::datum::finfo_v1!(pg_finfo_alerts_bloom_trigger);

const DEFAULT_ATTRS: &str = "attribute_values";
const DEFAULT_BITMAP: &str = "attribute_values_bitmap";
const USAGE: &str = "CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON <table> FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('<jsonb column>', '<bit(512), bit(256) or bit(128) column>')";

/// # Safety
/// Called by Postgres through the V1 convention as a trigger.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_bloom_trigger(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_bloom_trigger");
    // SAFETY: we check that the context is a TriggerData before reading it;
    // the tuple, relation and trigger pointers are valid for this call.
    unsafe {
        let ctx = (*fcinfo).context;
        if ctx.is_null() || (*ctx).type_ != pg_sys::NodeTag::T_TriggerData {
            error(
                PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                "alerts_bloom_trigger() was called outside a trigger".into(),
                &format!("create it as: {USAGE}"),
            );
        }
        let td = ctx as *mut pg_sys::TriggerData;
        let event = (*td).tg_event;
        let rel = (*td).tg_relation;
        let relname = CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr())
            .to_string_lossy()
            .into_owned();
        let before = event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE;
        let row = event & pg_sys::TRIGGER_EVENT_ROW != 0;
        let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
        let is_update = op == pg_sys::TRIGGER_EVENT_UPDATE;
        if !before || !row || !(op == pg_sys::TRIGGER_EVENT_INSERT || is_update) {
            error(
                PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                format!("alerts_bloom_trigger() on \"{relname}\" must fire BEFORE INSERT OR UPDATE FOR EACH ROW"),
                &format!("create it as: {USAGE}"),
            );
        }
        let trigger = (*td).tg_trigger;
        let nargs = (*trigger).tgnargs as usize;
        let args: Vec<String> = (0..nargs)
            .map(|i| {
                CStr::from_ptr(*(*trigger).tgargs.add(i))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        if nargs > 2 {
            error(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("alerts_bloom_trigger() on \"{relname}\" takes at most 2 arguments, got {nargs}"),
                &format!("create it as: {USAGE}"),
            );
        }
        let attrs_col = args.first().map(String::as_str).unwrap_or(DEFAULT_ATTRS);
        let bitmap_col = args.get(1).map(String::as_str).unwrap_or(DEFAULT_BITMAP);
        let tupdesc = (*rel).rd_att;
        let attrs_no = column(
            tupdesc,
            &relname,
            attrs_col,
            "attributes",
            &[pg_sys::JSONBOID],
            "jsonb",
        );
        let bitmap_no = column(
            tupdesc,
            &relname,
            bitmap_col,
            "bitmap",
            &[pg_sys::BITOID, pg_sys::VARBITOID],
            "bit(512)",
        );
        let bits = bitmap_bits(tupdesc, bitmap_no, &relname, bitmap_col);

        let tuple = if is_update {
            (*td).tg_newtuple
        } else {
            (*td).tg_trigtuple
        };
        let mut isnull = false;
        let attrs = pg_sys::SPI_getbinval(tuple, tupdesc, attrs_no, &mut isnull);
        let (value, value_null) = if isnull {
            // NULL attributes give a NULL bitmap, as the STRICT alerts_bloom() does.
            (Datum::from(0usize), true)
        } else {
            (
                bitmap_datum_bits(&crate::jsonb::bloom_of(attrs), bits),
                false,
            )
        };
        let mut cols = [bitmap_no];
        let mut values = [value];
        let mut nulls = [value_null];
        let newtuple = pg_sys::heap_modify_tuple_by_cols(
            tuple,
            tupdesc,
            1,
            cols.as_mut_ptr(),
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        );
        Datum::from(newtuple)
    }
}

/// The attribute number of a user column of one of the `types`, or an ERROR
/// that names the table, the column and the fix.
unsafe fn column(
    tupdesc: pg_sys::TupleDesc,
    relname: &str,
    name: &str,
    role: &str,
    types: &[pg_sys::Oid],
    type_name: &str,
) -> i32 {
    let cname = std::ffi::CString::new(name).unwrap_or_default();
    // SAFETY: tupdesc is the trigger relation's; SPI_fnumber only reads it.
    let attno = unsafe { pg_sys::SPI_fnumber(tupdesc, cname.as_ptr()) };
    if attno <= 0 {
        error(
            PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            format!("alerts_bloom_trigger(): table \"{relname}\" has no column \"{name}\" for the {role}"),
            &format!("add a {type_name} column \"{name}\", or pass the column names as trigger arguments: {USAGE}"),
        );
    }
    // SAFETY: attno is a valid 1-based user column number of tupdesc.
    let typid = unsafe { pg_sys::SPI_gettypeid(tupdesc, attno) };
    if !types.contains(&typid) {
        error(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!("alerts_bloom_trigger(): column \"{name}\" of table \"{relname}\" must be {type_name} to hold the {role}"),
            &format!("ALTER TABLE {relname} ALTER COLUMN {name} TYPE {type_name}, or name another column in the trigger arguments"),
        );
    }
    attno
}

/// The bitmap column's width: a `bit(n)` column must be `bit(512)`,
/// `bit(256)` or `bit(128)` (the narrower hold the bitmap folded); a `bit
/// varying(n)` must hold 512 bits.
unsafe fn bitmap_bits(tupdesc: pg_sys::TupleDesc, attno: i32, relname: &str, name: &str) -> usize {
    // SAFETY: attno was validated by `column`.
    let att = unsafe { crate::compat::attribute(tupdesc, attno) };
    let typmod = att.atttypmod;
    match crate::datum::column_bits(att.atttypid, typmod) {
        Some(bits) => bits,
        None => error(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!("alerts_bloom_trigger(): column \"{name}\" of table \"{relname}\" must be bit(512), bit(256) or bit(128), its length is {typmod}"),
            &format!("ALTER TABLE {relname} ALTER COLUMN {name} TYPE bit(512) USING NULL (or bit(256), bit(128): smaller, more false candidates)"),
        ),
    }
}
