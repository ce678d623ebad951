#!/usr/bin/env python3
"""bench/longtx_report.py OUT -- the tables of bench/longtx.sh.

Per run (workload x variant): throughput per interval (pgbench -P), the
table and index sizes, live and dead rows, autovacuum runs.  Then one
summary row per run: first-interval and last-minute throughput, the ratio
of the last minute with the transaction held open to the last minute
without, the claim statement's mean latency (pgbench -r) and the buffers
one claim call touched at the end (EXPLAIN BUFFERS).
"""
import glob
import os
import re
import sys

out = sys.argv[1]
runs = sorted(os.path.basename(p)[:-len('.pgbench')] for p in glob.glob(os.path.join(out, '*.pgbench')))


def progress(key):
    pts = []
    with open(os.path.join(out, key + '.pgbench')) as f:
        for line in f:
            m = re.match(r'progress: ([0-9.]+) s, ([0-9.]+) tps', line)
            if m:
                pts.append((float(m.group(1)), float(m.group(2))))
    return pts


def statement_latency(key, nth):
    """Mean latency of the nth statement of the script (pgbench -r)."""
    with open(os.path.join(out, key + '.pgbench')) as f:
        lines = f.read().split('statement latencies in milliseconds')
    if len(lines) < 2:
        return '?'
    stmts = [l.split()[0] for l in lines[1].splitlines()[1:] if re.match(r'\s+[0-9.]+\s+\d+\s+\S', l)]
    return stmts[nth] if nth < len(stmts) else '?'


def probe_buffers(key):
    try:
        with open(os.path.join(out, key + '.probe')) as f:
            text = f.read()
    except OSError:
        return '?'
    m = re.search(r'Buffers: shared hit=(\d+)(?: read=(\d+))?', text)
    if not m:
        return '?'
    return str(int(m.group(1)) + int(m.group(2) or 0))


def samples(key):
    rows = []
    with open(os.path.join(out, key + '.samples')) as f:
        for line in f:
            parts = line.rstrip('\n').split('\t')
            if len(parts) < 7:
                continue
            t, _, table, idx, live, dead, av = parts[:7]
            sizes = dict(kv.split('=') for kv in idx.split())
            stm = parts[7].split('/') if len(parts) > 7 and parts[7] != '-' else None
            blks_read = int(parts[8]) if len(parts) > 8 and parts[8].isdigit() else None
            rows.append((t, table, sizes, live, dead, av, stm, blks_read))
    return rows


def mean_last(pts, secs):
    if not pts:
        return float('nan')
    end = pts[-1][0]
    sel = [tps for t, tps in pts if t > end - secs]
    return sum(sel) / len(sel)


summary = []
for key in runs:
    pts = progress(key)
    sm = samples(key)
    names = sorted(sm[0][2]) if sm else []
    short = [re.sub(r'^q_lt_\d+_', '', n.replace('a2_events_', '').replace('b9_events_', '')) for n in names]
    print(f'\n#### {key}\n')
    print('| t (s) | cycles/s in interval | claim buffers/call in interval | buffers/cycle in interval | table MB | ' + ' | '.join(f'{s} MB' for s in short) + ' | live rows | dead rows | autovacuums | blocks read into shared buffers in interval |')
    print('|---' * (9 + len(short)) + '|')
    prev = None
    prev_read = None
    last_claim = '?'
    for t, table, sizes, live, dead, av, stm, blks_read in sm:
        # the table's and its indexes' blocks that were not in shared
        # buffers (autovacuum's reads count here too)
        reads = '' if blks_read is None or prev_read is None else str(blks_read - prev_read)
        prev_read = blks_read if blks_read is not None else prev_read
        per_claim = per_cycle = ''
        if stm and prev:
            dc = int(stm[0]) - int(prev[0])
            if dc > 0:
                per_claim = f'{(int(stm[1]) - int(prev[1])) / dc:.0f}'
                per_cycle = f'{(int(stm[2]) - int(prev[2])) / dc:.0f}'
                last_claim = per_claim
        prev = stm or prev
        # the pgbench interval that ended nearest to the sample
        near = [tps for pt, tps in pts if t.isdigit() and abs(pt - int(t)) <= 3]
        tps = f'{near[0]:.0f}' if near else ''
        print(f'| {t} | {tps} | {per_claim} | {per_cycle} | {table} | ' + ' | '.join(sizes.get(n, '') for n in names) + f' | {live} | {dead} | {av} | {reads} |')
    # the claim is W4's and P4's second statement, W9's and B9's first
    summary.append((key, pts[0][1] if pts else float('nan'), mean_last(pts, 60),
                    statement_latency(key, 0 if key.startswith(('W9', 'B9')) else 1), probe_buffers(key), last_claim))

print('\n#### Summary\n')
print('| run | cycles/s, first interval | cycles/s, last 60 s | last 60 s vs the same workload without | claim statement mean ms | claim buffers/call, last interval | buffers of one claim call at the end (EXPLAIN) |')
print('|---|---|---|---|---|---|---|')
base = {k.rsplit('_', 1)[0]: last for k, first, last, lat, buf, lc in summary if k.endswith('_none')}
for key, first, last, lat, buf, lc in summary:
    b = base.get(key.rsplit('_', 1)[0])
    ratio = f'{last / b:.2f}' if b else ''
    print(f'| {key} | {first:.0f} | {last:.0f} | {ratio} | {lat} | {lc} | {buf} |')
