"""What every benchmark module shares: the sizes, where the server is,
running SQL through psql, and the bitmap width of the run (`BITS`, set by
`run.py --bitmap-bits`; read it as `common.BITS`)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {
    # total rows, large / medium / small tenant
    "smoke": dict(total=100_000, large=40_000, medium=10_000, small=2_000),
    # the created_at window's bench (benches/window.py): 2M rows, one tenant of 1M
    "medium": dict(total=2_000_000, large=1_000_000, medium=100_000, small=10_000),
    "full": dict(total=5_000_000, large=1_000_000, medium=100_000, small=10_000),
    "xl": dict(total=20_000_000, large=4_000_000, medium=1_000_000, small=100_000),
}
ARRAY_ATTRS = {"feature"}  # attributes the generator stores as arrays

PG = dict(host=os.environ.get("PGHOST", "/tmp"), port=os.environ.get("PGPORT", "5415"), user="postgres")


def psql(db, sql, *, port=None):
    """Runs SQL (on PGPORT's server, or `port`'s), returns rows as lists of
    strings. A list of statements runs each as its own command (Citus sends
    a multi-statement command's DDL to the shards as one prepared statement,
    which fails)."""
    cmds = [x for q in ([sql] if isinstance(sql, str) else sql) for x in ("-c", q)]
    out = subprocess.run(
        ["psql", "-X", "-q", "-At", "-F", "\x1f", "-v", "ON_ERROR_STOP=1",
         "-h", PG["host"], "-p", str(port or PG["port"]), "-U", PG["user"], "-d", db, *cmds],
        capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"psql failed ({db}): {out.stderr.strip()[-2000:]}\n  in: {str(sql)[:500]}")
    return [line.split("\x1f") for line in out.stdout.splitlines() if line]


def psql_file(db, path, variables=None):
    args = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", PG["host"], "-p", PG["port"],
            "-U", PG["user"], "-d", db, "-f", str(path)]
    for k, v in (variables or {}).items():
        args += ["-v", f"{k}={v}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def lit(s):
    return "'" + s.replace("'", "''") + "'"


# --- the database of a run -------------------------------------------------

def bench_db(size):
    """The database of a size's rows at the bitmap width BITS (bit(512): no
    suffix; a narrower column has its own database, the rows being the same)."""
    return f"alerts_bench_{size}" + (f"_b{BITS}" if BITS != 512 else "")


def has_rum():
    return bool(psql("postgres", "SELECT 1 FROM pg_available_extensions WHERE name = 'rum'"))


# The bitmap column's width (--bitmap-bits).
BITS = 512
