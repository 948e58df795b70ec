//! The walkers behind one trait: what the page algorithms (`walk.rs`
//! newest first, `oldest.rs` oldest first, `rare.rs` the rare paths) ask of
//! whatever reads the window: chunks of the pagination index, the rows at
//! or after '8', the ends of the window, the rare paths' indexes read as
//! bitmaps.
//! Two implement it with the same answers: the direct scan (`scan/`) and
//! the prepared statements (`walk.rs`'s `StatementWalk`).

use pgrx::pg_sys::Datum;

use super::page::Page;

/// What one chunk of a walk read.
#[derive(Default)]
pub struct Walked {
    /// Index entries read.
    pub entries: i64,
    /// Matches added to the page.
    pub hits: i64,
    /// Milliseconds of ULID time between the chunk's newest and oldest
    /// entry, when both are ULIDs.
    pub span_ms: Option<u64>,
    /// The walk reached the end of the window.
    pub end: bool,
}

/// A walker: reads the window in chunks, adding matches to the page as it
/// finds them.
pub trait Walk {
    /// Adds the rows whose ids sort at or after '8' (no ULID does): read on
    /// first pages, before the ULIDs (or by the first chunk, for a walker
    /// that reads them first anyway).
    ///
    /// # Safety
    /// The call's datums are live; SPI is connected for the statements.
    unsafe fn above(&mut self, page: &mut Page);
    /// Whether the walk's first chunk reads those rows first anyway (then
    /// `above` is called only for a call sent straight to a rare path).
    fn reads_above_first(&self) -> bool {
        false
    }
    /// Whether the rare paths' indexes are read in place, as bitmaps (no
    /// statement): then a shorter window is worth leaving for them.
    fn reads_bitmaps(&self) -> bool {
        false
    }
    /// Reads the next `entries` entries (all the rest when None), adding
    /// matches until the page is full.
    ///
    /// # Safety
    /// As [`Walk::above`].
    unsafe fn chunk(&mut self, page: &mut Page, entries: Option<i64>) -> Walked;
    /// Where the walk stopped: ids below it are unread. None before the
    /// first entry.
    ///
    /// # Safety
    /// As [`Walk::above`].
    unsafe fn cursor(&self) -> Option<Datum>;
    /// The newest (or oldest) id of the window below `upper`, visible or
    /// not: the rare paths only bound ranges with it, and a dead entry's id
    /// only widens them.
    ///
    /// # Safety
    /// As [`Walk::above`].
    unsafe fn end_id(&mut self, upper: Datum, newest: bool) -> Option<Vec<u8>>;
    /// A rare path's index read directly as a bitmap (`bitmap`: which
    /// index, and what it is asked): the rows above `lower` (or at it when
    /// not strict) and below `upper` (when there is one) that it finds,
    /// checked exactly, in the walk's order, as many as the page wants.
    /// False, having added nothing, when this walker cannot (then the
    /// path's statement answers).
    ///
    /// # Safety
    /// As [`Walk::above`]; the bitmap's datums are live.
    unsafe fn bitmap_range(
        &mut self,
        bitmap: Bitmap,
        lower: (Datum, bool),
        upper: Option<Datum>,
        page: &mut Page,
    ) -> bool;
}

/// The index a rare path reads as a bitmap, and what it asks of it.
#[derive(Clone, Copy)]
pub enum Bitmap<'a> {
    /// The tenant-keys index: rows whose keys overlap every array (`int8[]`
    /// datums, one per clause).
    Keys(&'a [Datum]),
    /// The GIN index on the attributes: rows its `@@` finds for the
    /// filter's jsonpath (a `jsonpath` datum).
    Gin(Datum),
    /// The same for the rarest of the filter's clauses (each clause's
    /// jsonpath; every match satisfies each), only when its entries list
    /// at most `at_most` rows in all, inline (read in place, one descent a
    /// key): else nothing is read.
    SmallGin(&'a [Datum], usize),
}
