//! Who a search reads a table as. A query reads a table through a view
//! as the view's owner (Postgres checks the table's privileges, and picks
//! its policies, for the owner): the custom scan's searches run as that
//! role too (`ReadAs`), so their statements are refused or filtered
//! exactly as the query's own plan would be. Whether a role reads a table
//! as it is (`plain_read`) decides between the direct walk and the
//! planned statements.

use pgrx::pg_sys::{self, Oid};

/// Whether the current role reads `relid` exactly as a statement would
/// without the executor's help: `SELECT` on the whole table and no
/// row-level security policy in force. Checked on every call (roles change
/// within a session).
///
/// # Safety
/// `relid` must be a valid relation.
pub unsafe fn plain_read(relid: Oid) -> bool {
    // SAFETY: as `plain_read_as`'s.
    unsafe { plain_read_as(relid, pg_sys::GetUserId()) }
}

/// Whether role `role` reads `relid` as it is: `SELECT` on the whole
/// table and no row-level security policy in force for it.
///
/// # Safety
/// `relid` must be a valid relation.
pub unsafe fn plain_read_as(relid: Oid, role: Oid) -> bool {
    // SAFETY: catalog lookups of a valid relation.
    unsafe {
        reads_whole_rows(relid, role)
            && matches!(
                pg_sys::check_enable_rls(relid, role, true) as u32,
                pg_sys::CheckEnableRlsResult::RLS_NONE | pg_sys::CheckEnableRlsResult::RLS_NONE_ENV
            )
    }
}

/// Whether role `role` has `SELECT` on the whole of `relid` (not only
/// some columns): a search's statements read whole rows.
///
/// # Safety
/// `relid` must be a valid relation.
pub unsafe fn reads_whole_rows(relid: Oid, role: Oid) -> bool {
    // SAFETY: a catalog lookup of a valid relation.
    unsafe {
        pg_sys::pg_class_aclcheck(relid, role, pg_sys::ACL_SELECT as pg_sys::AclMode)
            == pg_sys::AclResult::ACLCHECK_OK
    }
}

/// ERRORs as Postgres does ("permission denied for schema ...") unless the
/// current role has USAGE on the schema of `relid`: what a statement
/// naming the table checks when it resolves the name. A search's table
/// comes from its first argument's type (a row value can reach a role
/// that may not name the table), and its direct walk opens the table by
/// OID, so nothing else checks it.
///
/// # Safety
/// `relid` must be a valid relation.
pub unsafe fn require_schema_usage(relid: Oid) {
    // SAFETY: catalog lookups of a valid relation.
    unsafe {
        let namespace = pg_sys::get_rel_namespace(relid);
        let result = crate::compat::namespace_aclcheck(
            namespace,
            pg_sys::GetUserId(),
            pg_sys::ACL_USAGE as pg_sys::AclMode,
        );
        if result != pg_sys::AclResult::ACLCHECK_OK {
            pg_sys::aclcheck_error(
                result,
                pg_sys::ObjectType::OBJECT_SCHEMA,
                pg_sys::get_namespace_name(namespace),
            );
        }
    }
}

/// The current role switched to another for as long as this lives (a
/// view's owner, for the searches of a query through the view), as
/// Postgres switches it for a `SECURITY DEFINER` function: `SET ROLE` is
/// refused meanwhile, and an error's abort restores the role too.
pub struct ReadAs {
    saved: Option<(Oid, i32)>,
}

impl ReadAs {
    /// Reads as `role` from now on; `InvalidOid` or the current role: no
    /// change.
    ///
    /// # Safety
    /// Within a transaction.
    pub unsafe fn begin(role: Oid) -> ReadAs {
        // SAFETY: the backend's current user, read and set.
        unsafe {
            if role == pg_sys::InvalidOid || role == pg_sys::GetUserId() {
                return ReadAs { saved: None };
            }
            let (mut user, mut context) = (pg_sys::InvalidOid, 0);
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                role,
                context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
            );
            ReadAs {
                saved: Some((user, context)),
            }
        }
    }
}

impl Drop for ReadAs {
    fn drop(&mut self) {
        if let Some((user, context)) = self.saved {
            // SAFETY: restores what `begin` read.
            unsafe { pg_sys::SetUserIdAndSecContext(user, context) }
        }
    }
}
