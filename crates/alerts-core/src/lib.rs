//! Pure Rust core of the `alerts` PostgreSQL extension.
//!
//! Nothing in this crate knows about Postgres: it turns JSON attribute objects
//! into bloom bitmaps, compiles filters into masks and exact matchers, and
//! encodes ULIDs. The extension crate is thin glue over these functions, so
//! everything here is tested by plain `cargo test -p alerts-core`.
//!
//! The bitmap layout (element encoding + hashing) is an on-disk format: see
//! [`bloom::FORMAT_VERSION`] and the golden vectors in the tests. Changing it
//! silently corrupts every stored bitmap.

pub mod bloom;
pub mod columns;
pub mod containment;
pub mod encoding;
pub mod error;
pub mod filter;
pub mod jsonpath;
pub mod keys;
pub mod postings;
pub mod routes;
pub mod ulid;
pub mod walk;
pub mod weeks;

pub use bloom::{Bitmap, BITMAP_BITS, BITMAP_BYTES, FORMAT_VERSION, HASHES};
pub use error::Error;
pub use filter::Filter;
