"""The benchmark's data: the generated rows, the partitioned layouts, the
extension refreshed on them, the scenarios (tenants, filters, pages) and
the sizes of what was built."""

import time
import common
from common import ARRAY_ATTRS, ROOT, SIZES, has_rum, lit, psql, psql_file

def build(db, size, anchor):
    exists = psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = {lit(db)}")
    if exists:
        meta = psql(db, "SELECT to_regclass('bench_meta') IS NOT NULL")[0][0] == "t" and \
            psql(db, "SELECT size, anchor FROM bench_meta")
        if meta and meta[0][0] == size:
            print(f"bench: reusing database {db} (built for {size}, anchor {meta[0][1]})")
            return meta[0][1]
        psql("postgres", f"DROP DATABASE {db}")
    psql("postgres", f"CREATE DATABASE {db}")
    t0 = time.time()
    psql_file(db, ROOT / "benches/sql/schema.sql")
    if common.BITS != 512:
        # the same bitmap folded to a narrower column, written by the trigger
        psql(db, f"ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit({common.BITS})")
    psql_file(db, ROOT / "benches/sql/tags.sql")
    params = dict(SIZES[size], anchor=anchor)
    psql_file(db, ROOT / "benches/sql/generate.sql", params)
    t1 = time.time()
    psql_file(db, ROOT / "benches/sql/peers.sql", dict(rum="on" if has_rum() else "off"))
    t2 = time.time()
    psql(db, f"CREATE TABLE bench_meta AS SELECT {lit(size)}::text AS size, {lit(anchor)}::text AS anchor")
    print(f"bench: generated {size} in {t1 - t0:.0f} s, peer structures in {t2 - t1:.0f} s")
    return anchor


# --- partitioned layouts ------------------------------------------------------
# The same rows as `alerts`, copied into a table partitioned by month (13
# partitions cover the 365 days before the anchor), with the recommended
# setup on the parent: trigger, pagination index with the bitmap INCLUDEd,
# tenant-keys index, and GIN jsonb_path_ops for the peer.
LAYOUTS = {
    "plain": None,
    # the usual layout: by time, as docs/partitioned-tables.md recommends
    # it: alerts_search's window is an id range, and each partition's CHECK
    # on id (its months' ULID floors, written as text) leaves the months
    # outside it unread
    "by-created": dict(table="alerts_by_created", key="created_at", pk="(id, created_at)"),
    # by id with ULID month bounds: the window prunes to the months it covers
    "by-id": dict(table="alerts_by_id", key="id", pk="(id)"),
    # as pg_partman keeps history (issue 80): by created_at, no CHECK on id
    # (pg_partman writes none); the search prunes leaves by their created_at
    # bounds where the parent declares `alerts_ulid_near` (DECLARE)
    "partman-daily": dict(table="alerts_partman_daily", key="created_at", pk="(id, created_at)",
                          interval="daily", start="365 days", premake=20),
    # hourly with a 30-day retention: only the last 30 days' rows
    "partman-hourly": dict(table="alerts_partman_hourly", key="created_at", pk="(id, created_at)",
                           interval="hourly", start="30 days", premake=24, retention="30 days"),
}
# How a partman layout's parent declares that ids follow created_at (the
# generator's ids carry their row's created_at to the millisecond). It
# calls the extension, so refresh_extension drops it: add it after.
def declare_near(db, table):
    psql(db, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_id_near_created; "
             f"ALTER TABLE {table} ADD CONSTRAINT {table}_id_near_created "
             f"CHECK (alerts_ulid_near(id, created_at, '1 second'))")
LAYOUT_METHODS = ["gin", "gin_all", "ext_ios", "search_cold", "search"]


def _built(db, t, anchor):
    """Whether table `t` was built for this anchor (its comment says so),
    by an earlier run on this database: then it is reused."""
    done = psql(db, f"SELECT obj_description(to_regclass({lit(t)}), 'pg_class') = {lit('bench ' + anchor)}")
    if done and done[0][0] == "t":
        print(f"bench: reusing {t}")
        return True
    return False


def build_layout(db, layout, anchor):
    spec = LAYOUTS[layout]
    t = spec["table"]
    if _built(db, t, anchor):
        return
    t0 = time.time()
    if "interval" in spec:
        return build_partman(db, spec, anchor, t0)
    months = psql(db, f"""SELECT to_char(m, 'YYYY_MM'), m, m + interval '1 month',
                                 alerts_ulid_floor(m), alerts_ulid_floor(m + interval '1 month')
                          FROM generate_series(date_trunc('month', {lit(anchor)}::timestamptz - interval '365 days'),
                                               {lit(anchor)}::timestamptz, interval '1 month') m""")
    ddl = [f"DROP TABLE IF EXISTS {t} CASCADE",
           f"CREATE TABLE {t} (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY {spec['pk']}) "
           f"PARTITION BY RANGE ({spec['key']})"]
    for name, lo, hi, idlo, idhi in months:
        lo, hi = (lo, hi) if spec["key"] == "created_at" else (idlo, idhi)
        ddl.append(f"CREATE TABLE {t}_{name} PARTITION OF {t} FOR VALUES FROM ({lit(lo)}) TO ({lit(hi)})")
        if spec["key"] == "created_at":
            ddl.append(f"ALTER TABLE {t}_{name} ADD CONSTRAINT {t}_{name}_ids "
                       f"CHECK (id >= {lit(idlo)} AND id < {lit(idhi)})")
    psql(db, "; ".join(ddl))
    psql(db, f"INSERT INTO {t} SELECT * FROM alerts")
    psql(db, f"SET maintenance_work_mem = '1GB'; "
             f"CREATE INDEX {t}_pagination_bitmap ON {t} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap); "
             f"{GIN_BUILD}; CREATE INDEX {t}_gin ON {t} USING gin (attribute_values jsonb_path_ops)")
    psql(db, f"VACUUM (ANALYZE) {t}")
    psql(db, f"COMMENT ON TABLE {t} IS {lit('bench ' + anchor)}")
    print(f"bench: {t}: {len(months)} monthly partitions by {spec['key']} built in {time.time() - t0:.0f} s", flush=True)


def build_partman(db, spec, anchor, t0):
    """The rows in a pg_partman-managed table, made as its documentation
    says: the parent, then `create_parent`; the setup on the parent (Postgres
    gives each leaf pg_partman creates the parent's indexes and trigger)."""
    t = spec["table"]
    psql(db, ["CREATE SCHEMA IF NOT EXISTS partman", "CREATE EXTENSION IF NOT EXISTS pg_partman SCHEMA partman",
              f"DROP TABLE IF EXISTS {t} CASCADE",
              f"DELETE FROM partman.part_config WHERE parent_table = 'public.{t}'",
              f"DROP TABLE IF EXISTS partman.template_public_{t}",
              f"CREATE TABLE {t} (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY {spec['pk']}) "
              f"PARTITION BY RANGE ({spec['key']})"])
    start = f"{lit(anchor)}::timestamptz - interval {lit(spec['start'])}"
    psql(db, f"SELECT partman.create_parent('public.{t}', 'created_at', 'native', {lit(spec['interval'])}, "
             f"p_start_partition := ({start})::text, p_premake := {spec['premake']})")
    if spec.get("retention"):
        psql(db, f"UPDATE partman.part_config SET retention = {lit(spec['retention'])}, "
                 f"retention_keep_table = false WHERE parent_table = 'public.{t}'")
    psql(db, f"INSERT INTO {t} SELECT * FROM alerts WHERE created_at >= {start}")
    psql(db, f"SET maintenance_work_mem = '1GB'; "
             f"CREATE INDEX {t}_pagination_bitmap ON {t} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap); "
             f"{GIN_BUILD}; CREATE INDEX {t}_gin ON {t} USING gin (attribute_values jsonb_path_ops)")
    psql(db, f"VACUUM (ANALYZE) {t}")
    psql(db, f"COMMENT ON TABLE {t} IS {lit('bench ' + anchor)}")
    leaves = psql(db, f"SELECT count(*) FROM pg_partition_tree({lit(t)}) WHERE isleaf")[0][0]
    print(f"bench: {t}: {leaves} {spec['interval']} leaves by pg_partman built in {time.time() - t0:.0f} s", flush=True)


# The portable form's table (docs/managed-postgres.md): alerts' rows with
# the tenant keys in a bigint[] column under a built-in GIN, as a client
# writes them, for alerts_portable.search's rare filters. A copy, so the
# other methods keep their table as it was.
PORTABLE_TABLE = "alerts_portable_copy"


def portable_copy(db, anchor):
    t = PORTABLE_TABLE
    if _built(db, t, anchor):
        _all_visible(db, t)
        return
    t0 = time.time()
    psql(db, f"""DROP TABLE IF EXISTS {t};
        CREATE TABLE {t} AS SELECT id, organisation_id, created_at, priority_id, attribute_values,
            attribute_values_bitmap, alerts_keys(organisation_id, id, attribute_values) AS attribute_keys FROM alerts;
        ALTER TABLE {t} ADD PRIMARY KEY (id);
        CREATE INDEX {t}_page ON {t} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
        {GIN_BUILD}; CREATE INDEX {t}_keys ON {t} USING gin (attribute_keys);
        COMMENT ON TABLE {t} IS {lit('bench ' + anchor)}""")
    psql(db, f"VACUUM ANALYZE {t}")
    _all_visible(db, t)
    print(f"bench: {t}: built in {time.time() - t0:.0f} s", flush=True)


def _all_visible(db, t):
    """The portable walk is an index-only scan: with pages not marked
    all-visible (a VACUUM that ran while an older snapshot was open) each
    entry is a heap fetch. VACUUM until the map covers the table."""
    for _ in range(3):
        pages, visible = map(int, psql(db, f"SELECT relpages, relallvisible FROM pg_class WHERE oid = {lit(t)}::regclass")[0])
        if visible >= 0.99 * pages:
            return
        psql(db, f"VACUUM {t}")
    print(f"bench: {t}: {visible} of {pages} pages all-visible after VACUUM", flush=True)


# --- scenarios ----------------------------------------------------------------

# GIN-family indexes (the tenant keys, and every GIN or RUM peer) are built
# with PostgreSQL's default maintenance_work_mem, as users build them, and
# not with the scratch cluster's 1GB: with one sorted batch in memory a GIN
# build inserts its keys in ascending order, and GIN splits a full entry page
# in half, so the pages it leaves behind stay half empty. The tenant-keys
# index of the `full` rows is 445 MiB built with 1GB and 343 MiB with 64MB
# or 16MB (GIN jsonb_path_ops 145 and 133 MiB).
GIN_BUILD = "SET maintenance_work_mem = '64MB'"


def refresh_extension(db, tables):
    """Recreates the extension's objects from the installed version, so a
    reused database measures the code just built, not the code it was
    generated with. Bitmaps are a frozen format and stay."""
    psql(db, "DROP EXTENSION IF EXISTS alerts CASCADE; CREATE EXTENSION alerts")
    for t in tables:
        # The trigger and the tenant-keys index depend on the extension's
        # functions and went with it: rebuild them (1.5 min for 5M rows).
        t0 = time.time()
        psql(db, f"CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON {t} "
                 "FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger(); "
                 f"{GIN_BUILD}; CREATE INDEX IF NOT EXISTS {t}_keys_idx ON {t} "
                 f"USING gin (alerts_keys(organisation_id, id, attribute_values)); ANALYZE {t}")
        print(f"bench: {t}: tenant-keys index built in {time.time() - t0:.0f} s", flush=True)


# The composite GIN of btree_gin, `(organisation_id, attribute_values
# jsonb_path_ops)`: tenant-scoped posting lists. It is partial on a condition
# every row meets and only the "gin_org" method's query states, so that the
# planner can use it for that method alone and every other method keeps the
# plans it has without it (all structures stay present at once).
ORG_GIN_MARK = "(priority_id + 0) IS NOT NULL"


def org_gin(db):
    if not psql(db, "SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin'"):
        print("bench: btree_gin is not available for this server; no btree_gin peer")
        return
    t0 = time.time()
    psql(db, ["CREATE EXTENSION IF NOT EXISTS btree_gin",
              f"{GIN_BUILD}; CREATE INDEX IF NOT EXISTS alerts_org_gin ON alerts "
              f"USING gin (organisation_id, attribute_values jsonb_path_ops) WHERE {ORG_GIN_MARK}",
              "ANALYZE alerts"])
    print(f"bench: btree_gin composite index ready in {time.time() - t0:.0f} s", flush=True)


def value(db, org, attr, cls):
    return psql(db, f"SELECT bench_value({lit(org)}, {lit(attr)}, {cls})")[0][0]


def key(db, org, attr):
    return psql(db, f"SELECT bench_key({lit(org)}, {lit(attr)})")[0][0]


def scenarios(db, size, table):
    orgs = {r[0]: r[1] for r in psql(db, "SELECT role, org FROM bench_orgs WHERE role <> 'other'")}
    out = []

    def filt(org, spec):
        """spec: [(attr, [class or 'none', ...])] -> (filter dict, clauses)."""
        f, clauses = {}, []
        for attr, classes in spec:
            k = key(db, org, attr)
            vals = [value(db, org, attr, c) if c != "none" else "NOPE" for c in classes]
            f[k] = vals[0] if len(vals) == 1 else vals
            clauses.append((k, vals, attr in ARRAY_ATTRS))
        return f, clauses

    sel = [("50%", 0), ("1%", 1), ("0.05%", 2), ("0.005%", 3), ("none", "none")]
    base = dict(page=1, window="30d", limit=50, priority=False, table=table)
    for role in ("large", "medium", "small"):
        for label, c in sel:
            f, cl = filt(orgs[role], [("team", [c])])
            out.append(dict(base, name=f"{role} team {label}", tenant=role, org=orgs[role], filter=f, clauses=cl,
                            core=True))
    org = orgs["large"]
    shapes = [
        ("one-of 1%|0.05%", [("team", [1, 2])]),
        ("2 attrs 50%x50%", [("team", [0]), ("environment", [0])]),
        ("2 attrs 50%x0.05%", [("team", [0]), ("region", [2])]),
        ("3 attrs 50%x50%x1%", [("team", [0]), ("environment", [0]), ("feature", [1])]),
    ]
    for label, spec in shapes:
        f, cl = filt(org, spec)
        out.append(dict(base, name=f"large {label}", tenant="large", org=org, filter=f, clauses=cl, core=False))
    for label, c in (("50%", 0), ("0.05%", 2)):
        f, cl = filt(org, [("team", [c])])
        common = dict(base, tenant="large", org=org, filter=f, clauses=cl, core=False)
        out.append(dict(common, name=f"large team {label} +priority", priority=True))
        out.append(dict(common, name=f"large team {label} page 20", page=20))
        out.append(dict(common, name=f"large team {label} unbounded", window="all"))
        out.append(dict(common, name=f"large team {label} batch 500", limit=500))
    return out


def sizes(db):
    rows = psql(db, """
        SELECT c.relname, pg_relation_size(c.oid)
        FROM pg_class c WHERE c.relname IN ('alerts', 'alerts_pkey', 'idx_alerts_pagination', 'idx_alerts_created_at',
            'alerts_gin', 'alerts_org_gin', 'alerts_tags_gin', 'alerts_tags_rum', 'idx_alerts_pagination_bitmap',
            'alerts_keys_idx')
        ORDER BY 1""")
    extra = psql(db, """SELECT sum(pg_column_size(attribute_values_bitmap)) AS bitmap_bytes,
                               sum(pg_column_size(tags)) AS tags_bytes FROM alerts""")[0]
    out = {r[0]: int(r[1]) for r in rows}
    out["bitmap column (in heap)"] = int(extra[0])
    out["tags column (in heap)"] = int(extra[1])
    return out


def layout_sizes(db, table):
    """Each index of the partitioned table, summed over its partitions."""
    rows = psql(db, f"""
        SELECT i.relname, (SELECT sum(pg_relation_size(p.relid)) FROM pg_partition_tree(i.oid) p)
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = {lit(table)}::regclass ORDER BY 1""")
    out = {table: int(psql(db, f"SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree({lit(table)})")[0][0])}
    out.update({r[0]: int(r[1]) for r in rows})
    return out
