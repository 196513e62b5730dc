#!/usr/bin/env python3
"""Tables for timing the tuner's best decode matvec schedules inside the
decode graph, one shape at a time.

`kilnc tune` times each kernel alone; inside the decode graph its neighbours
change what wins (bench/RESULTS.md, session 18: a streamed Q4_K gate/up 6 %
faster alone made the step 10 % slower). For each decode matvec shape of a
model type that has an exact entry in the base table, this takes the K
fastest distinct schedules (status ok) the given `kilnc tune` caches hold
and writes one table per schedule: the base table with only that shape's
entry replaced. Compile a bundle with each (`kilnc compile --schedules T`),
time it with `kiln bench`, and keep a shape's winner where it beats the
base table (tools/gpu_graph_select.sh does that on the GPU host).

usage: graph_candidates.py --type Q8_0|Q4_K_M [--k 6] [--table T (default schedules/sm_90.txtpb)]
                           --out DIR CACHE.tsv[.gz] ...
Writes DIR/<dtype><rows>x<cols>-<i>.txtpb and DIR/index.tsv (table name,
shape, µs alone, schedule)."""
import argparse
import collections
import gzip
import os
import re
import sys

DTYPES = {'Q8_0': ['q8_0_planar'], 'Q4_K_M': ['q4_k', 'q6_k']}


def read_cache(path, dtypes, best):
    """best[(dtype, rows, cols)][schedule] = the fastest µs of any line."""
    opener = gzip.open if path.endswith('.gz') else open
    v2 = False
    with opener(path, 'rt') as f:
        for n, line in enumerate(f, 1):
            if line.startswith('#'):
                v2 = 'cache v2' in line  # v2 added the code column before status
                continue
            p = line.rstrip('\n').split('\t')
            try:
                status, us = (p[11], p[12]) if v2 else (p[10], p[11])
                if p[4] != 'matvec' or status != 'ok' or p[5] not in dtypes:
                    continue
                shape, us = (p[5], int(p[6]), int(p[7])), float(us)
            except (IndexError, ValueError):
                sys.exit('graph_candidates: %s:%d: not a kilnc tune cache line' % (path, n))
            if best[shape].get(p[8], float('inf')) > us:
                best[shape][p[8]] = us


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--type', required=True, choices=sorted(DTYPES))
    ap.add_argument('--k', type=int, default=6, help='schedules per shape (default 6)')
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'schedules', 'sm_90.txtpb')
    ap.add_argument('--table', default=os.path.normpath(shipped), help='base table (default: the shipped sm_90 one)')
    ap.add_argument('--out', required=True, help='folder for the tables (made if missing)')
    ap.add_argument('caches', nargs='+', help='kilnc tune caches (.tsv or .tsv.gz)')
    a = ap.parse_args()
    best = collections.defaultdict(dict)
    try:
        for c in a.caches:
            read_cache(c, DTYPES[a.type], best)
        base = open(a.table).read()
        os.makedirs(a.out, exist_ok=True)
    except (OSError, EOFError, UnicodeDecodeError) as e:
        sys.exit('graph_candidates: %s' % e)
    index = []
    for (dtype, rows, cols), cands in sorted(best.items()):
        entry = re.compile(r'(entries \{ family: "matvec" weight_dtype: "%s" min_rows: %d max_rows: %d '
                           r'min_cols: %d max_cols: %d\n  )matvec \{[^}]*\}' % (dtype, rows, rows, cols, cols))
        if not entry.search(base):
            continue  # no exact entry: not a shape the table tunes
        for i, (sched, us) in enumerate(sorted(cands.items(), key=lambda x: x[1])[:a.k]):
            name = '%s%dx%d-%d' % (dtype, rows, cols, i)
            with open('%s/%s.txtpb' % (a.out, name), 'w') as f:
                f.write(entry.sub(lambda m: m.group(1) + 'matvec { ' + sched + ' }', base))
            index.append('%s\t%s %dx%d\t%.3f\t%s' % (name, dtype, rows, cols, us, sched))
    if not index:
        sys.exit('graph_candidates: no cached schedule of a %s shape with an exact entry in %s' % (a.type, a.table))
    with open('%s/index.tsv' % a.out, 'w') as f:
        f.write('\n'.join(index) + '\n')
    print('graph_candidates: %d tables in %s' % (len(index), a.out))


if __name__ == '__main__':
    main()
