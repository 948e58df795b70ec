"""The methods compared: each one's SQL for a scenario, its session
settings and label, the exact answer every method must return, and one
run of a method's query."""

import json
import os
import subprocess
import common
from common import PG, lit, psql
from data import ORG_GIN_MARK, PORTABLE_TABLE

# --- methods --------------------------------------------------------------------

def each_clause(clauses, alternative):
    """Every clause (AND) holds one of its values (OR), each value's test
    written by `alternative(key, value, is_array)`."""
    parts = ["(" + " OR ".join(alternative(k, v, is_array) for v in vals) + ")" for k, vals, is_array in clauses]
    return " AND ".join(parts) or "true"


def gin_expr(clauses):
    return each_clause(clauses, lambda k, v, is_array: f"attribute_values @> {lit(json.dumps({k: [v] if is_array else v}))}")


def exact_expr(clauses):
    """Exact check that no index can serve: containment on the extracted value."""
    return each_clause(clauses, lambda k, v, _: f"(attribute_values -> {lit(k)}) @> {lit(json.dumps(v))}")


def tags_expr(clauses, col="tags"):
    parts = []
    for k, vals, _ in clauses:
        arr = "ARRAY[" + ",".join(lit(f"{k}={v}") for v in vals) + "]"
        parts.append(f"{col} @> {arr}" if len(vals) == 1 else f"{col} && {arr}")
    return " AND ".join(parts) or "true"


def masks(db, clauses):
    out = []
    for k, vals, _ in clauses:
        ms = [psql(db, f"SELECT alerts_mask({lit(json.dumps({k: v}))}, {common.BITS})::text")[0][0] for v in vals]
        out.append(ms)
    return out


def bloom_expr(db, clauses):
    """The plain-SQL bloom test: every clause's mask (one of its values')
    covered by the row's bitmap."""
    tests = ["(" + " OR ".join(f"attribute_values_bitmap & B'{x}' = B'{x}'" for x in ms) + ")"
             for ms in masks(db, clauses)]
    return " AND ".join(tests) or "true"


def method_sql(m, s, db):
    f = lit(json.dumps(s["filter"]))
    since = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'::timestamptz"
    cursor = f" AND id < {lit(s['cursor'])}" if s.get("cursor") else ""
    prio = " AND priority_id IN (1, 2)" if s["priority"] else ""
    t = s["table"]
    head = (f"SELECT * FROM {t} WHERE organisation_id = {lit(s['org'])} "
            f"AND id >= alerts_ulid_floor({since}){cursor}{prio}")
    tail = f" ORDER BY id DESC LIMIT {s['limit']}"
    if m in ("gin", "gin_all"):
        return f"{head} AND {gin_expr(s['clauses'])}{tail}"
    if m in ("plain", "plain_expanded"):
        # The query apps send: one containment when every clause has one
        # value (the node plans it), else the containments OR'ed per clause.
        if all(len(vals) == 1 for _, vals, _ in s["clauses"]):
            obj = {k: ([vals[0]] if is_array else vals[0]) for k, vals, is_array in s["clauses"]}
            return f"{head} AND attribute_values @> {lit(json.dumps(obj))}{tail}"
        return f"{head} AND {gin_expr(s['clauses'])}{tail}"
    if m == "plain_match":
        # the same page with the search's own test, whose planner support
        # gives a fixed estimate: no statistics read to plan it
        return f"{head} AND alerts_attrs_match(attribute_values, {f}){tail}"
    if m == "gin_org":
        return f"{head} AND {ORG_GIN_MARK} AND {gin_expr(s['clauses'])}{tail}"
    if m == "gin_tags":
        return f"{head} AND {tags_expr(s['clauses'])}{tail}"
    if m == "rum":
        cur = f" AND created_at < {lit(s['cursor_ts'])}" if s.get("cursor_ts") else ""
        win = " AND created_at >= now() - interval '30 days'" if s["window"] == "30d" else ""
        return (f"SELECT * FROM {t} WHERE {tags_expr(s['clauses'])} AND organisation_id = {lit(s['org'])}"
                f"{win}{cur}{prio} ORDER BY created_at <=| now() LIMIT {s['limit']}")
    if m == "sql_bloom":
        return f"{head} AND {bloom_expr(db, s['clauses'])} AND {exact_expr(s['clauses'])}{tail}"
    if m == "ext":
        return (f"{head} AND alerts_bloom_match(attribute_values_bitmap, {f}) "
                f"AND alerts_attrs_match(attribute_values, {f}){tail}")
    if m == "ext_ios":
        inner = (f"SELECT id FROM {t} WHERE organisation_id = {lit(s['org'])} "
                 f"AND id >= alerts_ulid_floor({since}){cursor} "
                 f"AND alerts_bloom_match(attribute_values_bitmap, {f}) ORDER BY id DESC")
        return (f"SELECT a.* FROM ({inner}) c CROSS JOIN LATERAL "
                f"(SELECT * FROM {t} a WHERE a.id = c.id AND alerts_attrs_match(a.attribute_values, {f}){prio}) a "
                f"ORDER BY c.id DESC LIMIT {s['limit']}")
    if m == "portable":
        # The portable form (docs/managed-postgres.md): what a database
        # without the extension runs, with masks a client encoder made:
        # candidates from the pagination index and its INCLUDEd bitmap
        # alone, then the exact check of each candidate's attributes.
        inner = (f"SELECT id FROM {t} WHERE organisation_id = {lit(s['org'])} "
                 f"AND id >= alerts_ulid_floor({since}){cursor} AND {bloom_expr(db, s['clauses'])} ORDER BY id DESC")
        return (f"SELECT a.* FROM ({inner}) c CROSS JOIN LATERAL "
                f"(SELECT * FROM {t} a WHERE a.organisation_id = {lit(s['org'])} AND a.id = c.id "
                f"AND {exact_expr(s['clauses'])}{prio}) a ORDER BY c.id DESC LIMIT {s['limit']}")
    if m == "portable_search":
        # alerts_portable.search (clients/sql/alerts_portable.sql): the
        # walk in PL/pgSQL, masks (and the tenant keys over the window's
        # weeks, where the table has an attribute_keys column) as a client
        # computes them
        t = PORTABLE_TABLE if t == "alerts" else t
        ms = {k: (x if len(x) > 1 else x[0]) for (k, _, _), x in zip(s["clauses"], masks(db, s["clauses"]))}
        keys = "NULL"
        if psql(db, f"SELECT count(*) FROM pg_attribute WHERE attrelid = {lit(t)}::regclass "
                    "AND attname = 'attribute_keys' AND NOT attisdropped")[0][0] == "1":
            # the weeks from the window's floor (the tenant's oldest row when
            # unbounded) to now, as the application would span them
            floor = ("now() - interval '31 days'" if s["window"] == "30d" else
                     f"(SELECT min(created_at) - interval '7 days' FROM {t} WHERE organisation_id = {lit(s['org'])})")
            ks = {}
            for k, vals, _ in s["clauses"]:
                ks[k] = [int(r[0]) for r in psql(db, f"""
                    SELECT DISTINCT x FROM unnest(ARRAY[{','.join(lit(json.dumps(v)) for v in vals)}]::jsonb[]) v,
                      LATERAL (SELECT alerts_ulid_floor(w) AS i FROM generate_series({floor}, now() + interval '7 days',
                               interval '7 days') w UNION ALL SELECT 'not-a-ulid') ids,
                      unnest(alerts_keys({lit(s['org'])}, ids.i, jsonb_build_object({lit(k)}, v))) x""")]
            keys = lit(json.dumps(ks)) + "::jsonb"
        cols = ", columns => '{\"priority_id\": [1, 2]}'" if s["priority"] else ""
        since_arg = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'"
        before = lit(s["cursor"]) if s.get("cursor") else "NULL"
        return (f"SELECT * FROM alerts_portable.search(NULL::{t}, {lit(s['org'])}, {f}, {lit(json.dumps(ms))}::jsonb, "
                f"{keys}, {since_arg}, {before}, {s['limit']}{cols})")
    if m in ("search", "search_cold"):
        cols = ", columns => '{\"priority_id\": [1, 2]}'" if s["priority"] else ""
        since_arg = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'"
        before = lit(s["cursor"]) if s.get("cursor") else "NULL"
        return (f"SELECT * FROM alerts_search(NULL::{t}, {lit(s['org'])}, {f}, {since_arg}, {before}, "
                f"{s['limit']}{cols})")
    raise ValueError(m)


METHODS = ["gin", "gin_org", "gin_all", "gin_tags", "rum", "sql_bloom", "portable", "portable_search", "ext", "ext_ios", "search_cold", "search",
           "plain", "plain_match", "plain_expanded"]
# The plain SQL methods: the page as applications write it, planned with
# the custom scan (their sessions load the library); `plain_expanded` is
# `plain` with a partitioned table's partitions planned first (as before
# alerts.custom_scan_one_rel).
NODE_METHODS = ("plain", "plain_match", "plain_expanded")
_PGOPTIONS = {"gin_all": "-c enable_indexscan=off -c enable_indexonlyscan=off",
              # every call walks first: no per-session (tenant, filter) shortcut to GIN
              "search_cold": "-c alerts.search_shortcuts=off",
              # plain SQL with the library loaded from the first statement on
              **{m: "-c session_preload_libraries=alerts" for m in NODE_METHODS},
              "plain_expanded": "-c session_preload_libraries=alerts -c alerts.custom_scan_one_rel=off"}


class _Options(dict):
    """Each method's PGOPTIONS: the custom scan off for every method but
    the plain SQL ones (a session that loaded the library would otherwise
    plan the peers' queries with it)."""

    def get(self, m, default=""):
        base = _PGOPTIONS.get(m, default)
        return base if m in NODE_METHODS else f"{base} -c alerts.custom_scan=off".strip()


PGOPTIONS = _Options()
LABELS = {
    "gin": "GIN jsonb_path_ops (planner)",
    "gin_org": "btree_gin (tenant, attributes) (planner)",
    "gin_all": "GIN, reads all matches + sort",
    "gin_tags": "GIN on text[] tags",
    "rum": "RUM tags + created_at",
    "sql_bloom": "plain-SQL bloom (article)",
    "portable": "portable two-step (no extension)",
    "portable_search": "alerts_portable.search (no extension)",
    "ext": "alerts_bloom_match walk",
    "ext_ios": "alerts index-only walk",
    "search_cold": "alerts_search(), no shortcuts",
    "search": "alerts_search()",
    "plain": "plain SQL @> (custom scan)",
    "plain_match": "plain SQL alerts_attrs_match (custom scan)",
    "plain_expanded": "plain SQL @> (custom scan, partitions planned)",
}


def oracle(db, s):
    """Ids of the exact answer, and cursors for page 20."""
    since = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'::timestamptz"
    prio = " AND priority_id IN (1, 2)" if s["priority"] else ""
    rows = psql(db, f"SELECT id, created_at FROM {s['table']} WHERE organisation_id = {lit(s['org'])} "
                    f"AND id >= alerts_ulid_floor({since}){prio} AND {exact_expr(s['clauses'])} ORDER BY id DESC")
    return rows


def same_rows(m, got, want):
    """A method's page equals the oracle's ids: in order, or as a set for
    RUM (ordered by created_at, not id)."""
    return got == want if m != "rum" else sorted(got) == sorted(want)


def _as_method(db, m, command, port=None, user=None):
    """`command`'s output, run in a session with method `m`'s options."""
    env = dict(os.environ, PGOPTIONS=PGOPTIONS.get(m, ""))
    out = subprocess.run(["psql", "-X", "-At", "-h", PG["host"], "-p", str(port or PG["port"]), "-U", user or PG["user"], "-d", db,
                          "-c", command], check=True, capture_output=True, text=True, env=env)
    return out.stdout


def run_query(db, m, sql, port=None, user=None):
    return _as_method(db, m, f"SELECT id FROM ({sql}) q", port, user).split()


def plan_shape(db, m, sql):
    """The plan a method's query gets, as its nodes in order (`Limit >
    Sort > Append > Bitmap Heap Scan > BitmapAnd > ...`): the planner's
    choice for a peer can change with each ANALYZE's sample (every run on
    a reused database analyzes anew), and a cell is read with the plan it
    was timed with."""
    nodes = []
    for line in _as_method(db, m, f"EXPLAIN (COSTS OFF) {sql}").splitlines():
        text = line.strip().removeprefix("->").strip()
        if line.strip().startswith("->") or not nodes:
            node = text.split(" on ")[0].split(" using ")[0]
            if node and (not nodes or nodes[-1] != node):
                nodes.append(node)
    return " > ".join(nodes)
