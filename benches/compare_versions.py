"""Sets a run on another PostgreSQL version beside the runs on 15, cell by
cell (p95, -M prepared): the best peer and alerts_search on each version.
    python3 benches/compare_versions.py benches/results/full-pg18
Peers on 15 come from benches/results/full/, alerts_search on 15 from
benches/results/full-search-0.3.0/ (the current code)."""
import json, statistics as st, sys
other = sys.argv[1] if len(sys.argv) > 1 else 'benches/results/full-pg18'
def load(p): return {(r['scenario'], r['method'], r['mode']): r for r in json.load(open(p))['reads']}
p15 = load('benches/results/full/results.json')            # peers on 15
s15 = load('benches/results/full-search-0.3.0/results.json')  # alerts_search 0.3.0 on 15
p18 = load(other + '/results.json')
peers = ['gin', 'gin_all', 'gin_tags', 'rum', 'sql_bloom', 'ext', 'ext_ios']
def best(d, sc, mode):
    c = [(d[(sc, m, mode)]['p95'], m) for m in peers if (sc, m, mode) in d]
    return min(c) if c else (None, None)
print("| scenario | best peer 15 | p95 15 | best peer 18 | p95 18 | alerts_search 15 | 18 | 18/15 | vs best peer 15 | vs best peer 18 |")
print("|---|---|---|---|---|---|---|---|---|---|")
rs, rg = [], []
wins15 = wins18 = total = 0
for (sc, m, mode), r in p18.items():
    if m != 'search' or mode != 'prepared':
        continue
    b15, m15 = best(p15, sc, mode); b18, m18 = best(p18, sc, mode)
    a15 = s15.get((sc, 'search', mode)); a18 = r['p95']
    a15v = a15['p95'] if a15 else None
    if a15v: rs.append(a18 / a15v)
    g15 = p15.get((sc, 'gin', mode)); g18 = p18.get((sc, 'gin', mode))
    if g15 and g18: rg.append(g18['p95'] / g15['p95'])
    total += 1
    if a15v and b15 and a15v <= b15: wins15 += 1
    if b18 and a18 <= b18: wins18 += 1
    f = lambda x: f"{x:.2f}" if x is not None else "-"
    print(f"| {sc} | {m15} | {f(b15)} | {m18} | {f(b18)} | {f(a15v)} | {f(a18)} | {f(a18 / a15v if a15v else None)} | {f(a15v / b15 if a15v and b15 else None)}x | {f(a18 / b18 if b18 else None)}x |")
print()
print(f"GIN p95 18/15: median {st.median(rg):.2f} (min {min(rg):.2f}, max {max(rg):.2f}); alerts_search p95 18/15: median {st.median(rs):.2f} (min {min(rs):.2f}, max {max(rs):.2f})")
print(f"cells where alerts_search is at or below the best peer: 15 {wins15}/{total}, 18 {wins18}/{total}")
