//! The form in which a Citus worker sends a page back for a routed call: one
//! `bytea` (Citus moves it in binary, untouched), the rows' columns in each
//! type's binary send format. Citus sends a row type or an array of rows as
//! text: printing then parsing a page of 50 rows that way took 2.2 ms of a
//! 4.5 ms call; a page in columns needed a routed statement Citus plans
//! again on every call.
//!
//! Layout (network byte order): the number of columns sent (the table's
//! columns that are not dropped), then per row, per column, the length of
//! its value (-1 for NULL) and the value. A `jsonb` column is sent in its
//! stored form (as `alerts_jsonb_bytes` gives it: jsonb's own send format
//! is JSON text, which the receiver would parse again). A column whose type
//! has no binary form both nodes can read (a composite, or an array of a
//! type created in the database: their binary forms carry type OIDs, which
//! differ from node to node) is sent in its text form. Both nodes hold the
//! same table definition, so they choose the same form for each column.

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::{arg, error};

crate::datum::finfo_v1!(pg_finfo_alerts_jsonb_bytes);

/// `alerts_jsonb_bytes(jsonb) RETURNS bytea`: a jsonb value's stored form
/// (its varlena, neither compressed nor out of line) as a `bytea`, which
/// Citus moves between nodes in binary, untouched. A routed page selects
/// its jsonb columns so, and the coordinator takes the bytes back as the
/// jsonb values they are (`routed.rs`): jsonb's own send and receive print
/// it as JSON text and parse it again, which took 40% of the
/// coordinator's CPU for a 50-row page (`perf`, `jsonb_recv`). The form
/// is Postgres' on-disk jsonb, the same in every major since 9.4 and on
/// every node of a cluster (Citus requires one major; its nodes share a
/// byte order in practice, as a streaming replica must).
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_jsonb_bytes(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_jsonb_bytes");
    // SAFETY: STRICT, one jsonb argument; detoasting gives a plain varlena
    // with a 4-byte header, which is a bytea's form too.
    unsafe { Datum::from(pg_sys::pg_detoast_datum(arg(fcinfo, 0).cast_mut_ptr())) }
}

/// How one column of the row type crosses.
struct Column {
    attno: usize,
    typ: Oid,
    typmod: i32,
    form: Form,
}

/// The form a column's values cross in.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// jsonb's stored form: the detoasted varlena's data
    Stored,
    /// the type's binary send format
    Binary,
    /// the type's text output
    Text,
}

/// The row type's columns that are not dropped.
///
/// # Safety
/// `desc` must be a valid tuple descriptor.
unsafe fn columns(desc: pg_sys::TupleDesc) -> Vec<Column> {
    // SAFETY: as the caller's.
    unsafe {
        (0..(*desc).natts as usize)
            .filter_map(|i| {
                let a = crate::compat::attribute(desc, i as i32 + 1);
                (!a.attisdropped).then(|| Column {
                    attno: i,
                    typ: a.atttypid,
                    typmod: a.atttypmod,
                    form: if a.atttypid == pg_sys::JSONBOID {
                        Form::Stored
                    } else if binary_safe(a.atttypid) {
                        Form::Binary
                    } else {
                        Form::Text
                    },
                })
            })
            .collect()
    }
}

/// Whether a type's binary form can be read on another node: it has one,
/// and it carries no OID of a type created in the database (a composite's
/// columns, an array's elements).
unsafe fn binary_safe(typ: Oid) -> bool {
    // SAFETY: catalog lookups of a valid type.
    unsafe {
        let base = pg_sys::getBaseType(typ);
        let has = |which| {
            let (mut len, mut byval, mut align, mut delim) = (0i16, false, 0, 0);
            let (mut ioparam, mut func) = (pg_sys::InvalidOid, pg_sys::InvalidOid);
            pg_sys::get_type_io_data(
                base,
                which,
                &mut len,
                &mut byval,
                &mut align,
                &mut delim,
                &mut ioparam,
                &mut func,
            );
            func != pg_sys::InvalidOid
        };
        let elem = pg_sys::get_element_type(base);
        has(pg_sys::IOFuncSelector::IOFunc_send)
            && has(pg_sys::IOFuncSelector::IOFunc_receive)
            && !pg_sys::type_is_rowtype(base)
            && (elem == pg_sys::InvalidOid
                || (u32::from(elem) < pg_sys::FirstNormalObjectId
                    && !pg_sys::type_is_rowtype(elem)))
    }
}

/// Which way a column crosses: sent by this node, or received from another.
#[derive(Clone, Copy)]
enum Direction {
    Out,
    In,
}

/// The function that writes (`Out`: send or output) or reads (`In`: receive
/// or input) a column in the form it crosses in, and the type's I/O
/// parameter (for `In`); a column in stored form is copied and calls none.
///
/// # Safety
/// `c` is a column of a valid row type.
unsafe fn io_function(c: &Column, way: Direction) -> (pg_sys::FmgrInfo, Oid) {
    let (mut func, mut ioparam, mut varlena) = (pg_sys::InvalidOid, pg_sys::InvalidOid, false);
    // SAFETY: catalog lookups of a valid type; fmgr_info fills `f`.
    unsafe {
        match (way, c.form) {
            (_, Form::Stored) => {}
            (Direction::Out, Form::Binary) => {
                pg_sys::getTypeBinaryOutputInfo(c.typ, &mut func, &mut varlena)
            }
            (Direction::Out, Form::Text) => {
                pg_sys::getTypeOutputInfo(c.typ, &mut func, &mut varlena)
            }
            (Direction::In, Form::Binary) => {
                pg_sys::getTypeBinaryInputInfo(c.typ, &mut func, &mut ioparam)
            }
            (Direction::In, Form::Text) => pg_sys::getTypeInputInfo(c.typ, &mut func, &mut ioparam),
        }
        let mut f = pg_sys::FmgrInfo::default();
        if c.form != Form::Stored {
            pg_sys::fmgr_info(func, &mut f);
        }
        (f, ioparam)
    }
}

/// The page's rows (composite datums of `rowtype`) as one `bytea`, built in
/// the current memory context.
///
/// # Safety
/// The rows must be live composite datums of `rowtype`.
pub unsafe fn encode(rows: &[Datum], rowtype: Oid) -> Datum {
    // SAFETY: as the caller's; the descriptor is released before returning.
    unsafe {
        let desc = pg_sys::lookup_rowtype_tupdesc(rowtype, -1);
        let cols = columns(desc);
        let mut out: Vec<u8> = Vec::with_capacity(64 + rows.len() * 512);
        out.extend_from_slice(&(cols.len() as i32).to_be_bytes());
        let mut fns: Vec<_> = cols
            .iter()
            .map(|c| io_function(c, Direction::Out).0)
            .collect();
        let natts = (*desc).natts as usize;
        let mut values = vec![Datum::from(0usize); natts];
        let mut nulls = vec![false; natts];
        for &row in rows {
            let td = crate::datum::row_header(row);
            crate::datum::check_row(td, desc);
            let mut tuple = crate::datum::row_tuple(td);
            pg_sys::heap_deform_tuple(&mut tuple, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            for (c, f) in cols.iter().zip(fns.iter_mut()) {
                if nulls[c.attno] {
                    out.extend_from_slice(&(-1i32).to_be_bytes());
                    continue;
                }
                let bytes = match c.form {
                    Form::Stored => {
                        let v = pg_sys::pg_detoast_datum(values[c.attno].cast_mut_ptr());
                        pgrx::varlena_to_byte_slice(v)
                    }
                    Form::Binary => {
                        let b = pg_sys::SendFunctionCall(f, values[c.attno]);
                        pgrx::varlena_to_byte_slice(b as *const pg_sys::varlena)
                    }
                    Form::Text => {
                        std::ffi::CStr::from_ptr(pg_sys::OutputFunctionCall(f, values[c.attno]))
                            .to_bytes()
                    }
                };
                out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                out.extend_from_slice(bytes);
            }
        }
        pg_sys::DecrTupleDescRefCount(desc);
        let b = pg_sys::palloc(out.len() + pg_sys::VARHDRSZ) as *mut pg_sys::varlena;
        pgrx::set_varsize_4b(b, (out.len() + pg_sys::VARHDRSZ) as i32);
        std::ptr::copy_nonoverlapping(out.as_ptr(), pgrx::vardata_any(b) as *mut u8, out.len());
        Datum::from(b)
    }
}

/// The rows of a page `encode` built on another node, as composite datums of
/// `rowtype` handed to `push` in order.
///
/// # Safety
/// `wire` must be a live `bytea` datum.
pub unsafe fn decode(wire: Datum, rowtype: Oid, mut push: impl FnMut(Datum) -> bool) {
    // SAFETY: as the caller's; every read is bounds-checked first.
    unsafe {
        let v = pg_sys::pg_detoast_datum_packed(wire.cast_mut_ptr());
        let data = pgrx::varlena_to_byte_slice(v);
        let desc = pg_sys::lookup_rowtype_tupdesc(rowtype, -1);
        let cols = columns(desc);
        let mut at = 0usize;
        let next_i32 = |at: &mut usize| -> i32 {
            let Some(b) = data.get(*at..*at + 4) else {
                malformed()
            };
            *at += 4;
            i32::from_be_bytes(b.try_into().unwrap())
        };
        if next_i32(&mut at) != cols.len() as i32 {
            error(
                PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                "alerts_search: the Citus worker sent a page whose rows have another number of columns than the table here".into(),
                "the table's definition differs between the coordinator and the worker: check the shard's columns with run_command_on_placements",
            );
        }
        let mut fns: Vec<_> = cols.iter().map(|c| io_function(c, Direction::In)).collect();
        let natts = (*desc).natts as usize;
        let mut values = vec![Datum::from(0usize); natts];
        let mut nulls = vec![true; natts];
        while at < data.len() {
            for (c, (f, ioparam)) in cols.iter().zip(fns.iter_mut()) {
                let len = next_i32(&mut at);
                if len < 0 {
                    values[c.attno] = Datum::from(0usize);
                    nulls[c.attno] = true;
                    continue;
                }
                let Some(bytes) = data.get(at..at + len as usize) else {
                    malformed()
                };
                at += len as usize;
                nulls[c.attno] = false;
                values[c.attno] = match c.form {
                    Form::Stored => stored_jsonb(bytes),
                    Form::Binary => {
                        // receive functions read a StringInfo whose data is
                        // NUL-terminated
                        let buf = pg_sys::makeStringInfo();
                        pg_sys::appendBinaryStringInfo(buf, bytes.as_ptr().cast(), len);
                        pg_sys::ReceiveFunctionCall(f, buf, *ioparam, c.typmod)
                    }
                    Form::Text => {
                        let s = std::ffi::CString::new(bytes).unwrap_or_else(|_| malformed());
                        pg_sys::InputFunctionCall(f, s.as_ptr() as *mut _, *ioparam, c.typmod)
                    }
                };
            }
            let tuple = pg_sys::heap_form_tuple(desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            if !push(pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)) {
                break;
            }
        }
        pg_sys::DecrTupleDescRefCount(desc);
    }
}

/// A jsonb value from its stored form's data (a varlena of its own, in
/// the current memory context). The bytes are what the worker's own jsonb
/// value held; an empty one cannot be a jsonb (its header is 4 bytes).
///
/// # Safety
/// In a memory context that lives as long as the row.
unsafe fn stored_jsonb(bytes: &[u8]) -> Datum {
    if bytes.len() < 4 {
        malformed();
    }
    // SAFETY: a fresh allocation of the varlena's size, filled whole.
    unsafe {
        let v = pg_sys::palloc(bytes.len() + pg_sys::VARHDRSZ) as *mut pg_sys::varlena;
        pgrx::set_varsize_4b(v, (bytes.len() + pg_sys::VARHDRSZ) as i32);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), pgrx::vardata_any(v) as *mut u8, bytes.len());
        Datum::from(v)
    }
}

fn malformed() -> ! {
    error(
        PgSqlErrorCode::ERRCODE_PROTOCOL_VIOLATION,
        "alerts_search: the page sent by the Citus worker is malformed".into(),
        "check that every node runs the same version of alerts: SELECT * FROM run_command_on_workers($$SELECT extversion FROM pg_extension WHERE extname = 'alerts'$$)",
    )
}
