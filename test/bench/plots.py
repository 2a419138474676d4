"""PNG plots of the benchmark rows (see bench.py): time against n, time
against eps, speedup over each peer, and where the SQL path's time goes."""
import os

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

class PlainLog(LogFormatter):
    """Log-axis labels as plain numbers (0.1, 2, 10), not powers of ten."""

    def _num_to_string(self, x, vmin, vmax):
        return f'{x:g}'


# One colour and marker per path, the same in every plot.
STYLE = {
    'engine cpu t=all': ('tab:blue', 'o', '-'),
    'engine cpu t=1': ('tab:blue', 'o', ':'),
    'sql tc_selfjoin t=all': ('tab:green', 's', '-'),
    'sql tc_selfjoin t=1': ('tab:green', 's', ':'),
    'sql tc_selfjoin gpu exact': ('tab:olive', 's', '-'),
    'sql tc_selfjoin gpu approx': ('tab:olive', 's', '--'),
    'sql cube+gist': ('tab:red', '^', '-'),
    'sql postgis': ('tab:purple', 'v', '-'),
    'sql plain': ('tab:brown', 'D', '-'),
    'floor read + emit': ('0.5', '', '--'),
}
GPU_COLOURS = ['tab:orange', 'tab:cyan', 'tab:pink', 'gold', 'tab:gray', 'black',
               'darkorange', 'teal']


def style(path, gpu_paths):
    if path in STYLE:
        return STYLE[path]
    i = gpu_paths.index(path) if path in gpu_paths else 0
    return (GPU_COLOURS[i % len(GPU_COLOURS)], 'P', '-' if 'exact' in path else '--')


def ok(rows):
    return [r for r in rows if r['status'] == 'ok' and r.get('time_s')]


def with_floor(rows):
    """Adds a 'floor read + emit' row per workload and eps: the least any SQL
    function returning that many rows from that table could take."""
    out = list(rows)
    by = {}
    for r in rows:
        by.setdefault((r['workload'], r['n'], r['d'], r['k']), {})[r['path']] = r
    for g in by.values():
        read, emit = g.get('floor read table'), g.get('floor emit rows')
        if read and emit:
            f = dict(read, path='floor read + emit', time_s=read['time_s'] + emit['time_s'])
            out.append(f)
    return out


def plotted(path):
    return not path.startswith('floor') or path == 'floor read + emit'


def lines(ax, rows, x_of, gpu_paths):
    paths = sorted({r['path'] for r in rows if plotted(r['path'])},
                   key=lambda p: (list(STYLE).index(p) if p in STYLE else 50, p))
    for p in paths:
        pts = sorted((x_of(r), r['time_s']) for r in rows if r['path'] == p)
        if not pts:
            continue
        c, m, ls = style(p, gpu_paths)
        ax.plot([x for x, _ in pts], [y for _, y in pts], color=c, marker=m, linestyle=ls,
                label=p.replace('sql ', 'SQL ').replace('engine ', 'engine '), markersize=4)
    ax.set_yscale('log')
    ax.yaxis.set_major_formatter(PlainLog())
    ax.yaxis.set_minor_formatter(PlainLog(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))
    ax.grid(True, which='both', alpha=0.3)


def grid_of(count, width=5.2, height=3.8):
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    # At least 9 inches wide, so that the legend below fits.
    fig, axes = plt.subplots(rows, cols, figsize=(max(9, width * cols), height * rows + 0.8),
                             squeeze=False)
    for ax in axes.flat[count:]:
        ax.axis('off')
    return fig, list(axes.flat)


def legend_below(fig, axes):
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    ncol = min(len(labels), int(fig.get_figwidth() / 2.6))
    fig.legend([handles[lab] for lab in labels], labels, loc='lower center',
               ncol=ncol, fontsize=9, frameon=False)
    return (len(labels) + ncol - 1) // ncol


def finish(fig, path, legend_rows):
    # Leave the legend's rows (about 0.25 inch each) free at the bottom.
    bottom = (0.25 * legend_rows + 0.1) / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 0.95))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def time_vs_n(rows, out, gpu_paths):
    """Workloads measured at three or more sizes, at their first eps."""
    series = {}
    for r in rows:
        if r['k'] in ('', None):
            continue
        series.setdefault((r['workload'], r['d'], r['k']), set()).add(r['n'])
    keys = [k for k, ns in series.items() if len(ns) >= 3]
    if not keys:
        return None
    fig, axes = grid_of(len(keys))
    for ax, (w, d, k) in zip(axes, keys):
        sel = [r for r in rows if (r['workload'], r['d'], r['k']) == (w, d, k)]
        lines(ax, sel, lambda r: r['n'], gpu_paths)
        ax.set_xscale('log')
        ns = sorted({r['n'] for r in sel})
        ax.set_xticks(ns)
        ax.set_xticks([], minor=True)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f'{v / 1e6:g}M' if v >= 1e6
                                                   else f'{v / 1e3:g}k'))
        ax.set_title(f'{w}, {k} neighbours per point')
        ax.set_xlabel('n (points)')
        ax.set_ylabel('seconds (median)')
    fig.suptitle('Time against n (lower is better)')
    return finish(fig, os.path.join(out, 'time_vs_n.png'), legend_below(fig, axes))


def time_vs_eps(rows, out, gpu_paths):
    """Workloads measured at two or more eps."""
    series = {}
    for r in rows:
        if r['k'] not in ('', None):
            series.setdefault((r['workload'], r['n'], r['d']), set()).add(r['k'])
    keys = [k for k, ks in series.items() if len(ks) >= 2]
    if not keys:
        return None
    fig, axes = grid_of(len(keys))
    for ax, (w, n, d) in zip(axes, keys):
        # the GPU floors of a workload have no eps: they are drawn elsewhere
        sel = [r for r in rows if (r['workload'], r['n'], r['d']) == (w, n, d)
               and r['k'] not in ('', None)]
        lines(ax, sel, lambda r: float(r['eps']), gpu_paths)
        ks = sorted({(float(r['eps']), r['k']) for r in sel})
        ax.set_xticks([e for e, _ in ks])
        ax.set_xticklabels([f'{e:.3g}\n({k})' for e, k in ks], fontsize=8)
        ax.set_title(f'{w}, n={n:,}, d={d}')
        ax.set_xlabel('eps (neighbours per point)')
        ax.set_ylabel('seconds (median)')
    fig.suptitle('Time against eps (lower is better)')
    return finish(fig, os.path.join(out, 'time_vs_eps.png'), legend_below(fig, axes))


def speedup(rows, out):
    """tc_selfjoin (all CPU threads, and the GPU where it ran) against each
    peer on the same table and eps."""
    peers = [('cube', 'cube + GiST', 'tab:red'), ('postgis', 'PostGIS ST_DWithin', 'tab:purple'),
             ('plain', 'plain SQL', 'tab:brown')]
    sel = [r for r in rows if r['path'] == 'sql tc_selfjoin t=all'
           and any(r.get(f'speedup_vs_{p}') for p, _, _ in peers)]
    if not sel:
        return None
    on_gpu = {(r['workload'], r['n'], r['d'], r['k']): r for r in rows
              if r['path'] == 'sql tc_selfjoin gpu exact'}
    gpu = [on_gpu.get((r['workload'], r['n'], r['d'], r['k'])) for r in sel]
    series = [(p, label, colour, sel, None) for p, label, colour in peers]
    if any(gpu):
        series = [x for p, label, colour in peers
                  for x in ((p, f'{label}: CPU', colour, sel, None),
                            (p, f'{label}: GPU', colour, gpu, '//'))]
    series = [x for x in series if any(r and r.get(f'speedup_vs_{x[0]}') for r in x[3])]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(sel) * (2 if any(gpu) else 1) + 2), 4.6))
    width = 0.8 / len(series)
    top = 1
    for i, (p, label, colour, rs, hatch) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, r in enumerate(rs)
              if r and r.get(f'speedup_vs_{p}')]
        ys = [r[f'speedup_vs_{p}'] for r in rs if r and r.get(f'speedup_vs_{p}')]
        if not ys:
            continue
        top = max(top, max(ys))
        bars = ax.bar(xs, ys, width, label=label, color=colour, hatch=hatch,
                      edgecolor='white' if hatch else None)
        ax.bar_label(bars, labels=[f'{y:.0f}x' if y >= 10 else f'{y:.1f}x' for y in ys],
                     fontsize=7, padding=1)
    ax.set_xticks(range(len(sel)))
    ax.set_xticklabels([f'{r["workload"]}\nn={r["n"]:,}\nK={r["k"]}' for r in sel], fontsize=7)
    ax.set_yscale('log')
    ax.axhline(1, color='0.3', linewidth=0.8)
    ax.set_ylim(top=top * 3)
    ax.set_ylabel('peer time / tc_selfjoin time')
    ax.set_title('Speedup of tc_selfjoin (all CPU threads' + (', and on the GPU' if any(gpu) else '')
                 + ') over each peer\nsame table, same eps; higher is better', fontsize=10)
    ax.legend(fontsize=8, loc='upper left', ncol=3)
    ax.grid(True, axis='y', which='both', alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out, 'speedup.png')
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def phases(rows, out):
    """Where a tc_selfjoin call spends its time, at each workload's first eps."""
    seen, sel = set(), []
    for r in rows:
        key = (r['workload'], r['n'], r['d'])
        if r['path'] == 'sql tc_selfjoin t=all' and r.get('join_s') is not None and key not in seen:
            seen.add(key)
            sel.append(r)
    if not sel:
        return None
    parts = [('load', 'tab:gray', lambda r: r['load_s']),
             ('index', 'tab:orange', lambda r: r['index_s']),
             ('join (compute)', 'tab:blue', lambda r: max(0.0, r['join_s'] - r['output_s'])),
             ('output (rows into the tuplestore)', 'tab:green', lambda r: r['output_s']),
             ('rest (executor reads the rows back)', 'tab:olive',
              lambda r: max(0.0, r['time_s'] - r['load_s'] - r['index_s'] - r['join_s']))]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(sel) + 2.2))
    labels = [f'{r["workload"]} n={r["n"]:,} K={r["k"]}' for r in sel]
    left = [0.0] * len(sel)
    for name, colour, f in parts:
        shares = [f(r) / r['time_s'] * 100 for r in sel]
        ax.barh(range(len(sel)), shares, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, shares)]
    ax.set_yticks(range(len(sel)))
    ax.set_yticklabels([f'{lab}  ({r["time_s"]:.2g} s)' for lab, r in zip(labels, sel)], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel('% of the call')
    ax.set_title('Where tc_selfjoin spends its time (SQL, all CPU threads)')
    fig.legend(fontsize=8, loc='lower center', ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.6 / fig.get_figheight(), 1, 1))
    path = os.path.join(out, 'phases.png')
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def all_plots(rows, out):
    rows = with_floor(ok(rows))
    gpu_paths = sorted({r['path'] for r in rows if 'gpu' in r['path']})
    made = [time_vs_n(rows, out, gpu_paths), time_vs_eps(rows, out, gpu_paths),
            speedup(rows, out), phases(rows, out)]
    return [p for p in made if p]
