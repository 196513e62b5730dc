#!/usr/bin/env python3
"""Tables for timing the tuner's best decode matvec schedules inside the
decode graph, one shape at a time.

`kilnc tune` times each kernel alone; inside the decode graph its neighbours
change what wins (bench/RESULTS.md, session 18: a streamed Q4_K gate/up 6 %
faster alone made the step 10 % slower). For each decode matvec shape of a
model type that has an exact entry in the base table, this takes the K
fastest distinct schedules that the given `kilnc tune` caches hold as
correct ("ok", no variant, the base table's target) and writes one table per
schedule: the base table with only that shape's entry replaced. A schedule
counts once however a cache spelled it (fields at their schedule.proto
default may be left out), at its fastest time. Compile a bundle with each
(`kilnc compile --schedules T`), time it with `kiln bench`, and keep a
shape's winner where it beats the base table: tools/gpu_graph_select.sh
does that on the GPU host (docs/tuning.md).

Writes OUT/<dtype><rows>x<cols>-<i>.txtpb (i = 0 the fastest alone) and
OUT/index.tsv (table name, shape, µs alone, schedule). Caches are read as
`kilnc tune` reads them: v1 (16 fields) and v2 (17) lines, empty lines
skipped, a last line without its newline (an interrupted write) dropped."""
import argparse
import collections
import gzip
import os
import re
import sys

DTYPES = {'Q8_0': ['q8_0_planar'], 'Q4_K_M': ['q4_k', 'q6_k']}
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))


def fail(message):
    sys.exit('graph_candidates: %s' % message)


def matvec_fields(proto_path):
    """[(field, default)] of schedule.proto's MatVecSchedule, in field order."""
    text = open(proto_path).read()
    body = re.search(r'message MatVecSchedule \{(.*?)\n\}', text, re.S)
    if body is None:
        fail('%s: no MatVecSchedule message' % proto_path)
    return re.findall(r'optional (?:int32|bool) (\w+) = \d+ \[default = (\w+)\];', body.group(1))


def canonical(schedule, fields, where):
    """The schedule with every field, in schedule.proto's order."""
    given = dict(re.findall(r'(\w+): (\S+)', schedule))
    unknown = set(given) - {f for f, _ in fields}
    if unknown:
        fail('%s: unknown MatVecSchedule field %s' % (where, ', '.join(sorted(unknown))))
    return ' '.join('%s: %s' % (f, given.get(f, default)) for f, default in fields)


def read_cache(path, target, dtypes, fields, best):
    """best[(dtype, rows, cols)][canonical schedule] = the fastest µs."""
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        text = f.read()
    lines = text.split('\n')
    if lines[-1]:
        print('graph_candidates: %s: the last line has no newline (an interrupted write): dropped' % path,
              file=sys.stderr)
    for n, line in enumerate(lines[:-1], 1):
        if not line or line.startswith('#'):
            continue
        p = line.split('\t')
        if len(p) == 17:  # v2: the code before the status
            del p[10]
        elif len(p) != 16:
            fail('%s:%d: not a kilnc tune cache line (%d tab-separated fields, not 16 or 17)' % (path, n, len(p)))
        try:
            shape, us = (p[5], int(p[6]), int(p[7])), float(p[11])
        except ValueError:
            fail('%s:%d: bad rows, cols or us field' % (path, n))
        if p[3] != target or p[4] != 'matvec' or p[5] not in dtypes or p[9] or p[10] != 'ok':
            continue
        schedule = canonical(p[8], fields, '%s:%d' % (path, n))
        if best[shape].get(schedule, float('inf')) > us:
            best[shape][schedule] = us


def main():
    doc, details = __doc__.split('\n\n', 1)
    ap = argparse.ArgumentParser(description=doc, epilog=details,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--type', required=True, choices=sorted(DTYPES),
                    help='the model type whose matvec shapes to take (its weight dtypes)')
    ap.add_argument('--k', type=int, default=6, help='schedules per shape (default 6)')
    ap.add_argument('--table', default=os.path.join(ROOT, 'schedules', 'sm_90.txtpb'),
                    help='base table (default: the shipped sm_90 one)')
    ap.add_argument('--out', required=True, help='folder for the tables (made if missing)')
    ap.add_argument('caches', nargs='+', help='kilnc tune caches (.tsv or .tsv.gz)')
    a = ap.parse_args()
    if a.k < 1:
        fail('--k %d: give at least 1 schedule per shape' % a.k)
    best = collections.defaultdict(dict)
    try:
        fields = matvec_fields(os.path.join(ROOT, 'schedules', 'schedule.proto'))
        base = open(a.table).read()
        target = re.search(r'^target: "(\w+)"', base, re.M)
        if target is None:
            fail('%s: no target line: not a schedule table' % a.table)
        for c in a.caches:
            read_cache(c, target.group(1), DTYPES[a.type], fields, best)
        os.makedirs(a.out, exist_ok=True)
    except (OSError, EOFError, UnicodeDecodeError) as e:
        fail(e)
    index = []
    for (dtype, rows, cols), cands in sorted(best.items()):
        entry = re.compile(r'(entries \{ family: "matvec" weight_dtype: "%s" min_rows: %d max_rows: %d '
                           r'min_cols: %d max_cols: %d\n  )matvec \{[^}]*\}' % (dtype, rows, rows, cols, cols))
        if not entry.search(base):
            continue  # no exact entry: not a shape the table tunes
        for i, (sched, us) in enumerate(sorted(cands.items(), key=lambda x: x[1])[:a.k]):
            name = '%s%dx%d-%d' % (dtype, rows, cols, i)
            with open(os.path.join(a.out, name + '.txtpb'), 'w') as f:
                f.write(entry.sub(lambda m: m.group(1) + 'matvec { ' + sched + ' }', base))
            index.append('%s\t%s %dx%d\t%.3f\t%s' % (name, dtype, rows, cols, us, sched))
    if not index:
        fail('no correct cached schedule of a %s shape with an exact entry in %s' % (a.type, a.table))
    with open(os.path.join(a.out, 'index.tsv'), 'w') as f:
        f.write('\n'.join(index) + '\n')
    print('graph_candidates: %d tables in %s' % (len(index), a.out))


if __name__ == '__main__':
    main()
