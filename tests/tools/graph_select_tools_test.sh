#!/usr/bin/env bash
# tools/graph_candidates.py: from kilnc tune caches (v1 and v2 lines), the K
# fastest distinct ok schedules of each shape the base table has an exact
# entry for, each table the base with that one entry replaced (and loadable
# by kilnc); clear errors for bad input. tools/gpu_graph_select.sh, with
# stand-ins for kilnc and kiln: per shape the fastest table against the base,
# and the greedy-token check of the winners.
set -uo pipefail
KILNC=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
passes=0
check() {  # check <description> <condition command...>
  local what=$1; shift
  if "$@"; then echo "ok   $what"; passes=$((passes + 1)); else echo "FAIL $what"; fails=$((fails + 1)); fi
}
expect_error() {  # expect_error <description> <needle> <command...>
  local what=$1 needle=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -ge 1 ] && [ $rc -le 2 ] && grep -qF -- "$needle" <<<"$out" && ! grep -q Traceback <<<"$out"; then
    echo "ok   $what"; passes=$((passes + 1))
  else
    echo "FAIL $what (rc=$rc): $out"; fails=$((fails + 1))
  fi
}
GC=$SRC/tools/graph_candidates.py
TABLE=$SRC/schedules/sm_90.txtpb
S256="threads: 256 rows_per_block: 16 vector_bytes: 16 unroll: 1 row_groups: 8 int8_activations: true"
S512="threads: 512 rows_per_block: 16 vector_bytes: 16 unroll: 1 row_groups: 8 int8_activations: true"
SALL="threads: 256 rows_per_block: 16 vector_bytes: 16 unroll: 1 row_groups: 8 stage_all: true int8_activations: true"
G="NVIDIA H200	132	580	sm_90	matvec"
{
  echo "# kiln tune cache v1: gpu sm_count driver target family dtype rows cols schedule variant status us gbps rel_err date detail"
  printf '%s\tq8_0_planar\t6144\t4096\t%s\t\tok\t9.000\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tq8_0_planar\t6144\t4096\t%s\t\tok\t8.700\t1\t1e-7\td\t-\n' "$G" "$S512"
  printf '%s\tq8_0_planar\t6144\t4096\t%s\t\tfault\t1.000\t1\t1e-7\td\t-\n' "$G" "$SALL"
  printf '%s\tq8_0_planar\t1000\t1000\t%s\t\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tq4_k\t4096\t4096\t%s\t\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$S256"
} > "$T/v1.tsv"
{
  echo "# kiln tune cache v2: gpu sm_count driver target family dtype rows cols schedule variant code status us gbps rel_err date detail"
  printf '%s\tq8_0_planar\t6144\t4096\t%s\t\tc0de\tok\t8.500\t1\t1e-7\td\t-\n' "$G" "$SALL"
  printf '%s\tq8_0_planar\t6144\t4096\t%s\t\tc0de\tok\t8.600\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tq8_0_planar\t4096\t4096\t%s\t\tc0de\tok\t6.000\t1\t1e-7\td\t-\n' "$G" "$S512"
} > "$T/v2.tsv"
gzip -k "$T/v2.tsv"

out=$(python3 "$GC" --type Q8_0 --k 2 --out "$T/gc" "$T/v1.tsv" "$T/v2.tsv.gz")
check "reports the tables written" grep -q "3 tables in $T/gc" <<<"$out"
check "K fastest distinct ok schedules a shape, fastest first" diff <(cut -f1-4 "$T/gc/index.tsv") \
  <(printf 'q8_0_planar4096x4096-0\tq8_0_planar 4096x4096\t6.000\t%s\n' "$S512"
    printf 'q8_0_planar6144x4096-0\tq8_0_planar 6144x4096\t8.500\t%s\n' "$SALL"
    printf 'q8_0_planar6144x4096-1\tq8_0_planar 6144x4096\t8.600\t%s\n' "$S256")
# The schedule 9.0 in v1 and 8.6 in v2 counts at its fastest; the fault's 1.0
# and the shapes without an exact entry (1000x1000) or of another type never.
# (-0 is the shipped entry's own schedule: that table equals the base.)
check "the shipped schedule's table is the base" cmp -s "$TABLE" "$T/gc/q8_0_planar6144x4096-0.txtpb"
changed=$(diff "$TABLE" "$T/gc/q8_0_planar6144x4096-1.txtpb" | grep -c '^>')
check "a table changes one line of the base" test "$changed" = 1
check "that line is the shape's entry with the schedule" \
  grep -qF "  matvec { $S256 }" <(diff "$TABLE" "$T/gc/q8_0_planar6144x4096-1.txtpb")
"$KILNC" synth --preset tiny --type Q8_0 --seed 3 -o "$T/m.gguf" 2>/dev/null
compiles() { "$KILNC" compile "$T/m.gguf" --schedules "$1" -o "$T/m.kiln" > "$T/compile.log" 2>&1; }
check "kilnc compiles with a written table" compiles "$T/gc/q8_0_planar6144x4096-1.txtpb"
check "kilnc's bundle" test -s "$T/m.kiln"
expect_error "a missing cache" "No such file" python3 "$GC" --type Q8_0 --out "$T/x" "$T/none.tsv"
printf 'garbage\n' > "$T/bad.tsv"
expect_error "a line that is not a cache line" "bad.tsv:1: not a kilnc tune cache line" \
  python3 "$GC" --type Q8_0 --out "$T/x" "$T/bad.tsv"
expect_error "nothing of the type" "no cached schedule of a Q4_K_M shape" \
  python3 "$GC" --type Q4_K_M --out "$T/x" "$T/v2.tsv"
expect_error "an unknown type" "invalid choice" python3 "$GC" --type Q5_K --out "$T/x" "$T/v1.tsv"

# gpu_graph_select.sh with stand-ins: kilnc writes its -o file; kiln bench
# prints a depth-0 row whose ms/token is the bundle's line in ms.txt; kiln run
# prints 16 ids, different for bundle a-0's.
mkdir -p "$T/bin" "$T/tables"
cat > "$T/bin/kilnc" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = -o ] && echo bundle > "$2"; shift; done
SH
cat > "$T/bin/kiln" <<'SH'
#!/usr/bin/env bash
n=$(basename "$3" .kiln)
[ "$1" = bench ] && printf '    0  400.0  %s  2.9\n' "$(grep "^$n " "$(dirname "$0")/ms.txt" | cut -d' ' -f2)"
[ "$1" = run ] && { [ "$n" = a-0 ] && echo "1 2 3" || echo "1 2 4"; }
exit 0
SH
printf 'base 2.290\na-0 2.280\na-1 2.300\nb-0 2.295\nc-0 2.289\n' > "$T/bin/ms.txt"
chmod +x "$T/bin/kilnc" "$T/bin/kiln"
touch "$T/tables/a-0.txtpb" "$T/tables/a-1.txtpb" "$T/tables/b-0.txtpb" "$T/tables/c-0.txtpb"
out=$(KILN_BIN_DIR=$T/bin KILN_GRAPH_WORK=$T/w bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables" 2)
check "one line a run, the base first" test "$(grep -c '^r[12] ' <<<"$out")" = 10
check "the base's mean" grep -q "base: 2.2900 ms a token (2 runs)" <<<"$out"
check "a faster winner" grep -Eq "^a +fastest a-0 +2.2800 ms \(-0.0100 against base\) faster" <<<"$out"
check "a slower best" grep -Eq "^b +fastest b-0 +2.2950 ms \(\+0.0050 against base\)$" <<<"$out"
check "a winner's differing tokens" grep -q "a-0: greedy tokens differ from base" <<<"$out"
check "a winner's same tokens" grep -q "c-0: the same 16 greedy tokens as base" <<<"$out"
expect_error "no tables folder" "usage:" bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/nowhere"
expect_error "no binaries" "no kilnc and kiln in" env KILN_BIN_DIR="$T/nobin" \
  bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
