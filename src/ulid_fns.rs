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
    pg_finfo_alerts_ulid,
    pg_finfo_alerts_ulid_near,
    pg_finfo_alerts_ulid_bound
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

/// An `interval` argument as microseconds: a tolerance, never negative
/// and never in months (whose length depends on the date).
///
/// # Safety
/// `d` is a live `interval` datum.
unsafe fn within_us(d: Datum) -> i64 {
    // SAFETY: as the caller's (an interval is passed by reference).
    let iv = unsafe { &*(d.cast_mut_ptr::<pg_sys::Interval>()) };
    let us = iv.time as i128 + iv.day as i128 * 86_400_000_000;
    if iv.month != 0 || !(0..=i64::MAX as i128).contains(&us) {
        error(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "the tolerance of alerts_ulid_near must be a duration of days, hours, minutes or seconds, at least zero, without months or years".into(),
            "give it as, for example, interval '5 minutes'",
        )
    }
    us as i64
}

/// `alerts_ulid_near(id text, at timestamptz, within interval) RETURNS
/// boolean`: `id` is a canonical ULID whose time is within `within` of `at`.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_ulid_near(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_ulid_near");
    // SAFETY: STRICT: text, timestamptz (by value), interval.
    unsafe {
        let within = within_us(arg(fcinfo, 2));
        let at = arg(fcinfo, 1).value() as i64;
        let id = String::from_utf8_lossy(varlena_bytes(arg(fcinfo, 0)));
        Datum::from(ulid::near(&id, at, within))
    }
}

/// `alerts_ulid_bound(ts timestamptz, within interval, upper boolean,
/// declared oid) RETURNS text`: the bound on `id` that a bound on the time
/// column implies where constraint `declared` (`alerts_ulid_near`) holds
/// for every row the statement's snapshot sees: `id >=` it for `time >=
/// ts`, `id <` it (upper) for `time <= ts`. NULL, no bound, when the
/// constraint is gone, not validated (or not enforced), or was added or
/// validated after the snapshot was taken (a row deleted before then,
/// which the snapshot still sees, was never checked against it).
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_ulid_bound(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_ulid_bound");
    // SAFETY: STRICT: timestamptz, interval, boolean, oid.
    unsafe {
        let within = within_us(arg(fcinfo, 1));
        let ts = arg(fcinfo, 0).value() as i64;
        let upper = arg(fcinfo, 2).value() != 0;
        let declared = pg_sys::Oid::from(arg(fcinfo, 3).value() as u32);
        if !crate::search::checks::holds_for_snapshot(declared) {
            (*fcinfo).isnull = true;
            return Datum::from(0);
        }
        let bound = if upper {
            ulid::upper_of_time(ts, within)
        } else {
            ulid::lower_of_time(ts, within)
        };
        crate::datum::text_of(&bound)
    }
}
