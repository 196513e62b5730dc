#!/usr/bin/env python3
"""Tables for timing the tuner's best decode schedules (matvecs, and with
--families the decode attention) inside the decode graph, one shape at a time.

`kilnc tune` times each kernel alone; inside the decode graph its neighbours
change what wins (bench/RESULTS.md, session 18: a streamed Q4_K gate/up 6 %
faster alone made the step 10 % slower). For each shape of the families
(matvecs: of the model type's weight dtypes) that has an exact entry in the
base table, this takes the K
fastest distinct schedules that the given `kilnc tune` caches hold as
correct ("ok", no variant, the base table's target) and writes one table per
schedule: the base table with only that shape's entry replaced. A schedule
counts once however a cache spelled it (fields at their schedule.proto
default may be left out), at its fastest time. Compile a bundle with each
(`kilnc compile --schedules T`), time it with `kiln bench`, and keep a
shape's winner where it beats the base table: tools/gpu_graph_select.sh
does that on the GPU host (docs/tuning.md).

Writes OUT/<dtype><rows>x<cols>-<i>.txtpb (matvecs; attention_<dtype>... for
the decode attention; i = 0 the fastest alone) and
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
# family: (the schedule's field in a table entry, its schedule.proto message,
# the prefix of its tables' names).
FAMILIES = {'matvec': ('matvec', 'MatVecSchedule', ''),
            'attention_decode': ('attention', 'AttentionSchedule', 'attention_')}
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))


def fail(message):
    sys.exit('graph_candidates: %s' % message)


def message_fields(proto_path, message):
    """[(field, default)] of a schedule.proto message, in field order."""
    text = open(proto_path).read()
    body = re.search(r'message %s \{(.*?)\n\}' % message, text, re.S)
    if body is None:
        fail('%s: no %s message' % (proto_path, message))
    return re.findall(r'optional (?:int32|bool) (\w+) = \d+ \[default = (\w+)\];', body.group(1))


def canonical(schedule, message, fields, where):
    """The schedule with every field, in schedule.proto's order."""
    given = dict(re.findall(r'(\w+): (\S+)', schedule))
    unknown = set(given) - {f for f, _ in fields}
    if unknown:
        fail('%s: unknown %s field %s' % (where, message, ', '.join(sorted(unknown))))
    return ' '.join('%s: %s' % (f, given.get(f, default)) for f, default in fields)


def read_cache(path, target, dtypes, fields, best):
    """best[(family, dtype, rows, cols)][canonical schedule] = the fastest µs,
    for the families of `fields` (family: [(field, default)]); a matvec's
    dtype must be one of `dtypes`."""
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
            shape, us = (p[4], p[5], int(p[6]), int(p[7])), float(p[11])
        except ValueError:
            fail('%s:%d: bad rows, cols or us field' % (path, n))
        if p[3] != target or p[4] not in fields or (p[4] == 'matvec' and p[5] not in dtypes) or p[9] or p[10] != 'ok':
            continue
        schedule = canonical(p[8], FAMILIES[p[4]][1], fields[p[4]], '%s:%d' % (path, n))
        if best[shape].get(schedule, float('inf')) > us:
            best[shape][schedule] = us


def main():
    doc, details = __doc__.split('\n\n', 1)
    ap = argparse.ArgumentParser(description=doc, epilog=details,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--type', required=True, choices=sorted(DTYPES),
                    help='the model type whose matvec shapes to take (its weight dtypes)')
    ap.add_argument('--families', default='matvec',
                    help='comma-separated: matvec, attention_decode (default matvec)')
    ap.add_argument('--k', type=int, default=6, help='schedules per shape (default 6)')
    ap.add_argument('--table', default=os.path.join(ROOT, 'schedules', 'sm_90.txtpb'),
                    help='base table (default: the shipped sm_90 one)')
    ap.add_argument('--out', required=True, help='folder for the tables (made if missing)')
    ap.add_argument('caches', nargs='+', help='kilnc tune caches (.tsv or .tsv.gz)')
    a = ap.parse_args()
    if a.k < 1:
        fail('--k %d: give at least 1 schedule per shape' % a.k)
    families = a.families.split(',')
    for f in families:
        if f not in FAMILIES:
            fail('--families: unknown family %r (matvec, attention_decode)' % f)
    best = collections.defaultdict(dict)
    try:
        proto = os.path.join(ROOT, 'schedules', 'schedule.proto')
        fields = {f: message_fields(proto, FAMILIES[f][1]) for f in families}
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
    for (family, dtype, rows, cols), cands in sorted(best.items()):
        field, _, prefix = FAMILIES[family]
        entry = re.compile(r'(entries \{ family: "%s" weight_dtype: "%s" min_rows: %d max_rows: %d '
                           r'min_cols: %d max_cols: %d\n  )%s \{[^}]*\}' % (family, dtype, rows, rows, cols, cols, field))
        if not entry.search(base):
            continue  # no exact entry: not a shape the table tunes
        for i, (sched, us) in enumerate(sorted(cands.items(), key=lambda x: x[1])[:a.k]):
            name = '%s%s%dx%d-%d' % (prefix, dtype, rows, cols, i)
            with open(os.path.join(a.out, name + '.txtpb'), 'w') as f:
                f.write(entry.sub(lambda m: m.group(1) + field + ' { ' + sched + ' }', base))
            index.append('%s\t%s %s %dx%d\t%.3f\t%s' % (name, family, dtype, rows, cols, us, sched))
    if not index:
        fail('no correct cached schedule of a %s shape (%s) with an exact entry in %s' % (a.type, a.families, a.table))
    with open(os.path.join(a.out, 'index.tsv'), 'w') as f:
        f.write('\n'.join(index) + '\n')
    print('graph_candidates: %d tables in %s' % (len(index), a.out))


if __name__ == '__main__':
    main()
