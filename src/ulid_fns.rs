//! `alerts_ulid_floor`, `alerts_ulid_time`, `alerts_ulid`: the time window
//! bound and id generation.

use alerts_core::ulid;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};
use pgrx::PgSqlErrorCode;

use crate::datum::{arg, error, text_datum, varlena_bytes, OrRaise};

crate::datum::finfo_v1!(
    pg_finfo_alerts_ulid_floor,
    pg_finfo_alerts_ulid_time,
    pg_finfo_alerts_ulid
);

fn ts_arg_ms(ts: i64) -> u64 {
    ulid::unix_ms_of_pg_timestamp(ts).unwrap_or_else(|| {
        error(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "timestamp is after the last time a ULID can hold (10889-08-02 05:31:50.655 UTC)"
                .into(),
            "pass a finite timestamp before the year 10889",
        )
    })
}

/// `alerts_ulid_floor(ts timestamptz) RETURNS text`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_ulid_floor(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_ulid_floor");
    // SAFETY: STRICT, one timestamptz (int64 by value).
    let ts = unsafe { arg(fcinfo, 0) }.value() as i64;
    let s = ulid::floor(ts_arg_ms(ts));
    text_datum(std::str::from_utf8(&s).expect("ascii"))
}

/// `alerts_ulid_time(id text) RETURNS timestamptz`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_ulid_time(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_ulid_time");
    // SAFETY: STRICT, one text argument.
    let bytes = unsafe { varlena_bytes(arg(fcinfo, 0)) };
    let s = String::from_utf8_lossy(bytes);
    let (ms, _) = ulid::decode(&s).or_raise();
    Datum::from(ulid::pg_timestamp_of_unix_ms(ms))
}

/// `alerts_ulid(ts timestamptz DEFAULT clock_timestamp()) RETURNS text`:
/// a new ULID of that time with 80 bits from the OS's strong random source.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_ulid(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_ulid");
    // SAFETY: STRICT, one timestamptz (int64 by value).
    let ts = unsafe { arg(fcinfo, 0) }.value() as i64;
    let ms = ts_arg_ms(ts);
    let mut buf = [0u8; 16];
    // SAFETY: pg_strong_random writes exactly `len` bytes into `buf`.
    if !unsafe { pg_sys::pg_strong_random(buf.as_mut_ptr() as *mut std::ffi::c_void, 10) } {
        error(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "could not generate random bytes for a ULID".into(),
            "check that the server can read its strong random source",
        );
    }
    let s = ulid::encode(ms, u128::from_le_bytes(buf));
    text_datum(std::str::from_utf8(&s).expect("ascii"))
}
