//! What searches did, counted for `EXPLAIN ANALYZE` of the custom scan: the
//! index entries walked, the rows fetched as bloom candidates and checked
//! exactly, and which route answered each page. A few additions to
//! thread-local counters per entry; read and reset by whoever shows them.

use std::cell::Cell;

/// How one page was answered.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Route {
    /// The walk of the pagination index alone.
    #[default]
    Walk,
    /// The walk, then the tenant-keys index for the rest of the page.
    WalkThenKeys,
    /// The walk, then one GIN scan for the rest of the page.
    WalkThenGin,
    /// A tenant and filter this session found rare: the tenant-keys index
    /// straight away.
    RememberedKeys,
    /// As above, through GIN.
    RememberedGin,
    /// A Citus tenant on another node: one routed statement.
    Routed,
    /// An oldest-first page where the direct walk cannot read the table
    /// (row-level security, column grants): one statement the planner
    /// plans.
    Planned,
}

impl Route {
    pub const ALL: [Route; 7] = [
        Route::Walk,
        Route::WalkThenKeys,
        Route::WalkThenGin,
        Route::RememberedKeys,
        Route::RememberedGin,
        Route::Routed,
        Route::Planned,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Route::Walk => "walk",
            Route::WalkThenKeys => "walk, then tenant keys",
            Route::WalkThenGin => "walk, then GIN",
            Route::RememberedKeys => "tenant keys (remembered rare)",
            Route::RememberedGin => "GIN (remembered rare)",
            Route::Routed => "routed to the tenant's node",
            Route::Planned => "one planned statement (oldest first)",
        }
    }
}

/// The counters since the last [`take`].
#[derive(Clone, Copy, Default, Debug)]
pub struct Trace {
    /// Pagination index entries read.
    pub entries: u64,
    /// Rows fetched because their bitmap (or tenant key) may match.
    pub candidates: u64,
    /// Of those, the rows that matched exactly.
    pub matches: u64,
    /// Pages answered by each route, in [`Route::ALL`]'s order.
    pub pages: [u64; 7],
    /// The last walk left for a rare path: its matches and entries read
    /// when it left.
    pub left_after: Option<(i64, i64)>,
    /// Heap rows the in-place bitmap readers fetched, any tenant's (what a
    /// rare path's answer cost, for the route memory).
    pub fetched: u64,
    /// Statements run by the rare paths and statement walks.
    pub statements: u64,
    /// Partitions locked but not opened: their `CHECK` on `id` keeps them
    /// out of the window.
    pub skipped_by_check: u64,
    /// Partitions neither locked nor opened: their time range, with the
    /// parent's `alerts_ulid_near`, keeps them out of the window.
    pub pruned_by_time: u64,
}

/// The counters, and the route of the page being answered (a slot of the
/// backend's state).
#[derive(Default)]
struct State {
    trace: Cell<Trace>,
    page: Cell<Route>,
}

fn state() -> &'static State {
    crate::backend::slot()
}

fn update(f: impl FnOnce(&mut Trace)) {
    let t = &state().trace;
    let mut v = t.get();
    f(&mut v);
    t.set(v);
}

/// Returns the counters and starts them again.
pub fn take() -> Trace {
    state().trace.replace(Trace::default())
}

/// The counters so far, kept running.
pub fn now() -> Trace {
    state().trace.get()
}

/// Heap rows an in-place bitmap reader fetched.
pub fn fetched(rows: u64) {
    update(|t| t.fetched += rows);
}

/// A partition was left unopened by its `CHECK` on `id`.
pub fn skipped_by_check() {
    update(|t| t.skipped_by_check += 1);
}

/// Partitions were left out by their time range (`near.rs`).
pub fn pruned_by_time(n: u64) {
    update(|t| t.pruned_by_time += n);
}

/// A statement ran.
pub fn statement() {
    update(|t| t.statements += 1);
}

/// Index entries read by a walk.
pub fn walked(entries: i64) {
    update(|t| t.entries += entries.max(0) as u64);
}

/// Candidates checked exactly, and how many of them matched.
pub fn candidates((checked, matched): (u64, u64)) {
    update(|t| {
        t.candidates += checked;
        t.matches += matched;
    });
}

/// A page is being answered, starting with `route`.
pub fn page_starts(route: Route) {
    state().page.set(route);
}

/// The walk left for a rare path after `hits` matches in `entries` entries.
pub fn left_walk(hits: i64, entries: i64) {
    update(|t| t.left_after = Some((hits, entries)));
}

/// The rare path that answered the rest of the page: the tenant keys when
/// `keys`, else GIN (a walk to the end keeps the page's route).
pub fn rare_path(keys: bool) {
    let p = &state().page;
    p.set(match (p.get(), keys) {
        (Route::RememberedKeys | Route::RememberedGin, true) => Route::RememberedKeys,
        (Route::RememberedKeys | Route::RememberedGin, false) => Route::RememberedGin,
        (_, true) => Route::WalkThenKeys,
        (_, false) => Route::WalkThenGin,
    });
}

/// The page is answered: counts its route.
pub fn page_ends() {
    let route = state().page.get();
    let i = Route::ALL.iter().position(|&r| r == route).unwrap_or(0);
    update(|t| t.pages[i] += 1);
}
