#!/usr/bin/env bash
# kilnc tune --candidates: from several tune caches (v1 and v2 lines), the K
# fastest distinct ok schedules of each shape the base table has an exact
# entry for (of the families and dtypes asked for), each table the base with
# that one entry replaced (and loadable by kilnc); clear errors for bad
# input (graph_candidates_test covers the selection in detail).
# tools/gpu_graph_select.sh, with stand-ins for kilnc and kiln: per shape the
# fastest table against the base, and the greedy-token check of the winners.
set -uo pipefail
KILNC=$1
SRC=$2
# shellcheck source=../script_checks.sh
source "$SRC/tests/script_checks.sh"
# A fixture table: the shipped one with its two planar Q8_0 entries used
# here set to FIX, so a retune of the shipped table does not move the test.
FIX="threads: 128 rows_per_block: 8 vector_bytes: 16 unroll: 1 row_groups: 4"
python3 - "$SRC/schedules/sm_90.txtpb" "$T/base.txtpb" "$FIX" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
for shape in ('6144 max_rows: 6144', '4096 max_rows: 4096 min_cols: 4096'):
    t, n = re.subn(r'(weight_dtype: "q8_0_planar" min_rows: %s[^\n]*\n  )matvec \{[^}]*\}' % shape,
                   lambda m: m.group(1) + 'matvec { %s }' % sys.argv[3], t)
    assert n == 1, shape
open(sys.argv[2], 'w').write(t)
PY
TABLE=$T/base.txtpb
# Schedules as kilnc tune writes them (every field), and S512 also as an
# older cache spelled it (fields at their default left out).
full() {  # full THREADS STAGE_ALL
  echo "threads: $1 rows_per_block: 16 vector_bytes: 16 k_split: 1 max_tokens: 1 unroll: 1 row_groups: 8 stage_all: $2 int8_activations: true row_tiles: 1 stream_stages: 0 release_early: false pipeline_loads: false pipeline_rows: false blocks_per_sm: 1 warp_reduce: false"
}
S256=$(full 256 false) S512=$(full 512 false) SALL=$(full 256 true)
S512_SHORT="threads: 512 rows_per_block: 16 unroll: 1 row_groups: 8 int8_activations: true"
ATT="threads: 128 split_positions: 1280 max_splits: 32 min_split_positions: 32"
ATT_FULL="threads: 128 split_positions: 1280 max_splits: 32 query_block: 64 key_block: 64 min_split_positions: 32 blocks_per_sm: 1 release_after_wait: false stage_keys: false keys_in_flight: 4 value_bytes_in_flight: 64"
G="NVIDIA H200	132	580"
{
  echo "# kiln tune cache v1: gpu sm_count driver target family dtype rows cols schedule variant status us gbps rel_err date detail"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tok\t9.000\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tok\t8.700\t1\t1e-7\td\t-\n' "$G" "$S512_SHORT"
  echo
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tfault\t1.000\t1\t1e-7\td\t-\n' "$G" "$FIX"
  printf '%s\tsm_89\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$FIX"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\tT=4\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$FIX"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t1000\t1000\t%s\t\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tsm_90\tmatvec\tq4_k\t4096\t4096\t%s\t\tok\t1.000\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t4096\t4096\t%s\t\tok\t1.0' "$G" "$FIX"  # cut off mid-write
} > "$T/v1.tsv"
{
  echo "# kiln tune cache v2: gpu sm_count driver target family dtype rows cols schedule variant code status us gbps rel_err date detail"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tc0de\tok\t8.500\t1\t1e-7\td\t-\n' "$G" "$SALL"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tc0de\tok\t8.600\t1\t1e-7\td\t-\n' "$G" "$S256"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t6144\t4096\t%s\t\tc0de\tok\t8.800\t1\t1e-7\td\t-\n' "$G" "$S512"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t4096\t4096\t%s\t\tc0de\tok\t6.000\t1\t1e-7\td\t-\n' "$G" "$S512"
  printf '%s\tsm_90\tattention_decode\tf16\t32\t128\t%s\t\tc0de\tok\t5.000\t1\t1e-7\td\t-\n' "$G" "$ATT"
} > "$T/v2.tsv"

tune() { "$KILNC" tune --base "$TABLE" "$@"; }
out=$(tune --families matvec --dtypes q8_0_planar --top 3 --candidates "$T/gc" --cache "$T/v1.tsv,$T/v2.tsv" 2>&1)
check "reports the tables written" grep -q "wrote 4 candidate tables and index.tsv to $T/gc" <<<"$out"
check "warns of the line cut off mid-write" grep -q "v1.tsv:10: the last line is incomplete" <<<"$out"
# The fault, the sm_89 line, the variant, the shapes without an exact entry
# (1000x1000) or of another dtype and the cut-off line never count; a
# schedule in both caches counts once, at its record in the later one (v2),
# however spelled: S256 at 8.6 (9.0 in v1), S512 at 8.8 (8.7 in v1, short).
check "K fastest distinct ok schedules a shape, fastest first" diff "$T/gc/index.tsv" \
  <(printf 'matvec_q8_0_planar_4096x4096-0\tmatvec q8_0_planar 4096x4096\t6.000\t%s\n' "$S512"
    printf 'matvec_q8_0_planar_6144x4096-0\tmatvec q8_0_planar 6144x4096\t8.500\t%s\n' "$SALL"
    printf 'matvec_q8_0_planar_6144x4096-1\tmatvec q8_0_planar 6144x4096\t8.600\t%s\n' "$S256"
    printf 'matvec_q8_0_planar_6144x4096-2\tmatvec q8_0_planar 6144x4096\t8.800\t%s\n' "$S512")
"$KILNC" synth --preset tiny --type Q8_0 --seed 3 -o "$T/m.gguf" 2>/dev/null
compiles() { "$KILNC" compile "$T/m.gguf" --schedules "$1" -o "$T/m.kiln" > "$T/compile.log" 2>&1; }
check "no attention table unless asked" test ! -e "$T/gc/attention_decode_f16_32x128-0.txtpb"
tune --families attention_decode --candidates "$T/ga" --cache "$T/v2.tsv" 2> /dev/null
check "the decode attention's table with --families" \
  grep -qF "# { $ATT_FULL }" "$T/ga/attention_decode_f16_32x128-0.txtpb"
check "kilnc compiles with the attention's table" compiles "$T/ga/attention_decode_f16_32x128-0.txtpb"
check "only the attention's" test "$(ls "$T/ga" | tr '\n' ' ')" = "attention_decode_f16_32x128-0.txtpb index.tsv "
check "a table says its schedule" grep -qF "# { $S256 }, 8.600 us alone" "$T/gc/matvec_q8_0_planar_6144x4096-1.txtpb"
check "kilnc compiles with a written table" compiles "$T/gc/matvec_q8_0_planar_6144x4096-1.txtpb"
check "kilnc's bundle" test -s "$T/m.kiln"
expect_error "a missing cache" "no cache $T/none.tsv" tune --candidates "$T/x" --cache "$T/none.tsv"
gzip -k "$T/v2.tsv"
expect_error "a gzipped cache" "v2.tsv.gz is gzip-compressed" tune --candidates "$T/x" --cache "$T/v2.tsv.gz"
printf 'garbage\n' > "$T/bad.tsv"
expect_error "a line that is not a cache line" "bad.tsv:1: expected 17 tab-separated fields" \
  tune --candidates "$T/x" --cache "$T/bad.tsv"
sed 's/\t6144\t4096\t/\tsix\t4096\t/' "$T/v2.tsv" > "$T/bad2.tsv"
expect_error "a bad number" "bad2.tsv:2: bad rows field" tune --candidates "$T/x" --cache "$T/bad2.tsv"
sed '3s/threads: 256 rows/thread: 256 rows/' "$T/v2.tsv" > "$T/bad3.tsv"  # S256's line
out=$(tune --families matvec --candidates "$T/x3" --cache "$T/bad3.tsv" 2>&1)
check "a schedule that no longer parses is left out, with a warning" \
  grep -q "left out 1 schedules whose newest result is correct but which no longer parse" <<<"$out"
check "the others are written" test "$(cut -f1 "$T/x3/index.tsv" | tr '\n' ' ')" = \
  "matvec_q8_0_planar_4096x4096-0 matvec_q8_0_planar_6144x4096-0 matvec_q8_0_planar_6144x4096-1 "
expect_error "nothing of the dtypes" "of a shape with an exact entry in the base table (families attention_decode,matvec, dtypes q4_k,q6_k)" \
  tune --dtypes q4_k,q6_k --candidates "$T/x" --cache "$T/v2.tsv"
expect_error "no schedule a shape" "--top 0 must be at least 1" tune --top 0 --candidates "$T/x" --cache "$T/v2.tsv"
expect_error "an unknown family" "cannot tune 'gemm'" tune --families matvec,gemm --candidates "$T/x" --cache "$T/v2.tsv"
expect_error "a base that is no table" "v2.tsv:2:8: Message type" tune --base "$T/v2.tsv" --candidates "$T/x" --cache "$T/v2.tsv"
expect_error "a folder with an earlier run's tables" "not an empty folder" \
  tune --export "$T/early.txtpb" --candidates "$T/gc" --cache "$T/v2.tsv"
check "refused before the export is written" test ! -e "$T/early.txtpb"
expect_error "a file for the folder" "a file, not a folder" tune --candidates "$T/v2.tsv" --cache "$T/v2.tsv"
expect_error "--top without --candidates" "give --candidates DIR" tune --top 3 --export "$T/e.txtpb" --cache "$T/v2.tsv"
expect_error "a base for another target" "the base table is for sm_90, not for sm_89" \
  tune --target sm_89 --candidates "$T/x" --cache "$T/v2.tsv"
# --export and --candidates in one run, over two caches: S512 measured by
# two kilncs (codes a, b), the later cache's newer.
{
  head -1 "$T/v2.tsv"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t4096\t4096\t%s\t\ta\tok\t5.000\t1\t1e-7\td\t-\n' "$G" "$S512"
} > "$T/older.tsv"
{
  head -1 "$T/v2.tsv"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t4096\t4096\t%s\t\tb\twrong\t4.000\t1\t1e-1\td\t-\n' "$G" "$S512"
  printf '%s\tsm_90\tmatvec\tq8_0_planar\t4096\t4096\t%s\t\tb\tok\t6.500\t1\t1e-7\td\t-\n' "$G" "$S256"
} > "$T/newer.tsv"
tune --families matvec --export "$T/both.txtpb" --candidates "$T/both" --cache "$T/older.tsv,$T/newer.tsv" 2> /dev/null
check "the later cache's record of a schedule counts (candidates)" \
  test "$(cut -f1,3 "$T/both/index.tsv" | tr '\t\n' ' ')" = "matvec_q8_0_planar_4096x4096-0 6.500 "
check "the later cache's record of a schedule counts (export)" \
  grep -qF "matvec { $S256 }" <(grep -A1 "q8_0_planar 4096x4096" "$T/both.txtpb")
expect_error "a search with several caches" "one --cache, not a list" \
  tune -m "$T/m.gguf" --candidates "$T/x" --cache "$T/v1.tsv,$T/v2.tsv"

# gpu_graph_select.sh with stand-ins: kilnc writes its -o file; kiln bench
# prints JSON with one decode row at the --depths asked for, its ms/token the
# bundle's line in ms.txt (ms-DEPTH.txt past depth 0); kiln run
# prints the generated ids (3 here), different for bundle a-0's.
mkdir -p "$T/bin" "$T/tables"
cat > "$T/bin/kilnc" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = -o ] && echo bundle > "$2"; shift; done
SH
cat > "$T/bin/kiln" <<'SH'
#!/usr/bin/env bash
n=$(basename "$3" .kiln)
if [ "$1" = bench ]; then  # no line for the bundle: the bench fails
  depth=0
  for ((i = 1; i < $#; ++i)); do [ "${!i}" = --depths ] && { j=$((i + 1)); depth=${!j}; }; done
  table=$(dirname "$0")/ms.txt  # ms-DEPTH.txt from other depths
  [ "$depth" = 0 ] || table=$(dirname "$0")/ms-$depth.txt
  ms=$(grep "^$n " "$table" | cut -d' ' -f2)
  [ -n "$ms" ] || exit 1
  printf '{"probe_gb_per_s": 4500, "decode": [{"depth": %d, "tok_per_s": 400.0, "ms_per_token": %s}]}\n' "$depth" "$ms"
fi
[ "$1" = run ] && { [ "$n" = a-0 ] && echo "1 2 3" || echo "1 2 4"; }
exit 0
SH
printf 'base 2.290\na-0 2.280\na-1 2.300\nb-0 2.295\nc-0 2.289\n' > "$T/bin/ms.txt"
chmod +x "$T/bin/kilnc" "$T/bin/kiln"
touch "$T/tables/a-0.txtpb" "$T/tables/a-1.txtpb" "$T/tables/b-0.txtpb" "$T/tables/c-0.txtpb"
out=$(KILN_BIN_DIR=$T/bin KILN_GRAPH_WORK=$T/w bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables" 2)
check "one line a run, the base first" \
  test "$(grep '^r[12] ' <<<"$out" | awk '{print $1 $2}' | tr '\n' ' ')" = "r1base r1a-0 r1a-1 r1b-0 r1c-0 r2base r2a-0 r2a-1 r2b-0 r2c-0 "
check "the base's mean" grep -q "base: 2.2900 ms a token (2 runs)" <<<"$out"
check "a faster winner" grep -Eq "^a +fastest a-0 +2.2800 ms \(-0.0100 against base\) faster" <<<"$out"
check "a slower best" grep -Eq "^b +fastest b-0 +2.2950 ms \(\+0.0050 against base\)$" <<<"$out"
check "a winner's differing tokens" grep -q "a-0: greedy tokens differ from base" <<<"$out"
check "a winner's same tokens" grep -q "c-0: the same 16 greedy tokens as base" <<<"$out"
printf 'base 3.000\na-0 3.100\na-1 3.100\nb-0 3.100\nc-0 3.100\n' > "$T/bin/ms-4096.txt"
out=$(KILN_BIN_DIR=$T/bin KILN_GRAPH_WORK=$T/w KILN_GRAPH_DEPTH=4096 bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables" 1)
check "the steps from another depth" grep -q "base: 3.0000 ms a token (1 runs)" <<<"$out"
expect_error "no tables folder" "usage:" bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/nowhere"
mkdir -p "$T/empty"
expect_error "no tables in the folder" "no .txtpb tables in" \
  env KILN_BIN_DIR="$T/bin" KILN_GRAPH_WORK="$T/w" bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/empty"
printf 'a-0 2.280\n' > "$T/bin/ms.txt"  # the base bundle's bench fails
expect_error "no base time" "nothing to compare" \
  env KILN_BIN_DIR="$T/bin" KILN_GRAPH_WORK="$T/w" bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables" 1
expect_error "no binaries" "no kilnc and kiln in" env KILN_BIN_DIR="$T/nobin" \
  bash "$SRC/tools/gpu_graph_select.sh" Q8_0 "$T/tables"

finish
