#!/usr/bin/env bash
# The benchmark suite's own machinery, not its speed: a --quick run (with
# --gpu, which on a machine without a GPU must say so row by row) writes a
# table, a CSV and plots whose rows agree with each other (the engine and
# tc_selfjoin return the same pairs, eps gives about the neighbours asked
# for, the peer ran), and --merge of a run with itself gives the same rows
# once (a rerun replaces, it does not duplicate).  No time is asserted.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }

if TCJOIN_NO_APT=1 timeout 300 test/bench/run --quick --gpu --reps 1 --out "$T/run" >"$T/run.log" 2>&1; then
    ok "test/bench/run --quick --gpu ran"
else
    bad "test/bench/run --quick --gpu ran"
    tail -20 "$T/run.log"
fi
for f in table.txt results.csv; do
    [ -s "$T/run/$f" ] && ok "it wrote $f" || bad "it wrote $f"
done
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    [ -s "$T/run/time_vs_eps.png" ] && [ -s "$T/run/speedup.png" ] && ok "it drew the plots" ||
        bad "it drew the plots"
else
    bad "python3-matplotlib is missing (test/setup.sh installs it): no plots to check"
fi

TCJOIN_NO_APT=1 test/bench/run --merge "$T/run" "$T/run" --out "$T/merged" >/dev/null 2>&1 &&
    ok "--merge ran" || bad "--merge ran"

/usr/bin/python3 - "$T/run/results.csv" "$T/merged/results.csv" >"$T/checks.log" 2>&1 <<'EOF'
import csv, sys

rows = list(csv.DictReader(open(sys.argv[1])))
merged = list(csv.DictReader(open(sys.argv[2])))
good = bad = 0


def check(cond, what):
    global good, bad
    print(('ok     ' if cond else 'FAILED ') + what)
    good, bad = good + bool(cond), bad + (not cond)


by = {}
for r in rows:
    by.setdefault((r['workload'], r['n'], r['d'], r['k']), {})[r['path']] = r
blocks = [g for (w, n, d, k), g in by.items() if k]
check(blocks, f'results.csv has workload blocks ({len(rows)} rows)')
for g in blocks:
    e, s = g.get('engine cpu t=all'), g.get('sql tc_selfjoin t=all')
    name = next(iter(g.values()))
    tag = f"{name['workload']} k={name['k']}"
    check(e and e['status'] == 'ok' and s and s['status'] == 'ok',
          f'{tag}: the engine and tc_selfjoin rows are ok')
    if e and s and e['status'] == s['status'] == 'ok':
        check(e['pairs'] == s['pairs'] and int(e['pairs']) > 0,
              f"{tag}: engine and SQL return the same pairs ({e['pairs']})")
        got = float(e['neighbours_per_point'])
        check(0.8 * int(name['k']) <= got <= 1.25 * int(name['k']),
              f"{tag}: eps gives {got:.1f} neighbours per point for {name['k']} asked")
    for peer in ('sql cube+gist',):
        p = g.get(peer)
        if p is not None:
            check(p['status'] == 'ok' and s is not None and float(s['speedup_vs_cube'] or 0) > 0,
                  f'{tag}: {peer} ran and the speedup is derived')
    # without a GPU, every GPU row says why instead of a time; with one,
    # every exact GPU path returns the CPU's pairs
    for path, r in g.items():
        if 'gpu' in path and r['status'] != 'ok':
            check(r['status'].startswith(('n/a (no GPU', 'not built')),
                  f'{tag}: {path} says why it did not run ({r["status"][:40]})')
        elif 'gpu' in path and 'exact' in path and e is not None and e['status'] == 'ok':
            check(r['pairs'] == e['pairs'], f'{tag}: {path} returns the CPU\'s {e["pairs"]} pairs')
key = lambda r: (r['workload'], r['n'], r['d'], r['k'], r['path'])
check(sorted(map(key, merged)) == sorted(map(key, rows)),
      f'--merge of a run with itself: the same {len(rows)} rows, once')
print(f'counts {good} {bad}')
EOF
grep -v '^counts ' "$T/checks.log"
# the checks' counts join ours; no counts line means they crashed: one failure
if read -r _ p f < <(grep '^counts ' "$T/checks.log"); then
    pass=$((pass + p)) fail=$((fail + f))
else
    fail=$((fail + 1))
fi
# recheck-variants' ROUNDS medians, on stand-ins for the GPU programs in a
# tree of their own (whose make does nothing but put tcbench back): cuBLAS
# takes 0.12, 0.10 and 0.14 s in rounds 1-3, the join 0.08, 0.05 and 0.07
# s, so the medians are 0.12 s and 0.07 s, and the median of the rounds'
# ratios (1.50, 2.00, 2.00) 2.00x, where the ratio of the medians would be
# 1.71x.
M=$T/mock
mkdir -p "$M/test/bench/lab"
cp test/bench/lab/recheck-variants "$M/test/bench/lab/"
printf 'all:\n\t@true\n' >"$M/Makefile"
printf 'tcbench:\n\t@cp tcbench.stub tcbench\ngemm_floor:\n\t@true\n' >"$M/test/bench/Makefile"
# a stub's next value: a counter file per program
cat >"$M/test/bench/tcbench.stub" <<'STUB'
#!/usr/bin/env bash
case "$*" in *--eps-only*) echo 87.3; exit 0 ;; esac
f=$(dirname "$0")/join.count
n=$(cat "$f" 2>/dev/null || echo 0); echo $((n + 1)) >"$f"
set -- 0.08 0.05 0.07; shift "$n"
echo header
echo "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,3202059,q,$1,s,t,u,v,w,x,3685991,z,0.06,0.01"
STUB
cat >"$M/test/bench/gemm_floor" <<'STUB'
#!/usr/bin/env bash
f=$(dirname "$0")/gemm.count
n=$(cat "$f" 2>/dev/null || echo 0); echo $((n + 1)) >"$f"
set -- 0.12 0.10 0.14; shift "$n"
echo "100,4096,100,$1,700,2000.0,stub"
STUB
chmod +x "$M/test/bench/tcbench.stub" "$M/test/bench/gemm_floor"
ROUNDS=3 REPS=1 EXACT=on VARIANTS=default bash "$M/test/bench/lab/recheck-variants" 100:4096 >"$T/rounds.log" 2>&1
if awk '/medians of 3 rounds/ { m = 1; next }
        m && /cuBLAS/ { c = ($(NF - 1) == "0.1200") }
        m && / default / { j = ($(NF - 3) == "0.0700" && $(NF - 2) == "2.00x") }
        END { exit !(c && j) }' "$T/rounds.log"; then
    ok "recheck-variants ROUNDS=3: medians over the rounds, each round's ratio against its cuBLAS"
else
    bad "recheck-variants ROUNDS=3: medians over the rounds, each round's ratio against its cuBLAS"
    cat "$T/rounds.log"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
