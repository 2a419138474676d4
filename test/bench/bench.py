"""tcjoin benchmark suite: the engine alone (tcbench), the same joins through
SQL, the peers a user would otherwise pick, and the floors under all of them.

Started by test/bench/run, which installs what this needs first; see the
usage there and docs/performance.md for how to read the output.
"""
import argparse
import array
import csv
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, 'test', 'bench')
TCBENCH = os.path.join(BENCH, 'tcbench')
GEMM_FLOOR = os.path.join(BENCH, 'gemm_floor')
DATA = os.environ.get('TCJOIN_DATA', os.path.join(ROOT, '.data'))
DB = os.environ.get('TCJOIN_BENCH_DB', 'tcjoin_bench')

CPU_MAX_N = 2_000_000           # CPU rows stop here; GPU rows go on to 10M
GPU_BRUTE_MAX_N = 500_000       # brute force on 2-8 dimensions past this is pointless
# The grid indexes a few dimensions only: at d >= 64 it is a brute force in
# FP64 with overhead (auto never picks it there), too slow to repeat past this.
GPU_GRID_MAX_N_HIGH_D = 20_000


def fp64_too_slow(w):
    """d >= 64 and n past GPU_GRID_MAX_N_HIGH_D: FP64 on CUDA cores is too slow
    to repeat (the grid is left out; FP64 brute force runs once)."""
    return w.d >= 64 and w.n > GPU_GRID_MAX_N_HIGH_D


@dataclass
class Workload:
    name: str                   # what the table calls it, e.g. "uniform-2d"
    source: str                 # "uniform" or "expo" (generated), or a file in DATA
    n: int
    d: int
    ks: tuple = (64,)           # neighbours per point, each giving an eps
    cpu: bool = True            # CPU rows (False: a size only a GPU does in time)
    sql: bool = False           # tc_selfjoin through SQL, with its floors
    peers: tuple = ()           # 'cube', 'postgis', 'plain'
    peer_ks: tuple = (64,)      # the ks the peers run at (they are slow)
    reps: int = 0               # repeats for the slow paths; 0: the suite's

    @property
    def generated(self):
        return self.source in ('uniform', 'expo')


def matrix(quick, gpu):
    """The workloads."""
    W = Workload
    fm = 'fmnist_70000x784.f32'
    have_fm = os.path.exists(os.path.join(DATA, fm))
    if quick:
        ws = [W('uniform-2d', 'uniform', 100_000, 2, ks=(16, 64), sql=True,
                peers=('cube', 'postgis'), peer_ks=(16,), reps=1)]
        if have_fm:
            ws.append(W('fmnist', fm, 2_000, 784, sql=True))
        return ws

    ws = []
    # Time against n at 64 neighbours, and against eps at n = 100,000.  The
    # peers are slow here, so they run at the smaller sizes only.
    big = (5_000_000, 10_000_000) if gpu else ()
    for g in ('uniform', 'expo'):
        for n in (100_000, 200_000, 500_000, 1_000_000, 2_000_000) + big:
            sweep = n == 100_000
            if g == 'uniform':
                peers = ('cube', 'postgis') if n <= 200_000 else ()
            else:
                peers = ('cube', 'postgis') if sweep else ()
            ws.append(W(f'{g}-2d', g, n, 2, ks=(64, 128, 256) if sweep else (64,),
                        cpu=n <= CPU_MAX_N, sql=n <= 500_000, peers=peers,
                        peer_ks=(64, 128, 256) if sweep and g == 'uniform' else (64,),
                        reps=1))
    # Dimensions 4 to 8: eps nears the extent of the data, and the grid's
    # candidates grow towards all pairs.
    for g in ('uniform', 'expo'):
        for d in (4, 6, 8):
            ws.append(W(f'{g}-{d}d', g, 50_000, d))
            if gpu:
                ws.append(W(f'{g}-{d}d', g, 1_000_000, d, ks=(64, 128, 256), cpu=False))
    # Real sets (test/bench/run says how to fetch them).
    real = [W('tycho2', 'tycho2_1871011x3.f32', 1_871_011, 3, ks=(64, 128, 256), reps=1),
            W('tycho2', 'tycho2_362950x3.f32', 362_950, 3, sql=True),
            W('cities-xyz', 'cities_171075x3.f32', 171_075, 3, ks=(64, 128, 256), sql=True,
              peers=('cube',), reps=1),
            W('fmnist', fm, 5_000, 784, ks=(64, 128, 256), sql=True),
            W('fmnist', fm, 300, 784, sql=True, peers=('plain',), reps=1)]
    if gpu:
        real.append(W('fmnist', fm, 70_000, 784, ks=(64, 128, 256), cpu=False, sql=True))
    ws += [w for w in real if os.path.exists(os.path.join(DATA, w.source))]
    # High dimensions: brute force.  CPU sizes keep n^2 d near 1.6e10; plain
    # SQL is slow even for n in the hundreds.
    for d, n in ((64, 16_000), (256, 8_000), (1024, 4_000), (4096, 2_000)):
        ws.append(W(f'uniform-{d}d', 'uniform', n, d, sql=True))
        if gpu:
            ws.append(W(f'uniform-{d}d', 'uniform', 100_000, d, cpu=False))
    for d, n in ((64, 1_000), (4096, 150)):
        ws.append(W(f'uniform-{d}d', 'uniform', n, d, sql=True, peers=('plain',), reps=1))
    return ws


# ---------------------------------------------------------------- running

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, timeout=None, input=None):
    """Run a command; returns (rc, stdout, stderr), rc 124 on timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, '', f'timed out after {timeout} s'
    except FileNotFoundError:
        return 127, '', f'{cmd[0]}: not found'


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ''


class Data:
    """Point files: generated ones once per (kind, d) at the largest n, since
    tcbench makes the first n points of any size alike; real ones in DATA."""

    def __init__(self, workloads, tmp):
        self.tmp = tmp
        self.max_n = {}
        for w in workloads:
            if w.generated:
                key = (w.source, w.d)
                self.max_n[key] = max(self.max_n.get(key, 0), w.n)
        self.eps = {}

    def path(self, w):
        if not w.generated:
            return os.path.join(DATA, w.source)
        f = os.path.join(self.tmp, f'{w.source}_{w.d}d.f32')
        if not os.path.exists(f):
            n = self.max_n[(w.source, w.d)]
            rc, _, err = sh([TCBENCH, '--gen', w.source, '--n', str(n), '--d', str(w.d),
                             '--seed', '1', '--write', f])
            if rc != 0:
                sys.exit(f'bench: generating {f} failed: {err}')
        return f

    def pick_eps(self, w, k):
        """eps for k neighbours per point on these n points, by sampling."""
        key = (w.source, w.n, w.d, k)
        if key not in self.eps:
            rc, out, err = sh([TCBENCH, '--file', self.path(w), '--n', str(w.n), '--d', str(w.d),
                               '--neighbours', str(k), '--eps-only'])
            if rc != 0:
                sys.exit(f'bench: picking eps failed: {err}')
            self.eps[key] = last_line(out)
        return self.eps[key]


def new_row(w, k, eps, layer, path, **kw):
    row = dict(workload=w.name, source=w.source, n=w.n, d=w.d, k=k, eps=eps,
               layer=layer, path=path, status='ok')
    row.update(kw)
    return row


def engine_paths(w, gpu):
    """(path name, tcbench arguments) for one workload."""
    paths = []
    if w.cpu:
        paths += [('engine cpu t=all', ['--threads', '0']),
                  ('engine cpu t=1', ['--threads', '1'])]
    if gpu:
        methods = ([] if fp64_too_slow(w) else ['grid']) + \
            (['brute'] if w.d >= 64 or w.n <= GPU_BRUTE_MAX_N else [])
        for m in methods:
            for tc in ('off', 'on'):
                paths.append((f'engine gpu {m} tc={tc} exact',
                              ['--device', 'gpu', '--method', m, '--tensor-cores', tc]))
        # exact => false: FaSTED's semantics on the FP16 brute force (the
        # grid has no approximate mode: there it runs the exact engine).
        if 'brute' in methods:
            paths.append(('engine gpu brute approx',
                          ['--device', 'gpu', '--method', 'brute', '--tensor-cores', 'on',
                           '--exact', 'off']))
    return paths


TCBENCH_COLS = ['source', 'type', 'n', 'd', 'eps', 'method_asked', 'method', 'threads',
                'grid_dims', 'time_s', 'time_min_s', 'time_max_s', 'cpu_s', 'index_s',
                'candidates', 'pairs', 'reps', 'join_s', 'load_s', 'cells', 'device',
                'exact', 'tensor_cores', 'status', 'rechecked', 'checksum', 'filter_s',
                'recheck_s']


def run_engine(data, w, k, eps, path, args, reps, timeout):
    cmd = [TCBENCH, '--file', data.path(w), '--n', str(w.n), '--d', str(w.d), '--eps', eps,
           '--reps', str(reps), '--csv'] + args
    rc, out, err = sh(cmd, timeout=timeout)
    if rc != 0:
        return new_row(w, k, eps, 'engine', path, status=f'error: {last_line(err)}'[:120])
    f = dict(zip(TCBENCH_COLS, last_line(out).split(',')))
    row = new_row(w, k, eps, 'engine', path, status=f['status'], device=f['device'],
                  exact=f['exact'], tensor_cores=f['tensor_cores'])
    if f['status'] == 'ok':
        row.update(method=f['method'], threads=int(f['threads']), reps=int(f['reps']),
                   time_s=float(f['time_s']), time_min_s=float(f['time_min_s']),
                   time_max_s=float(f['time_max_s']), load_s=float(f['load_s']),
                   index_s=float(f['index_s']), join_s=float(f['join_s']),
                   candidates=int(f['candidates']), pairs=int(f['pairs']))
        if float(f.get('recheck_s') or 0) > 0:
            row.update(filter_s=float(f['filter_s']), recheck_s=float(f['recheck_s']))
    return row


class Sql:
    """The server side: a scratch database, one table per workload."""

    BENCH_FN = r"""
CREATE FUNCTION bench(q text, reps int, stats bool DEFAULT false)
RETURNS TABLE (ms float8, st jsonb) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1..reps LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    st := CASE WHEN stats THEN (SELECT to_jsonb(s) FROM tc_last_stats() s) END;
    RETURN NEXT;
  END LOOP;
END $$"""

    def __init__(self):
        self.ok = True
        rc, _, err = self.psql(['SET client_min_messages = warning',
                                f'DROP DATABASE IF EXISTS {DB}', f'CREATE DATABASE {DB}'],
                               db='postgres')
        if rc != 0:
            log(f'bench: no database server ({last_line(err)}); SQL rows are skipped')
            self.ok = False
            return
        self.must(['CREATE EXTENSION tcjoin', self.BENCH_FN])
        rc, _, err = self.psql(['CREATE EXTENSION cube'])
        self.cube = rc == 0
        if not self.cube:
            log(f'bench: no cube ({last_line(err)}); its rows are skipped')
        rc, _, err = self.psql(['CREATE EXTENSION postgis'])
        self.postgis = rc == 0
        if not self.postgis:
            log(f'bench: no PostGIS ({last_line(err)}); its rows are skipped')

    @staticmethod
    def psql(statements, db=DB):
        """Statements in one session, each its own -c (so each its own transaction)."""
        cmd = ['psql', '-X', '-q', '-A', '-t', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-d', db]
        for s in statements:
            cmd += ['-c', s]
        return sh(cmd)

    def must(self, statements):
        rc, out, err = self.psql(statements)
        if rc != 0:
            sys.exit(f'bench: SQL failed: {err.strip()}')
        return out

    def load(self, table, f, n, d):
        """COPY the first n points of a float32 file into table (id, vec real[]).
        %.9g prints every float32 so that it reads back as the same float32."""
        self.must([f'DROP TABLE IF EXISTS {table}',
                   f'CREATE TABLE {table} (id bigint PRIMARY KEY, vec real[])'])
        t0 = time.time()
        p = subprocess.Popen(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB,
                              '-c', f'COPY {table} FROM STDIN'],
                             stdin=subprocess.PIPE, text=True)
        fmt = '%d\t{' + ','.join(['%.9g'] * d) + '}\n'
        chunk = max(1, 1_000_000 // d)
        with open(f, 'rb') as fh:
            for start in range(0, n, chunk):
                m = min(chunk, n - start)
                a = array.array('f')
                a.fromfile(fh, m * d)
                p.stdin.write(''.join(fmt % ((start + i + 1,) + tuple(a[i * d:(i + 1) * d]))
                                      for i in range(m)))
        p.stdin.close()
        if p.wait() != 0:
            sys.exit(f'bench: loading {table} failed')
        self.must([f'VACUUM ANALYZE {table}'])
        return time.time() - t0

    def bench(self, query, reps, setup=(), stats=False, timeout=None):
        """Runs query reps times on the server: (ms list, stats of each run) or
        (None, error)."""
        stmts = list(setup)
        if timeout:
            stmts.append(f"SET statement_timeout = '{int(timeout * reps)}s'")
        stmts.append(f'SELECT ms, st FROM bench($q${query}$q$, {reps}, {str(stats).lower()})')
        rc, out, err = self.psql(stmts)
        if rc != 0:
            errors = [ln for ln in err.splitlines() if ln.startswith('ERROR:')]
            msg = (errors[-1] if errors else last_line(err)).replace('ERROR:  ', '')
            if 'statement timeout' in msg:
                msg = f'timeout (> {timeout:.0f} s)'
            elif 'no GPU is usable' in msg:
                msg = 'n/a (no GPU)'
            return None, msg
        ms, st = [], []
        for line in out.splitlines():
            if line.strip():
                a, _, b = line.partition('\t')
                ms.append(float(a))
                st.append(json.loads(b) if b.strip() else None)
        return ms, st

    def seconds(self, statement):
        """Time one statement that must succeed (building a peer's table)."""
        ms, err = self.bench(statement, 1)
        if ms is None:
            sys.exit(f'bench: SQL failed: {err}')
        return ms[0] / 1000

    def drop(self):
        self.psql([f'DROP DATABASE IF EXISTS {DB}'], db='postgres')


def timed_row(row, ms, st=None):
    """Fill a row's times from a list of milliseconds (median, min, max), and
    its phases and counts from the median run's tc_last_stats()."""
    order = sorted(range(len(ms)), key=lambda i: ms[i])
    med = order[len(ms) // 2]
    row.update(time_s=ms[med] / 1000, time_min_s=min(ms) / 1000, time_max_s=max(ms) / 1000,
               reps=len(ms))
    if st and st[med]:
        s = st[med]
        row.update(method=s['method'], threads=s['threads'], device=s['device'],
                   load_s=s['load_ms'] / 1000, index_s=s['index_ms'] / 1000,
                   join_s=s['join_ms'] / 1000, output_s=s['output_ms'] / 1000,
                   candidates=s['candidates'], pairs=s['pairs'])
    return row


def sql_tc_paths(w, gpu):
    """(path name, settings, tc_selfjoin arguments) for one workload."""
    paths = []
    if w.cpu:
        paths += [('sql tc_selfjoin t=all', ["SET tcjoin.device = 'cpu'"], ''),
                  ('sql tc_selfjoin t=1', ["SET tcjoin.device = 'cpu'",
                                           'SET tcjoin.cpu_threads = 1'], '')]
    if gpu:
        paths += [('sql tc_selfjoin gpu exact', ["SET tcjoin.device = 'gpu'"], '')]
    return paths


PEER_NAMES = {'cube': 'sql cube+gist', 'postgis': 'sql postgis', 'plain': 'sql plain'}


def peer_setup(sql, w, table):
    """Tables and indexes the peers use, built once per workload; returns
    {peer: (load s, index s)}, or {peer: error} when a peer cannot run."""
    out = {}
    for peer in w.peers:
        if peer == 'cube' and w.d > 100:
            out[peer] = 'n/a (cube has at most 100 dimensions)'
        elif peer == 'cube' and not sql.cube:
            out[peer] = 'n/a (no cube)'
        elif peer == 'postgis' and (w.d != 2 or not sql.postgis):
            out[peer] = 'n/a (no PostGIS)' if w.d == 2 else 'n/a (2-D only)'
        elif peer == 'cube':
            out[peer] = (sql.seconds(f'CREATE TABLE {table}_cube AS '
                                     f'SELECT id, cube(vec::float8[]) AS c FROM {table}'),
                         sql.seconds(f'CREATE INDEX ON {table}_cube USING gist (c)'))
            sql.must([f'VACUUM ANALYZE {table}_cube'])
        elif peer == 'postgis':
            out[peer] = (sql.seconds(f'CREATE TABLE {table}_geom AS '
                                     f'SELECT id, ST_MakePoint(vec[1], vec[2]) AS g FROM {table}'),
                         sql.seconds(f'CREATE INDEX ON {table}_geom USING gist (g)'))
            sql.must([f'VACUUM ANALYZE {table}_geom'])
        else:
            out[peer] = (None, None)    # plain SQL: the table as it is
    return out


def peer_query(peer, w, table, eps):
    if peer == 'cube':
        return (f'SELECT count(*) FROM {table}_cube a JOIN {table}_cube b '
                f'ON b.c <@ cube_enlarge(a.c, {eps}, {w.d}) AND a.id < b.id '
                f'AND cube_distance(a.c, b.c) <= {eps}')
    if peer == 'postgis':
        return (f'SELECT count(*) FROM {table}_geom a JOIN {table}_geom b '
                f'ON ST_DWithin(a.g, b.g, {eps}) AND a.id < b.id')
    # The contract's distance, in plain SQL (README: Exactness).
    return (f'SELECT count(*) FROM {table} a JOIN {table} b ON a.id < b.id '
            f'AND (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8))) '
            f'FROM unnest(a.vec, b.vec) AS u(x, y)) <= {eps}')


def gemm_floor(w, timeout):
    """cuBLAS FP16 GEMM of the join's shape and the copy rate, as two rows."""
    rows = [new_row(w, '', '', 'floor', 'floor cublas fp16 gemm'),
            new_row(w, '', '', 'floor', 'floor d2d copy')]
    if not os.path.exists(GEMM_FLOOR):
        for r in rows:
            r['status'] = 'not built (no nvcc)'
        return rows
    rc, out, err = sh([GEMM_FLOOR, str(w.n), str(w.d)], timeout=timeout)
    if rc != 0:
        msg = last_line(err)
        status = 'n/a (no GPU)' if 'driver' in msg or 'no CUDA' in msg else f'error: {msg}'[:120]
        for r in rows:
            r['status'] = status
        return rows
    n, d, block, gemm_s, tflops, gbps, name = last_line(out).split(',', 6)
    rows[0].update(time_s=float(gemm_s), tflops=float(tflops), device=name,
                   note=f'{float(tflops):.1f} TFLOP/s' + ('' if block == n else f' on {block}-blocks'))
    rows[1].update(time_s=w.n * w.d * 4 / (float(gbps) * 1e9), device=name,
                   note=f'{float(gbps):.0f} GB/s copying the points')
    return rows


def measured(row, result):
    """A row with the times of a Sql.bench result, or its error."""
    ms, more = result
    if ms is None:
        row['status'] = more
        return row
    return timed_row(row, ms, more)


def run_sql(sql, data, w, table, epss, gpu, reps, slow_reps, timeout, tag):
    """The SQL rows of one workload: tc_selfjoin, the peers, the floors."""
    rows = []
    secs = sql.load(table, data.path(w), w.n, w.d)
    log(f'{tag}: loaded into table {table} in {secs:.1f} s')
    peers = peer_setup(sql, w, table)
    for k in w.ks:
        eps = epss[k]
        pairs = None
        for path, setup, extra in sql_tc_paths(w, gpu):
            r = reps if path != 'sql tc_selfjoin t=1' else slow_reps
            q = f"SELECT count(*) FROM tc_selfjoin('{table}', 'vec', {eps}{extra})"
            row = measured(new_row(w, k, eps, 'sql', path),
                           sql.bench(q, r, setup, stats=True))
            pairs = pairs or row.get('pairs')
            rows.append(row)
            log(f'{tag} k={k}: {path}: {show_time(row)}')
        for peer in w.peers if k in w.peer_ks else ():
            row = new_row(w, k, eps, 'sql', PEER_NAMES[peer])
            if isinstance(peers[peer], str):
                row['status'] = peers[peer]
            else:
                measured(row, sql.bench(peer_query(peer, w, table, eps), slow_reps,
                                        timeout=timeout))
                row.update(load_s=peers[peer][0], index_s=peers[peer][1],
                           join_s=row.get('time_s'))
            rows.append(row)
            log(f'{tag} k={k}: {PEER_NAMES[peer]}: {show_time(row)}')
        # Floors: reading every vector (detoasted), and emitting as many rows.
        rows.append(measured(new_row(w, k, eps, 'floor', 'floor read table'),
                             sql.bench(f'SELECT sum(array_length(vec, 1)) FROM {table}', reps)))
        if pairs is not None:
            rows.append(measured(new_row(w, k, eps, 'floor', 'floor emit rows', pairs=pairs),
                                 sql.bench(f'SELECT count(*) FROM generate_series(1, {pairs})',
                                           reps)))
    sql.must([f'DROP TABLE IF EXISTS {table}, {table}_cube, {table}_geom'])
    return rows


# ---------------------------------------------------------------- the run

def run_suite(args, progress=None):
    """The rows of the matrix; progress(rows) after each workload."""
    workloads = matrix(args.quick, args.gpu)
    number = {id(w): i + 1 for i, w in enumerate(workloads)}     # in the whole matrix
    if args.workloads:
        workloads = [w for wi, w in enumerate(workloads) if wi + 1 in args.workloads]
    elif args.part:
        # Every N-th workload, so that a long matrix runs as N shorter commands
        # (each workload's paths, peers and floors stay in one of them).
        i, nparts = args.part
        workloads = [w for wi, w in enumerate(workloads) if wi % nparts == i - 1]
    reps = args.reps
    timeout = 60 if args.quick else 600      # one tcbench call; one SQL run of a peer
    tmp = tempfile.mkdtemp(prefix='tcbench-')
    data = Data(workloads, tmp)
    rows = []
    sql = Sql()
    try:
        for wi, w in enumerate(workloads):
            tag = f'[{wi + 1}/{len(workloads)}, #{number[id(w)]}] {w.name} n={w.n:,} d={w.d}'
            epss = {k: data.pick_eps(w, k) for k in w.ks}
            log(f'{tag}: eps ' + ', '.join(f'{epss[k]} for {k} neighbours' for k in w.ks)
                + ' (sampled)')
            if args.gpu and (w.d >= 64 or w.n <= GPU_BRUTE_MAX_N):
                rows += gemm_floor(w, timeout)
            slow_reps = w.reps or reps
            for k in w.ks:
                for path, pargs in engine_paths(w, args.gpu):
                    r = slow_reps if path == 'engine cpu t=1' else reps
                    if 'tc=off' in path and fp64_too_slow(w):
                        r = 1
                    rows.append(run_engine(data, w, k, epss[k], path, pargs, r, timeout))
                    log(f'{tag} k={k}: {path}: {show_time(rows[-1])}')
            if w.sql and sql.ok and sql_tc_paths(w, args.gpu):
                rows += run_sql(sql, data, w, f'w{wi}', epss, args.gpu, reps, slow_reps,
                                timeout, tag)
            if progress:
                progress(in_order(list(rows), workloads))
    finally:
        if sql.ok:
            sql.drop()
        shutil.rmtree(tmp, ignore_errors=True)
    in_order(rows, workloads)
    derive(rows)
    return rows


def in_order(rows, workloads):
    """One block per workload and eps: engine rows first, then SQL, then floors."""
    pos = {(w.name, w.n, w.d): (i, w.ks) for i, w in enumerate(workloads)}

    def order(r):
        i, ks = pos[(r['workload'], r['n'], r['d'])]
        return i, ks.index(r['k']) if r['k'] in ks else -1
    rows.sort(key=order)
    return rows


def derive(rows):
    """Rates, brute-force TFLOP/s, fractions of cuBLAS, and speedups over peers."""
    groups = {}
    for r in rows:
        groups.setdefault((r['workload'], r['n'], r['d'], r['k']), {})[r['path']] = r
    gemm = {(r['workload'], r['n'], r['d']): r for r in rows
            if r['path'] == 'floor cublas fp16 gemm' and r['status'] == 'ok'}
    for (wname, n, d, k), g in groups.items():
        for r in g.values():
            t = r.get('time_s')
            if not t or r['status'] != 'ok':
                continue
            if r.get('pairs') is not None:
                r['pairs_per_s'] = r['pairs'] / t
                r['neighbours_per_point'] = 2 * r['pairs'] / n
            if r.get('method') == 'brute':
                r['tflops'] = 2.0 * n * n * d / t / 1e12
                ref = gemm.get((wname, n, d))
                if ref:
                    r['cublas_fraction'] = r['tflops'] / ref['tflops']
                    if r.get('filter_s'):
                        r['filter_cublas_fraction'] = (2.0 * n * n * d / r['filter_s'] / 1e12
                                                       / ref['tflops'])
            if r['path'].startswith('sql tc_selfjoin'):
                for peer, name in PEER_NAMES.items():
                    p = g.get(name)
                    if p and p['status'] == 'ok':
                        r[f'speedup_vs_{peer}'] = p['time_s'] / t
                read, emit = g.get('floor read table'), g.get('floor emit rows')
                if (read and emit and read['status'] == emit['status'] == 'ok'
                        and read.get('time_s') and emit.get('time_s')):
                    r['floor_ratio'] = t / (read['time_s'] + emit['time_s'])


# ---------------------------------------------------------------- output

CSV_COLS = ['workload', 'source', 'n', 'd', 'k', 'eps', 'layer', 'path', 'device', 'method',
            'threads', 'exact', 'tensor_cores', 'reps', 'time_s', 'time_min_s', 'time_max_s',
            'load_s', 'index_s', 'join_s', 'output_s', 'candidates', 'pairs',
            'neighbours_per_point', 'pairs_per_s', 'tflops', 'cublas_fraction', 'filter_s',
            'recheck_s', 'filter_cublas_fraction',
            'speedup_vs_cube', 'speedup_vs_postgis', 'speedup_vs_plain', 'floor_ratio',
            'status', 'note']


def si(x):
    if x is None or x == '':
        return ''
    for div, suffix in ((1e12, 'T'), (1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
        if abs(x) >= div:
            return f'{x / div:.3g}{suffix}'
    return f'{x:.3g}'


def secs(x):
    if x is None or x == '':
        return ''
    return f'{x:.3f}' if x < 10 else f'{x:.1f}'


def show_time(r):
    if r['status'] != 'ok':
        return r['status']
    t = f'{secs(r["time_s"])} s'
    if (r.get('reps') or 1) > 1:
        t += f' ({secs(r["time_min_s"])}-{secs(r["time_max_s"])})'
    return t


def notes(r):
    out = []
    for peer in PEER_NAMES:
        if r.get(f'speedup_vs_{peer}'):
            out.append(f'{r[f"speedup_vs_{peer}"]:.1f}x {peer}')
    if r.get('floor_ratio'):
        out.append(f'{r["floor_ratio"]:.2f}x floor')
    if r.get('cublas_fraction'):
        f = 100 * r['cublas_fraction']
        out.append(f'{f:.0f}% of cuBLAS' if f >= 9.95 else f'{f:.2g}% of cuBLAS')
    if r.get('filter_cublas_fraction'):
        # the kernels apart: the tensor-core filter against cuBLAS, the exact recheck in seconds
        out.append(f'filter {100 * r["filter_cublas_fraction"]:.0f}% of cuBLAS, '
                   f'recheck {secs(r["recheck_s"])} s')
    if r.get('note'):
        out.append(r['note'])
    return ', '.join(out)


def table(rows):
    """The table: one block per workload and eps, one line per path."""
    lines = []
    head = (f'{"path":<30} {"time s (min-max)":<24} {"pairs":>7} {"pairs/s":>8} '
            f'{"cand.":>7} {"load":>6} {"index":>6} {"join":>6} {"output":>6} '
            f'{"TFLOP/s":>7}  vs peers / floors')
    key = None
    for r in rows:
        k = (r['workload'], r['n'], r['d'], r['k'])
        if k != key and r['k'] != '':
            key = k
            nb = next((x.get('neighbours_per_point') for x in rows
                       if (x['workload'], x['n'], x['d'], x['k']) == k
                       and x.get('neighbours_per_point')), None)
            lines += ['', f'== {r["workload"]}  n={r["n"]:,}  d={r["d"]}  '
                          f'eps={r["eps"]} (for {r["k"]} neighbours'
                          + (f'; got {nb:.0f})' if nb else ')'), head]
        elif r['k'] == '' and k != key:
            key = k
            lines += ['', f'== {r["workload"]}  n={r["n"]:,}  d={r["d"]}  (GPU floors)', head]
        tfl = f'{r["tflops"]:.3g}' if r.get('tflops') else ''
        lines.append(f'{r["path"]:<30} {show_time(r):<24} {si(r.get("pairs")):>7} '
                     f'{si(r.get("pairs_per_s")):>8} {si(r.get("candidates")):>7} '
                     f'{secs(r.get("load_s")):>6} {secs(r.get("index_s")):>6} '
                     f'{secs(r.get("join_s")):>6} {secs(r.get("output_s")):>6} '
                     f'{tfl:>7}  {notes(r)}'.rstrip())
    return '\n'.join(lines)


def write_csv(rows, path):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLS, extrasaction='ignore')
        w.writeheader()
        for r in rows:
            w.writerow({c: ('' if r.get(c) is None else r.get(c)) for c in CSV_COLS})


def read_csv(path):
    """Rows of a results.csv as run_suite made them: numbers as numbers."""
    rows = []
    with open(path, newline='') as f:
        for raw in csv.DictReader(f):
            r = {}
            for c, v in raw.items():
                if c is None:
                    continue            # more fields than the header: a broken line
                if v in ('', None):
                    r[c] = '' if c == 'k' else None
                    continue
                for conv in (int, float):
                    try:
                        r[c] = conv(v)
                        break
                    except ValueError:
                        pass
                else:
                    r[c] = v
            rows.append(r)
    return rows


def merge(dirs):
    """The parts' rows in one list, in the order they ran, rates derived again.
    A workload found in a later part replaces the earlier rows of it (a rerun),
    keeping the earlier place."""
    by_workload, heads = {}, []
    for d in dirs:
        fresh = {}
        for r in read_csv(os.path.join(d, 'results.csv')):
            fresh.setdefault((r['workload'], r['n'], r['d']), []).append(r)
        for w, n, dd in fresh.keys() & by_workload.keys():
            log(f'bench: {w} n={n:,} d={dd} from {d}, in place of the earlier part\'s rows')
        by_workload.update(fresh)
        try:
            with open(os.path.join(d, 'table.txt')) as f:
                head = f.readline().strip() + '; ' + f.readline().strip()
                third = f.readline().strip()
                heads.append(head + (' ' + third if third.startswith('(stopped early') else ''))
        except OSError:
            heads.append(d)
    rows = [r for rs in by_workload.values() for r in rs]
    derive(rows)
    return rows, heads


def machine():
    cpu = platform.processor() or 'unknown CPU'
    rc, out, _ = sh(['lscpu'])
    for line in out.splitlines():
        if line.startswith('Model name:'):
            cpu = line.split(':', 1)[1].strip()
    gpu = ''
    if shutil.which('nvidia-smi'):
        rc, out, _ = sh(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'])
        gpu = ', '.join(out.split('\n')).strip(', ') if rc == 0 else ''
    rc, commit, _ = sh(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'])
    rc2, dirty, _ = sh(['git', '-C', ROOT, 'status', '--porcelain', '--untracked-files=no'])
    return (f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu}, {os.cpu_count()} cores'
            + (f', GPU {gpu}' if gpu else ', no GPU')
            + f', commit {commit.strip() or "unknown"}' + (' (modified)' if dirty.strip() else ''))


def main():
    ap = argparse.ArgumentParser(prog='test/bench/run', description=__doc__.split('\n\n')[0])
    ap.add_argument('--quick', action='store_true', help='a small subset, under a minute')
    ap.add_argument('--gpu', action='store_true', help='add the GPU paths and floors')
    ap.add_argument('--out', default=os.path.join(BENCH, 'out'), help='where results go')
    ap.add_argument('--reps', type=int, default=3, help='repeats per measurement (median)')
    ap.add_argument('--part', metavar='I/N', default=None,
                    help='only workloads I, I+N, I+2N, ... of the matrix (1 <= I <= N)')
    ap.add_argument('--workloads', metavar='I,J,...', default=None,
                    help='only these workloads (numbers in the whole matrix, from 1)')
    ap.add_argument('--merge', metavar='DIR', nargs='+', default=None,
                    help="run nothing: one table, CSV and plots from parts' --out folders")
    args = ap.parse_args()
    if args.part:
        i, nparts = (int(x) for x in args.part.split('/'))
        if not 1 <= i <= nparts:
            ap.error('--part I/N needs 1 <= I <= N')
        args.part = (i, nparts)
    if args.workloads:
        if args.part:
            ap.error('--part and --workloads exclude each other')
        try:
            args.workloads = {int(x) for x in args.workloads.split(',')}
        except ValueError:
            ap.error('--workloads takes numbers, as in --workloads 3,7')
        whole = len(matrix(args.quick, args.gpu))
        if not all(1 <= x <= whole for x in args.workloads):
            ap.error(f'--workloads: this matrix has workloads 1 to {whole}')
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    if args.merge:
        rows, heads = merge(args.merge)
        header = 'tcjoin benchmark, merged from:\n' + '\n'.join(f'  {h}' for h in heads)
    else:
        header = f'tcjoin benchmark: test/bench/run {" ".join(sys.argv[1:])}\n{machine()}'
        log(header)

        # What ran so far, on disk after each workload: a run stopped by a
        # time limit still leaves rows for --merge.
        def progress(done):
            # each written aside, then renamed: a kill mid-write leaves the last whole file
            table_tmp = os.path.join(args.out, 'table.txt.tmp')
            with open(table_tmp, 'w') as f:
                f.write(f'{header}\n(stopped early: {len(done)} rows)\n')
            os.replace(table_tmp, os.path.join(args.out, 'table.txt'))
            csv_tmp = os.path.join(args.out, 'results.csv.tmp')
            write_csv(done, csv_tmp)
            os.replace(csv_tmp, os.path.join(args.out, 'results.csv'))
        rows = run_suite(args, progress)
    text = f'{header}\n{table(rows)}\n\n(finished in {time.time() - t0:.0f} s)'
    print(text)
    with open(os.path.join(args.out, 'table.txt'), 'w') as f:
        f.write(text + '\n')
    write_csv(rows, os.path.join(args.out, 'results.csv'))
    try:
        import plots
    except ImportError as e:
        log(f'bench: no plots ({e}); install python3-matplotlib')
        return
    for p in plots.all_plots(rows, args.out):
        log(f'bench: wrote {p}')
    log(f'bench: wrote {args.out}/results.csv and table.txt')


if __name__ == '__main__':
    main()
