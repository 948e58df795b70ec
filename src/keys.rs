//! `alerts_keys(organisation_id text, id text, attrs jsonb) RETURNS bigint[]`:
//! the tenant keys of a row (see `alerts_core::keys`), for the expression GIN
//! index that `alerts_search` uses for rare filters:
//!
//! ```sql
//! CREATE INDEX CONCURRENTLY alerts_keys_idx ON alerts
//!     USING gin (alerts_keys(organisation_id, id, attribute_values));
//! ```

use alerts_core::keys::RowKeys;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};

use crate::datum::{arg, varlena_bytes};

crate::datum::finfo_v1!(pg_finfo_alerts_keys);

/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_keys(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_keys");
    // SAFETY: STRICT, arguments (text, text, jsonb).
    unsafe {
        let tenant = varlena_bytes(arg(fcinfo, 0));
        let id = varlena_bytes(arg(fcinfo, 1));
        let mut rk = RowKeys::new(tenant, id);
        crate::jsonb::for_each_element_of(arg(fcinfo, 2), |k, tag, v| rk.add(k, tag, v));
        int8_array(&rk.finish())
    }
}

/// A `bigint[]` datum of the values, in the current memory context.
pub fn int8_array(values: &[i64]) -> Datum {
    let mut elems: Vec<Datum> = values.iter().map(|&v| Datum::from(v)).collect();
    // SAFETY: construct_array copies the by-value elements into a new array.
    unsafe {
        Datum::from(pg_sys::construct_array(
            elems.as_mut_ptr(),
            elems.len() as i32,
            pg_sys::INT8OID,
            8,
            true,
            b'd' as std::ffi::c_char,
        ))
    }
}
