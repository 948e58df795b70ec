"""The queries of the random differential (differential.py): random
plain-SQL pages (tenant, attribute conditions, other columns, bounds,
orders, limits; alone, per row of an outer query, joined, in subqueries)
and alerts_search calls with the exact filter they must equal."""
import json

from psycopg.types.json import Jsonb

from diff_tables import REPEATS, day, rng, tenant

# Citus (differential.py sets it): pages joined in any order are sorted
CITUS = False
FILTERS = [
    {"team": "t0"}, {"team": "t1"}, {"team": "t6"}, {"team": "rare"}, {"team": "uncommon"}, {"team": "none"},
    {"team": "t2", "env": "prod"}, {"team": "rare", "env": "dev"}, {"env": "staging"}, {"feature": "a"},
    {"feature": ["a"]}, {"feature": ["b", "c"]}, {"feature": []}, {"n": 1}, {"n": 1.0}, {"n": "1"}, {"n": 0},
    {"flag": True}, {"flag": "true"}, {"nested": {"x": 1}}, {"nested": {}}, {"nested": [1, [2]]}, {}, {"dup": True},
    # what @> takes and a filter refuses: null, values that are not objects
    {"flag": None}, ["a"], "t0", 1, {"nested": {"x": [1]}},
]
# one-of arrays: only alerts_attrs_match reads them so (it refuses an
# array inside one, null, a filter that is not an object)
MATCH_FILTERS = [f for f in FILTERS if isinstance(f, dict) and f not in ({"nested": [1, [2]]}, {"flag": None})] + [{"team": ["rare", "t5"]}, {"team": ["uncommon", "none"], "env": "prod"},
                           {"feature": ["a", "d"]}, {"n": [1, "1"]}, {"k": []}]



class Query:
    """One statement and its parameters: each drawn by a function, so that
    a prepared statement runs again with other values."""

    def __init__(self, sql, draws, kind):
        self.sql, self.draws, self.kind = sql, draws, kind
        self.params = self.draw()

    def draw(self):
        return [d() for d in self.draws]


def lit(v):
    return "'" + str(v).replace("'", "''") + "'"


def slot(draw, draws, literal, cast):
    """A value drawn by `draw`, as a literal (drawn now) or a parameter
    (drawn for each run)."""
    if literal:
        v = draw()
        return lit(json.dumps(v) if cast == "jsonb" else v) + "::" + cast
    draws.append((lambda: Jsonb(draw())) if cast == "jsonb" else draw)
    return "%s::" + cast


def cursor_value(ids):
    r = rng.random()
    if r < 0.6:
        return rng.choice(ids)
    return rng.choice(["8", "ZZZZ", "zzzz", "", "0", "01", "9", "!", day()])


def conditions(ids, draws, literal, org):
    """The WHERE of a page: the tenant (`org`: a literal, a parameter, or
    an outer query's column), attribute conditions, other columns, bounds."""
    where = ["organisation_id = " + (org or slot(tenant, draws, literal, "text"))]
    shape = rng.random()
    contains = lambda: "attribute_values @> " + slot(lambda: rng.choice(FILTERS), draws, literal, "jsonb")
    matches = lambda: ("alerts_attrs_match(attribute_values, "
                       + slot(lambda: rng.choice(MATCH_FILTERS), draws, literal, "jsonb") + ")")
    if shape < 0.55:
        where.append(contains())
    elif shape < 0.7:
        where.append("(" + " OR ".join(contains() for _ in range(rng.randint(2, 3))) + ")")
    elif shape < 0.85:
        where.append(matches())
    elif shape < 0.93:
        where += [contains(), matches()]
    if rng.random() < 0.25:
        ps = rng.sample([1, 2, 3, 4], rng.randint(1, 2))
        where.append(f"priority_id IN ({', '.join(map(str, ps))})" if len(ps) > 1 else f"priority_id = {ps[0]}")
    if rng.random() < 0.4:
        op = rng.choice([">=", ">", ">=", "<", "<="])
        if rng.random() < 0.5:
            where.append(f"id {op} alerts_ulid_floor(" + slot(day, draws, literal, "timestamptz") + ")")
        else:
            where.append(f"id {op} " + slot(lambda: cursor_value(ids), draws, literal, "text"))
    if rng.random() < 0.35:
        op = rng.choice(["<", "<", ">", "<="])
        where.append(f"id {op} " + slot(lambda: cursor_value(ids), draws, literal, "text"))
    if rng.random() < 0.1:
        where.append("created_at >= " + slot(day, draws, literal, "timestamptz"))
    if rng.random() < 0.05:
        where.append("NOT (attribute_values ? 'env')")
    return " AND ".join(where)


def order_limit():
    tail = f" ORDER BY id {'DESC' if rng.random() < 0.8 else 'ASC'}"
    limit = rng.choice([1, 5, 20, 50, 50, 120, None])
    if limit is not None:
        tail += f" LIMIT {limit}"
        if rng.random() < 0.2:
            tail += f" OFFSET {rng.choice([1, 7, 60])}"
    return tail


def plain_query(table, ids):
    draws = []
    literal = rng.random() < 0.4
    if rng.random() < 0.15:
        # a page per tenant of an outer query: the scan runs again for each
        sql = (f"SELECT o.name, s.id FROM (VALUES ('small'), ('big'), ('nobody'), ('mid')) o(name) "
               f"CROSS JOIN LATERAL (SELECT id FROM {table} WHERE {conditions(ids, draws, literal, 'o.name')}"
               f"{order_limit()}) s")
        if CITUS:  # Citus joins the tenants' pages in any order
            sql += " ORDER BY 1, 2"
        return Query(sql, draws, "plain")
    if rng.random() < 0.12:
        return Query(combined(table, ids, draws, literal), draws, "plain")
    where = conditions(ids, draws, literal, None)
    select = rng.choice(["*", "id", "id, attribute_values->>'team'", "id, count(*) OVER ()"])
    # repeated ids: only the ids are deterministic at a page's edge
    if table in REPEATS:
        select = "id"
    elif rng.random() < 0.1:
        select = "id, ctid, tableoid::regclass, xmin"  # the rows' own, not copies'
    lock = rng.choice([" FOR UPDATE", " FOR SHARE", " FOR KEY SHARE"]) if rng.random() < 0.08 and "OVER" not in select else ""
    q = Query(f"SELECT {select} FROM {table} WHERE {where}{order_limit()}{lock}", draws, "plain")
    # read through a cursor, in pieces, and again from the start
    q.cursor = rng.random() < 0.1
    return q


# A lookup table the pages join (d_prio: pn 1-4, plabel 'skip' for 3).
PRIO = "(SELECT 1 FROM d_prio p WHERE p.pn = priority_id AND p.plabel <> 'skip')"


def combined(table, ids, draws, literal):
    """A page (ids only) in a larger statement: joined to a lookup table,
    under EXISTS, two pages in a UNION ALL, aggregated, or as the IN list
    of an outer query."""
    page = lambda: f"SELECT id FROM {table} WHERE {conditions(ids, draws, literal, None)}{order_limit()}"
    shape = rng.choice(["join", "exists", "union", "agg", "in"])
    if shape == "join":
        return (f"SELECT a.id FROM {table} a JOIN d_prio p ON p.pn = a.priority_id "
                f"WHERE {conditions(ids, draws, literal, None)} AND p.plabel <> 'skip'{order_limit()}")
    if shape == "exists":
        return f"SELECT id FROM {table} WHERE {conditions(ids, draws, literal, None)} AND EXISTS {PRIO}{order_limit()}"
    if shape == "union":
        return f"({page()}) UNION ALL ({page()})"
    if shape == "agg":
        return f"SELECT count(*), min(id), max(id) FROM ({page()}) s"
    return (f"SELECT id FROM {table} WHERE organisation_id IN ('big', 'mid') AND id IN ({page()}) "
            "ORDER BY id DESC LIMIT 40")


def search_query(table, ids):
    f = rng.choice(MATCH_FILTERS)
    org, since = tenant(), rng.choice(["-infinity", day()])
    before = cursor_value(ids) if rng.random() < 0.5 else None
    size = rng.choice([1, 10, 30, 100])
    cols = rng.choice([None, None, {"priority_id": [1, 2]}, {"priority_id": 3}, {"priority_id": []}])
    got = ("SELECT id FROM alerts_search(NULL::" + table + ", %s, %s, %s::timestamptz, %s, %s"
           + (", columns => %s" if cols is not None else "") + ")")
    params = [org, Jsonb(f), since, before, size] + ([Jsonb(cols)] if cols is not None else [])
    want = ("SELECT id FROM " + table + " WHERE organisation_id = %s AND alerts_attrs_match(attribute_values, %s)"
            " AND id >= alerts_ulid_floor(%s::timestamptz) AND (%s::text IS NULL OR id < %s::text)")
    wparams = [org, Jsonb(f), since, before, before]
    if cols is not None:
        p = cols["priority_id"]
        want += " AND priority_id = ANY(%s::int[])"
        wparams.append(p if isinstance(p, list) else [p])
    want += " ORDER BY id DESC LIMIT %s"
    wparams.append(size)
    q = Query(got, [(lambda v=v: v) for v in params], "search")
    q.want = (want, wparams)
    return q

