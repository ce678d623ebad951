#!/usr/bin/env python3
"""bench/bytes_report.py TSV... -- the tables of bench/bytes.sh.

Per table size, one row per (operation, label): WAL bytes per call in
block A (right after a checkpoint) and block B (steady state; also the
statements' own WAL, pg_stat_statements, without commit records and
whatever else the cluster wrote meanwhile), full-page
images and WAL records per call (pg_stat_statements, statements only),
buffers hit / read / dirtied per call (block B), and CPU per call (block B:
the session's backend, and the whole server).  Then each a2 operation
against its raw baseline from the same run and label.
"""
import csv
import sys

PAIRS = [('append', 'b1'), ('append', 'b1r'), ('claim', 'b2claim'),
         ('complete', 'b2complete'), ('fail', 'bfail'), ('w4', 'b2'),
         ('claim_next', 'b9claim')]
NAMES = {
    'append': 'a2_append (1 event)', 'b1': 'B1 raw INSERT, time-ordered id',
    'b1r': 'B1 raw INSERT, random id', 'claim': 'a2_claim (1 event)',
    'b2claim': 'B2 raw claim UPDATE', 'complete': 'a2_complete (+1 settled child)',
    'b2complete': 'B2 raw complete (INSERT child + UPDATE)', 'fail': 'a2_fail',
    'bfail': 'raw failure UPDATE', 'w4': 'W4 cycle (3 calls)', 'b2': 'B2 raw cycle (3 statements)',
    'claim_next': 'a2_claim_next (1 session)', 'b9claim': 'B9 raw SKIP LOCKED claim',
}


def load(paths):
    rows = {}
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(f, delimiter='\t'):
                rows[(r['label'], int(r['events']), r['op'], r['block'])] = r
    return rows


def per_call(r, key, scale=1.0):
    calls = float(r['calls'])
    return float(r[key]) / calls * scale


def main():
    rows = load(sys.argv[1:])
    labels = sorted({k[0] for k in rows}, key=lambda l: (l != 'before', l))
    sizes = sorted({k[1] for k in rows})
    ops = [o for o in NAMES if any(k[2] == o for k in rows)]
    for n in sizes:
        print(f'\n### {n:,} finished events\n')
        print('| operation | build | WAL B/call after checkpoint | WAL B/call steady | statements WAL B/call steady | FPI/call after ckpt | WAL records/call | buffers hit/read/dirtied per call | backend CPU µs/call | server CPU µs/call | flags |')
        print('|---|---|---|---|---|---|---|---|---|---|---|')
        for op in ops:
            for lab in labels:
                a = rows.get((lab, n, op, 'A'))
                b = rows.get((lab, n, op, 'B'))
                if not a or not b:
                    continue
                flags = []
                for blk, r in (('A', a), ('B', b)):
                    if int(r['checkpoints']) != 0:
                        flags.append(f'checkpoint in {blk}')
                print(f"| {NAMES[op]} | {lab} | {per_call(a, 'wal_bytes'):,.0f} | {per_call(b, 'wal_bytes'):,.0f} "
                      f"| {per_call(b, 'stmt_wal_bytes'):,.0f} "
                      f"| {per_call(a, 'wal_fpi'):.2f} | {per_call(b, 'wal_records'):.1f} "
                      f"| {per_call(b, 'hit'):.1f} / {per_call(b, 'read'):.2f} / {per_call(b, 'dirtied'):.2f} "
                      f"| {per_call(b, 'backend_cpu_ns', 1e-3):.0f} | {per_call(b, 'server_cpu_ns', 1e-3):.0f} "
                      f"| {', '.join(flags)} |")
        print(f'\nRatios a2 / raw baseline ({n:,} events; same build and run):\n')
        print('| a2 / baseline | build | WAL after ckpt | WAL steady | buffers (hit+read) | backend CPU | server CPU |')
        print('|---|---|---|---|---|---|---|')
        for x, y in PAIRS:
            for lab in labels:
                try:
                    xa, xb = rows[(lab, n, x, 'A')], rows[(lab, n, x, 'B')]
                    ya, yb = rows[(lab, n, y, 'A')], rows[(lab, n, y, 'B')]
                except KeyError:
                    continue

                def ratio(p, q, key):
                    d = per_call(q, key)
                    return per_call(p, key) / d if d else float('nan')
                buf = ((per_call(xb, 'hit') + per_call(xb, 'read')) /
                       max(per_call(yb, 'hit') + per_call(yb, 'read'), 1e-9))
                print(f"| {x} / {y} | {lab} | {ratio(xa, ya, 'wal_bytes'):.2f} | {ratio(xb, yb, 'wal_bytes'):.2f} "
                      f"| {buf:.2f} | {ratio(xb, yb, 'backend_cpu_ns'):.2f} | {ratio(xb, yb, 'server_cpu_ns'):.2f} |")


if __name__ == '__main__':
    main()
