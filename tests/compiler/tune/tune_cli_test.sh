#!/usr/bin/env bash
# kilnc tune end to end (docs/tuning.md) on the tiny synthetic model, with
# the test hook's faulting (out-of-bounds store) and hanging kernels among
# the real candidates, sent through the same worker path: the search must
# finish, record both with their reason, restart the worker, pick correct
# winners, resume from its cache (also after an interrupted write), export
# a TUNED table, and honour --budget; results of another codegen (other PTX
# digests) are measured again, and a cache of the first format still reads.
# usage: tune_cli_test.sh KILNC fake|gpu   (fake: the worker fakes the GPU,
# a CPU test of the isolation path; gpu: the real device, label gpu)
set -euo pipefail
KILNC=$1 MODE=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; for f in "$W"/*.txt "$W"/c.tsv; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done; exit 1; }
EXTRA=(--candidate_timeout 3s)
[ "$MODE" = fake ] && EXTRA+=(--fake_device)
[ "$MODE" = gpu ] && EXTRA=(--candidate_timeout 20s)
"$KILNC" synth --preset tiny --type Q8_0 --seed 3 -o "$W/m.gguf" > /dev/null 2>&1
tune() { "$KILNC" tune -m "$W/m.gguf" --families matvec,attention --limit 4 "${EXTRA[@]}" "$@"; }

# 1. The search, with the synthetic candidates injected into the first shape.
tune --cache "$W/c.tsv" --inject_test_candidates --export "$W/t.txtpb" > "$W/out1.txt" 2> "$W/err1.txt" \
  || fail "the search failed"
# Fields after the schedule: variant, code (the PTX's digest), status.
grep -qP '\ttest_fault\t[0-9a-f]{16}\tfault\t' "$W/c.tsv" || fail "the faulting candidate is not recorded as a fault"
grep -qP '\ttest_hang\t[0-9a-f]{16}\ttimeout\t.*the worker was killed' "$W/c.tsv" \
  || fail "the hanging candidate is not a timeout"
grep -q "1 faults, 1 timeouts, 2 worker restarts" "$W/out1.txt" || fail "expected 1 fault, 1 timeout, 2 restarts"
! grep -q "no correct candidate" "$W/out1.txt" || fail "a shape has no correct winner"
# The real candidates after the fault and the hang ran: 4 correct ones per shape.
[ "$(grep -cP '\t\t[0-9a-f]{16}\tok\t' "$W/c.tsv")" -eq $((4 * ($(wc -l < "$W/out1.txt") - 2))) ] \
  || fail "not every real candidate ran and passed"
# 2. The export: tuned on this GPU, one entry per shape, never a synthetic one.
grep -q "source: TUNED" "$W/t.txtpb" || fail "the table is not TUNED"
GPU=$(cut -f1 "$W/c.tsv" | grep -v '^#' | head -1)
grep -q "gpu: \"$GPU\"" "$W/t.txtpb" || fail "the table does not name the GPU '$GPU'"
grep -q "sm_count: " "$W/t.txtpb" && grep -q "date: \"20" "$W/t.txtpb" && grep -q "driver: " "$W/t.txtpb" \
  || fail "the table lacks SM count, date or driver"
SHAPES=$(($(wc -l < "$W/out1.txt") - 2))
# Count the tuned section only: the shipped table has exact-shape entries too.
TUNED=$(sed -n '/^# ---- tuned ----/,/^# ---- from the shipped table ----/p' "$W/t.txtpb" |
  grep -c '^entries .*min_rows: \([0-9]*\) max_rows: \1 min_cols: \([0-9]*\) max_cols: \2 ') || true
[ "$TUNED" -eq "$SHAPES" ] || fail "$TUNED exact-shape entries for $SHAPES shapes"
grep -q 'family: "matvec" matvec' "$W/t.txtpb" || fail "the shipped catch-all entries are missing"
# Every exported winner is a correct, real candidate of the cache.
grep '^# matvec\|^# attention' "$W/t.txtpb" > /dev/null || fail "no measured comments"
# 3. Resume: nothing is measured again.
tune --cache "$W/c.tsv" --inject_test_candidates > "$W/out2.txt" 2> "$W/err2.txt" || fail "the resumed search failed"
grep -q " 0 measured now" "$W/out2.txt" || fail "the resumed search measured again"
# 4. An interrupted write: half a last line is dropped with a warning and measured again.
head -c -25 "$W/c.tsv" > "$W/cut.tsv"
tune --cache "$W/cut.tsv" --inject_test_candidates > "$W/out3.txt" 2> "$W/err3.txt" || fail "the search after a cut failed"
grep -q "incomplete" "$W/err3.txt" || fail "no warning about the incomplete line"
grep -q " 1 measured now" "$W/out3.txt" || fail "the cut candidate was not measured again"
[ "$(tail -c 1 "$W/cut.tsv" | od -An -c | tr -d ' ')" = '\n' ] || fail "the cache does not end with a newline"
# 5. Export alone, from the cache, gives the same entries.
"$KILNC" tune --export "$W/t2.txtpb" --cache "$W/c.tsv" 2> "$W/err4.txt" || fail "export-only failed"
diff <(grep '^entries' "$W/t.txtpb") <(grep '^entries' "$W/t2.txtpb") > /dev/null || fail "export-only differs"
# 6. A spent budget starts nothing.
tune --cache "$W/b.tsv" --budget 0s > "$W/out5.txt" 2> "$W/err5.txt" || fail "the budget run failed"
grep -q " 0 measured now.*the budget ran out" "$W/out5.txt" || fail "the budget was not honoured"
# 7. Results of another codegen (other PTX digests, as after a kilnc
# change) are measured again, and an export right after the search keeps
# this kilnc's; a cache of the first format (no code column) reads.
# The old results are made the fastest (0.001 us), so an export that used
# them would show it.
awk -F'\t' -v OFS='\t' '/^#/ {print; next} {$11 = "00000000deadbeef"; $13 = "0.001"; print}' "$W/c.tsv" > "$W/old.tsv"
tune --cache "$W/old.tsv" --export "$W/t3.txtpb" > "$W/out6.txt" 2> "$W/err6.txt" || fail "the search over an old cache failed"
grep -qE "^([0-9]+) candidates: 0 from the cache, \1 measured now" "$W/out6.txt" \
  || fail "results of another codegen were reused"
grep -q "source: TUNED" "$W/t3.txtpb" || fail "no export after the codegen change"
! grep -q ": 0.00 us" "$W/t3.txtpb" || fail "the export took a result of another codegen"
grep -q "left out [0-9]* results of the searched shapes that another kilnc's code measured" "$W/err6.txt" \
  || fail "the export does not say it left the other codegen's results out"
# Alone, the export takes each schedule's newest line and says there were several codes.
"$KILNC" tune --export "$W/t5.txtpb" --cache "$W/old.tsv" 2> "$W/err10.txt" || fail "export-only of a mixed cache failed"
grep -q "schedules have results of several codes" "$W/err10.txt" || fail "export-only does not warn of several codes"
! grep -q ": 0.00 us" "$W/t5.txtpb" || fail "export-only took an older line of a schedule"
sed -E 's/\t[0-9a-f]{16}\t(ok|wrong|fault|timeout|rejected|error)\t/\t\1\t/; s/cache v2: (.*) code /cache v1: \1 /' \
  "$W/c.tsv" > "$W/v1.tsv"
"$KILNC" tune --export "$W/t4.txtpb" --cache "$W/v1.tsv" 2> "$W/err7.txt" || fail "a v1 cache does not export"
diff <(grep '^entries' "$W/t.txtpb") <(grep '^entries' "$W/t4.txtpb") > /dev/null || fail "the v1 cache exports otherwise"
# A search over the v1 cache measures everything (its records have no
# code); what it appends (v2 lines under the v1 header) resumes.
tune --cache "$W/v1.tsv" > "$W/out8.txt" 2> "$W/err8.txt" || fail "a search over a v1 cache failed"
grep -qE "^([0-9]+) candidates: 0 from the cache, \1 measured now" "$W/out8.txt" || fail "a v1 cache's results were reused"
tune --cache "$W/v1.tsv" > "$W/out9.txt" 2> "$W/err9.txt" || fail "a search over a mixed cache failed"
grep -q " 0 measured now" "$W/out9.txt" || fail "the results appended to a v1 cache do not resume"
# 8. --candidates after a search: the searched shapes at this kilnc's codes
# only, over the export's exact entries; its folder is checked before the
# search. In mixed.tsv another codegen's 0.001-us results are each
# schedule's newest, so only the codes keep them out.
{ cat "$W/c.tsv"; awk -F'\t' '$11 == "00000000deadbeef"' "$W/old.tsv"; } > "$W/mixed.tsv"
tune --cache "$W/mixed.tsv" --base "$W/t.txtpb" --candidates "$W/cand" > "$W/out11.txt" 2> "$W/err11.txt" \
  || fail "a search with --candidates failed: $(tail -1 "$W/err11.txt")"
[ "$(grep -c . "$W/cand/index.tsv")" -ge "$SHAPES" ] || fail "fewer candidate tables than shapes"
! cut -f3 "$W/cand/index.tsv" | grep -qx "0.001" || fail "--candidates took a result of another codegen"
if tune --cache "$W/mixed.tsv" --base "$W/t.txtpb" --candidates "$W/cand" > "$W/out12.txt" 2> "$W/err12.txt"; then
  fail "a non-empty --candidates folder was taken"
fi
grep -q "not an empty folder" "$W/err12.txt" || fail "no error for a non-empty --candidates folder"
[ ! -s "$W/out12.txt" ] || fail "the search ran before --candidates' folder was checked"
echo "tune $MODE: ok ($SHAPES shapes; fault and hang recorded; resumed; exported; candidates)"
