#!/usr/bin/env bash
# End-to-end checks of the kilnc commands: the happy paths produce what the
# docs promise, and bad input fails with a clear message and exit code 1..2.
set -uo pipefail
KILNC=$1
SRC=$2
# shellcheck source=../script_checks.sh
source "$SRC/tests/script_checks.sh"

"$KILNC" synth --preset tiny --type Q4_K_M --seed 5 -o "$T/m.gguf" 2>/dev/null
check "synth writes a file" test -s "$T/m.gguf"
check "no temp file left" test ! -e "$T/m.gguf.tmp"
out=$("$KILNC" inspect "$T/m.gguf")
check "inspect shows the config" grep -q "layers 2, embd 256" <<<"$out"
check "inspect shows bytes per token" grep -q "weight bytes read per decoded token" <<<"$out"
check "inspect shows Q6_K tensors" grep -q "Q6_K" <<<"$out"
ids=$("$KILNC" tokenize -m "$T/m.gguf" "the quick brown fox")
check "tokenize prints one line of ids" grep -Eq '^[0-9]+( [0-9]+)*$' <<<"$ids"
json=$("$KILNC" tokenize -m "$T/m.gguf" --json "hi")
check "tokenize --json" grep -q '"ids": \[' <<<"$json"
gen=$("$KILNC" reference -m "$T/m.gguf" --tokens 1,2,3 -n 4 --ignore-eos --dump-logits "$T/l.npy" 2>/dev/null)
check "reference --tokens prints 4 ids" grep -Eq '^[0-9]+ [0-9]+ [0-9]+ [0-9]+$' <<<"$gen"
check "dump-logits writes rows for prompt + generated" python3 -c "
import struct,sys
b=open('$T/l.npy','rb').read(); n=struct.unpack('<H',b[8:10])[0]; h=b[10:10+n].decode()
assert \"'shape': (7, \" in h, h
"
text=$("$KILNC" reference -m "$T/m.gguf" -p "The quick" -n 3 2>/dev/null)
check "reference -p streams text" test -n "$text"

for type in Q8_0 Q4_K_M BF16; do
  "$KILNC" synth --preset tiny --type $type --seed 2 -o "$T/c_$type.gguf" 2>/dev/null
  check "compile $type writes a validated bundle" \
    bash -c "'$KILNC' compile '$T/c_$type.gguf' -o '$T/c_$type.kiln' 2>/dev/null && '$KILNC' inspect '$T/c_$type.kiln' > '$T/c_$type.txt'"
done
check "bundle has load, prefill and decode plans" bash -c "grep -q '^load {' '$T/c_Q8_0.txt' && grep -q '^prefill {' '$T/c_Q8_0.txt' && grep -q '^decode {' '$T/c_Q8_0.txt'"
check "Q8_0 weights are packed at load" grep -q "pack_q8_0" "$T/c_Q8_0.txt"
# A Q4_K_M layer with a Q6_K attn_v cannot pack V with Q and K (attn_qk), so
# its projection is two matvecs: prefill copies them into the qkv rows,
# decode writes them there directly.
check "prefill assembles split q/k/v with copies" \
  bash -c "awk '/^prefill \\{/,/^decode \\{/' '$T/c_Q4_K_M.txt' | grep -q 'copy_rows'"
# Decode runs such a layer's Q4_K q/k and Q6_K V matvecs as one launch
# (kernel matvec_join_q4_k_384x256_q6_kp_128x256), no separate q/k or V
# matvec, reading the bytes of both; --no-matvec-join: two launches, the
# smaller (V) first beside the q/k one (beside_next); and
# --no-concurrent-launches too: none beside another.
# decode_launches F: one line per decode launch, its kernel and 1 if
# beside_next (kernel 0, the text format's default, prints no kernel line).
decode_launches() {
  awk '/^decode \{/ { d = 1 } d && /^  launches \{/ { if (n++) print k, b; k = "kernel-0"; b = 0 }
       d && /^    kernel:/ { k = $NF } d && /beside_next: true/ { b = 1 } END { if (n) print k, b }' "$1"
}
# bytes_read F NAME: the bytes_read of the kernel whose name starts with NAME.
bytes_read() {
  awk -v n="$2" '/^kernels \{/ { k = "" } /^  name: / { k = $2 } /^  bytes_read: / && index(k, "\"" n) == 1 { print $2 }' "$1"
}
decode_launches "$T/c_Q4_K_M.txt" > "$T/c_Q4_K_M.launches"
check "decode joins a split layer's q/k and V projections in one launch" \
  bash -c "grep -q \"matvec_join_q4_k_384x256_q6_kp_128x256_[0-9]*' 0\$\" '$T/c_Q4_K_M.launches' && ! grep -q 'matvec_q6_kp_128x256\\|matvec_q4_k_384x256\\| 1\$' '$T/c_Q4_K_M.launches'"
"$KILNC" compile "$T/c_Q4_K_M.gguf" -o "$T/c_apart.kiln" --no-matvec-join 2>/dev/null
"$KILNC" inspect "$T/c_apart.kiln" > "$T/c_apart.txt"
decode_launches "$T/c_apart.txt" > "$T/c_apart.launches"
check "--no-matvec-join: the V projection beside the q/k projection" \
  bash -c "! grep -q matvec_join '$T/c_apart.txt' && grep -A1 \"matvec_q6_kp_128x256_[0-9]*' 1\$\" '$T/c_apart.launches' | tail -n 1 | grep -q \"matvec_q4_k_384x256_[0-9]*' 0\$\""
JOIN_BYTES=$(bytes_read "$T/c_Q4_K_M.txt" matvec_join_q4_k_384x256_q6_kp_128x256)
PART_BYTES=$(( $(bytes_read "$T/c_apart.txt" matvec_q4_k_384x256) + $(bytes_read "$T/c_apart.txt" matvec_q6_kp_128x256) ))
check "the join reads the bytes of both projections ($JOIN_BYTES = $PART_BYTES)" \
  test "${JOIN_BYTES:-0}" -gt 0 -a "${JOIN_BYTES:-0}" -eq "$PART_BYTES"
check "--no-matvec-join --no-concurrent-launches: no launch beside another" \
  bash -c "'$KILNC' compile '$T/c_Q4_K_M.gguf' -o '$T/c_serial.kiln' --no-matvec-join --no-concurrent-launches 2>/dev/null && '$KILNC' inspect '$T/c_serial.kiln' > '$T/c_serial.txt' && grep -q 'matvec_q6_kp_128x256' '$T/c_serial.txt' && ! grep -q beside_next '$T/c_serial.txt'"
# Its Q6_K matrices are split into planes at load (q6_k_split) and read as
# q6_kp, the tied LM head's too; embed keeps reading the table as stored.
check "Q6_K matrices are packed planar at load" \
  bash -c "awk '/^load \\{/,/^prefill \\{/' '$T/c_Q4_K_M.txt' | grep -q 'pack_q6_k'"
check "decode reads planar Q6_K, the tied LM head included" \
  bash -c "grep -q 'matvec_q6_kp_371x256' '$T/c_Q4_K_M.txt' && ! grep -q 'matvec_q6_k_' '$T/c_Q4_K_M.txt'"
check "embed reads the Q6_K table as stored" grep -q "embed_q6_k_" "$T/c_Q4_K_M.txt"
check "decode needs no q/k/v copies" \
  bash -c "! awk '/^decode \\{/,0' '$T/c_Q4_K_M.txt' | grep -q 'copy_rows'"
check "kernels state the weight and KV bytes they read (kiln bench/profile)" \
  bash -c "grep -q '^  bytes_read: ' '$T/c_Q8_0.txt' && grep -q 'bytes_read_per_position { constant: ' '$T/c_Q8_0.txt'"
"$KILNC" compile "$T/c_Q8_0.gguf" --dump-dir "$T/dump" --stop-after=fuse 2>/dev/null
check "stop-after dumps up to fuse" bash -c "test -s '$T/dump/003-fuse.kir' && test ! -e '$T/dump/004-select-schedules.kir' && test -s '$T/dump/index.tsv'"
"$KILNC" compile "$T/c_Q8_0.gguf" --dump-dir "$T/dump2" --stop-after=fuse 2>/dev/null
check "dumps are byte-identical between runs" diff -r "$T/dump" "$T/dump2" -x index.tsv
expect_error "unknown pass" "no-such-pass" "$KILNC" compile "$T/c_Q8_0.gguf" --stop-after=no-such-pass
expect_error "tune --samples 0" "--samples 0 must be at least 1" "$KILNC" tune -m "$T/c_Q8_0.gguf" --samples 0
expect_error "tune --candidate_timeout 0" "--candidate-timeout 0 must be positive" \
  "$KILNC" tune -m "$T/c_Q8_0.gguf" --candidate_timeout 0s
SCHED=$(cd "$(dirname "$0")/../../schedules" && pwd)
check "--schedules with the shipped sm_90 table gives the same bundle" \
  bash -c "'$KILNC' compile '$T/c_Q8_0.gguf' -o '$T/c_sched.kiln' --schedules '$SCHED/sm_90.txtpb' 2>/dev/null && cmp -s '$T/c_sched.kiln' '$T/c_Q8_0.kiln'"
"$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/c_nopdl.kiln" --no-programmatic-launch 2>/dev/null
"$KILNC" inspect "$T/c_nopdl.kiln" > "$T/c_nopdl.txt"
check "sm_90 kernels launch programmatically by default" grep -q "programmatic_launch: true" "$T/c_Q8_0.txt"
check "--no-programmatic-launch: no programmatic launches" bash -c "! grep -q 'programmatic_launch: true' '$T/c_nopdl.txt'"
check "--no-programmatic-launch: no griddepcontrol in the PTX" bash -c "grep -q 'ld.global' '$T/c_nopdl.kiln' && ! grep -q griddepcontrol '$T/c_nopdl.kiln'"
"$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/c_last.kiln" --prefill-logits last 2>/dev/null
"$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/c_all.kiln" --prefill-logits all 2>/dev/null
"$KILNC" inspect "$T/c_all.kiln" > "$T/c_all.txt"
check "--prefill-logits last is the default" cmp -s "$T/c_last.kiln" "$T/c_Q8_0.kiln"
# The tiny vocabulary is 371 tokens: one f32 row is 1484 bytes.
check "--prefill-logits last: the logits buffer holds one row; all: more" \
  bash -c "grep -A2 'name: \"logits\"' '$T/c_Q8_0.txt' | grep -q 'bytes { constant: 1484 }' && ! grep -A2 'name: \"logits\"' '$T/c_all.txt' | grep -q 'bytes { constant: 1484 }'"
check "--prefill-logits last: prefill runs the decode LM head matvec on one token; all: a GEMM" \
  bash -c "awk '/^prefill \\{/,/^decode \\{/' '$T/c_Q8_0.txt' | grep -q 'matvec_q8_0p_371x256' && ! grep -q 'gemm_q8_0p_371x256' '$T/c_Q8_0.txt' && grep -q 'gemm_q8_0p_371x256' '$T/c_all.txt'"
expect_error "--prefill-logits of an unknown kind" "expected all or last" \
  "$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/x.kiln" --prefill-logits first
expect_error "--schedules for another target" "is not a table for target sm_90" \
  "$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/x.kiln" --schedules "$SCHED/sm_89.txtpb"
expect_error "--schedules that does not exist" "cannot open $T/none.txtpb" \
  "$KILNC" compile "$T/c_Q8_0.gguf" -o "$T/x.kiln" --schedules "$T/none.txtpb"

python3 "$SRC/tests/models/write_foreign_gguf.py" "$T/foreign.gguf"
check "foreign GGUF inspects" bash -c "'$KILNC' inspect '$T/foreign.gguf' | grep -q 'layers 2, embd 128'"
fg=$("$KILNC" reference -m "$T/foreign.gguf" -p "the the" -n 4 --ignore-eos 2>&1)
check "foreign GGUF runs in the reference" grep -q "reference: " <<<"$fg"
check "foreign GGUF tokenizes with its merges" bash -c "[ \"\$('$KILNC' tokenize -m '$T/foreign.gguf' ' the')\" = 258 ]"
# Scaled RoPE (YaRN): the CPU reference runs it, and the compiled kernels
# rotate with the scaled frequencies (their .const table) and magnitude.
python3 "$SRC/tests/models/write_foreign_gguf.py" "$T/yarn.gguf" yarn
check "a YaRN GGUF inspects as YaRN" bash -c "'$KILNC' inspect '$T/yarn.gguf' | grep -q 'YaRN'"
check "a YaRN GGUF runs in the reference" "$KILNC" reference -m "$T/yarn.gguf" -p "the the" -n 4 --ignore-eos \
  --dump-logits "$T/yarn.npy"
"$KILNC" reference -m "$T/foreign.gguf" -p "the the" -n 4 --ignore-eos --dump-logits "$T/plain.npy" > /dev/null 2>&1
check "YaRN changes the reference's logits" bash -c "[ -s '$T/plain.npy' ] && ! cmp -s '$T/yarn.npy' '$T/plain.npy'"
python3 "$SRC/tests/models/write_foreign_gguf.py" "$T/yarn-m.gguf" yarn-magnitude
# ffn_up in F32 beside an F16 ffn_gate: no packed gate/up, so the up
# projection's matvec multiplies by silu(gate) read from the gate's output.
python3 "$SRC/tests/models/write_foreign_gguf.py" "$T/mixed.gguf" mixed
for m in foreign yarn yarn-m mixed; do
  check "$m compiles" bash -c "'$KILNC' compile '$T/$m.gguf' -o '$T/$m.kiln' --dump-dir '$T/dump-$m' > /dev/null"
done
rope_ptx() { ls "$T/dump-$1"/qk_norm_rope_store_*.ptx; }
table() { grep '_inv_freq\[' "$(rope_ptx "$1")" | sed 's/^.*= //'; }
check "YaRN's frequency table differs from plain RoPE's" \
  bash -c "[ -n \"\$(grep '_inv_freq\[' '$(rope_ptx yarn)')\" ] && [ '$(table yarn)' != '$(table foreign)' ]"
# YaRN's magnitude alone (unit factor, no extrapolation mix): the same
# frequencies, cos and sin scaled.
check "YaRN's magnitude alone keeps the frequencies" test "$(table yarn-m)" = "$(table foreign)"
# 1.1f = 0f3F8CCCCD: cos and sin each multiplied by it, in the prefill rope
# kernel and in the decode attention that rotates the new token itself.
for k in qk_norm_rope_store attention_decode; do
  check "YaRN's magnitude alone scales cos and sin ($k)" \
    test "$(cat "$T/dump-yarn-m"/${k}_*.ptx | grep -c '0f3F8CCCCD')" -ge 2
  check "plain RoPE has no magnitude ($k)" test "$(cat "$T/dump-foreign"/${k}_*.ptx | grep -c '0f3F8CCCCD')" -eq 0
done
decode_table() { grep '_inv_freq\[' "$T/dump-$1"/attention_decode_*.ptx | sed 's/^.*= //'; }
check "the decode attention rotates with the prefill kernel's YaRN table" \
  bash -c "[ -n \"\$(grep -h '_inv_freq\[' '$T/dump-yarn'/attention_decode_*.ptx)\" ] && [ '$(decode_table yarn)' = '$(table yarn)' ]"
check "a mixed gate/up compiles an f32 up projection of its own" \
  bash -c "ls '$T/dump-mixed' | grep -q '^matvec_f32_256x128_.*\.ptx' && ! ls '$T/dump-foreign' | grep -q '^matvec_f32'"

expect_error "missing file" "cannot open" "$KILNC" inspect "$T/nope.gguf"
expect_error "a folder as the model" "is not a regular file" "$KILNC" inspect "$T"
head -c 100 "$T/m.gguf" > "$T/trunc.gguf"
expect_error "truncated file" "trunc.gguf" "$KILNC" reference -m "$T/trunc.gguf" -p x
echo "not a gguf at all" > "$T/bad.gguf"
expect_error "bad magic" "magic" "$KILNC" inspect "$T/bad.gguf"
expect_error "unknown preset" "unknown preset" "$KILNC" synth --preset 70b -o "$T/x.gguf"
expect_error "unknown type" "unknown --type" "$KILNC" synth --type Q3_K -o "$T/x.gguf"
expect_error "unknown command" "unknown command" "$KILNC" frobnicate
expect_error "unknown flag" "frob" "$KILNC" inspect --frob "$T/m.gguf"
expect_error "bad token list" "bad token id" "$KILNC" reference -m "$T/m.gguf" --tokens 1,x
expect_error "token out of vocabulary" "outside the vocabulary" "$KILNC" reference -m "$T/m.gguf" --tokens 999999
check "help exits 0" bash -c "'$KILNC' reference --help >/dev/null"

# Usage errors: the command's own flags only, exit 2, the flag named.
exits_with() {  # exits_with <code> <description> <needle> <command...>
  local code=$1 what=$2 needle=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq "$code" ] && grep -qF -- "$needle" <<<"$out"; then
    echo "ok   $what"; passes=$((passes + 1))
  else
    echo "FAIL $what (rc=$rc): $out"; fails=$((fails + 1))
  fi
}
usage_error() { exits_with 2 "$@"; }  # usage_error <description> <needle> <command...>: exit 2
value_error() { exits_with 1 "$@"; }  # value_error <description> <needle> <command...>: a value out of range, exit 1
usage_error "another command's flag" "kilnc inspect: error: unknown flag '--json'" "$KILNC" inspect "$T/m.gguf" --json
usage_error "Abseil's own flags are not ours" "unknown flag '--helpfull'" "$KILNC" compile "$T/m.gguf" --helpfull
usage_error "a bad value" "bad value 'abc' for flag '-s'" "$KILNC" synth -s abc -o "$T/x.gguf"
usage_error "a missing value" "flag '-o' needs a value" "$KILNC" synth -o
usage_error "no output file" "no output file (use -o out.gguf)" "$KILNC" synth --preset tiny
usage_error "an extra argument" "unexpected argument 'extra'" "$KILNC" inspect "$T/m.gguf" extra
usage_error "an empty -o (an unset variable)" "flag '-o' has an empty value" "$KILNC" compile "$T/m.gguf" -o ''
usage_error "a value not among the choices (--type)" "unknown --type 'Q3'" "$KILNC" synth --type Q3 -o "$T/x.gguf"
usage_error "a value not among the choices (--prefill-logits)" "expected all or last" \
  "$KILNC" compile "$T/m.gguf" --prefill-logits some -o "$T/x.kiln"
usage_error "a value not among the choices (--families)" "cannot tune 'gemm'" "$KILNC" tune --families gemm --export "$T/x.txtpb"
usage_error "two texts to tokenize" "expected exactly one text argument" "$KILNC" tokenize -m "$T/m.gguf" a b
usage_error "no prompt" "no prompt (use -p TEXT or --tokens 1,2,3)" "$KILNC" reference -m "$T/m.gguf"
usage_error "a value not among the choices (--target)" "--target: unsupported GPU target 'sm_99'" \
  "$KILNC" compile "$T/m.gguf" --target sm_99
usage_error "a value not among the choices (tune --target)" "--target: unsupported GPU target 'sm_99'" \
  "$KILNC" tune --export "$T/x.txtpb" --target sm_99
usage_error "a value not among the choices (--stop-after)" "--stop-after: no pass named 'bogus'" \
  "$KILNC" compile "$T/m.gguf" --stop-after bogus
usage_error "a value not among the choices (--disable-passes)" "--disable-passes: no pass named 'bogus'" \
  "$KILNC" compile "$T/m.gguf" --disable-passes fuse,bogus
usage_error "a value not among the choices (--preset)" "unknown preset '99b'" "$KILNC" synth --preset 99b -o "$T/x.gguf"
usage_error "token ids that do not parse" "bad token id 'abc' in --tokens" "$KILNC" reference -m "$T/m.gguf" --tokens abc
usage_error "a prompt and token ids" "give either --prompt or --tokens, not both" \
  "$KILNC" reference -m "$T/m.gguf" --tokens 1 -p hi
usage_error "--chat with token ids" "--chat renders a text prompt" "$KILNC" reference -m "$T/m.gguf" --tokens 1 --chat
usage_error "tune-worker takes no argument" "unexpected argument 'extra'" "$KILNC" tune-worker extra
usage_error "tune-worker run by hand" "which are not open here" "$KILNC" tune-worker
value_error "a negative context" "--ctx-size must be >= 0, got -5" "$KILNC" reference -m "$T/m.gguf" -p hi -c -5
value_error "tune --top 0" "--top 0 must be at least 1" "$KILNC" tune --candidates "$T/cands" --top 0
value_error "tune --limit -1, before the model is read" "--limit -1 must not be negative" \
  "$KILNC" tune -m "$T/nope.gguf" --limit -1
value_error "tune --budget -5m" "--budget -5m must not be negative" "$KILNC" tune -m "$T/m.gguf" --budget -5m
value_error "help that cannot be written" "cannot write to standard output" bash -c "'$KILNC' --help > /dev/full"
# Files compile must not turn into a bundle nothing can read (a helper's stress test).
python3 -c "import sys; b=open(sys.argv[1],'rb').read().replace(b'assistant',b'assistan\xff'); open(sys.argv[2],'wb').write(b)" \
  "$T/m.gguf" "$T/badutf8.gguf"
value_error "a vocabulary that is not UTF-8" "is not valid UTF-8" \
  "$KILNC" compile "$T/badutf8.gguf" -o "$T/badutf8.kiln"
check "no bundle from it" test ! -e "$T/badutf8.kiln"
python3 -c "import sys; b=open(sys.argv[1],'rb').read().replace(b'\xc4\xa0 t',b'\xc4\xa0_t',1); open(sys.argv[2],'wb').write(b)" \
  "$T/m.gguf" "$T/badmerge.gguf"
value_error "a merge every other command refuses" "has no space separating its two parts" \
  "$KILNC" compile "$T/badmerge.gguf" -o "$T/badmerge.kiln"
mkfifo "$T/fifo"
value_error "-o a FIFO" "is not a regular file" "$KILNC" compile "$T/m.gguf" -o "$T/fifo"
check "the FIFO is still one" test -p "$T/fifo"
cp "$T/m.gguf" "$T/c.kiln.tmp"
"$KILNC" compile "$T/c.kiln.tmp" -o "$T/c.kiln" 2>/dev/null
check "an input named like a temporary file survives" cmp -s "$T/m.gguf" "$T/c.kiln.tmp"
# reference feeds every generated token but the last: the prompt (3 tokens
# here) and 2 generated fit -c 4; with --dump-logits the last is fed too.
check "reference fits -c exactly" bash -c "'$KILNC' reference -m '$T/m.gguf' -t 1 -p Hello -n 2 -c 4 >/dev/null 2>&1"
value_error "reference says up front when -c is too small" "need 5 positions, more than --ctx-size 4" \
  "$KILNC" reference -m "$T/m.gguf" -t 1 -p Hello -n 2 -c 4 --dump-logits "$T/d4.npy"
value_error "reference -c past the model's context" "exceeds the model's context length" \
  "$KILNC" reference -m "$T/m.gguf" -t 1 -p Hello -n 2 -c 5000
usage_error "--think=false without --chat" "--think=false shapes the chat template" \
  "$KILNC" reference -m "$T/m.gguf" -p hi --think=false
usage_error "-o with --stop-after" "-o would write nothing" "$KILNC" compile "$T/m.gguf" --stop-after fuse -o "$T/s.kiln"
usage_error "tokenize with one argument" "give the model and the text" "$KILNC" tokenize hi
printf 'KILNBNDL\x01junk\n' > "$T/notjson.json"
check "a tokenizer that is not JSON is a one-line error" bash -c "! '$KILNC' synth --preset 0.6b --tokenizer '$T/notjson.json' -o '$T/x.gguf' 2> '$T/nj.err' && test \$(wc -l < '$T/nj.err') -eq 1 && grep -q 'not a JSON object' '$T/nj.err'"
usage_error "a bundle without a pass lowering needs" "--disable-passes fuse: a bundle (-o) needs fuse and plan-buffers" \
  "$KILNC" compile "$T/m.gguf" --disable-passes fuse -o "$T/nofuse.kiln"
usage_error "an empty item in a list" "has an empty item between commas" "$KILNC" reference -m "$T/m.gguf" --tokens 1,,2
check "inspect writes control bytes in names as \\xNN" bash -c "python3 -c \"import sys; b=open(sys.argv[1],'rb').read().replace(b'general.architecture',b'general.architectur\\x1b',1); open(sys.argv[2],'wb').write(b)\" '$T/m.gguf' '$T/esc.gguf' && '$KILNC' inspect '$T/esc.gguf' | grep -qF 'general.architectur\\x1b'"
cp "$T/m.kiln" "$T/bundle.gguf" 2>/dev/null || "$KILNC" compile "$T/m.gguf" -o "$T/bundle.gguf" 2>/dev/null
check "inspect knows a bundle by its magic" bash -c "'$KILNC' inspect '$T/bundle.gguf' | grep -q '^format_version'"
python3 -c "import sys; b=open(sys.argv[1],'rb').read().replace(b'\xc4\xa0 t',b'\xc4\xa0_t',1); open(sys.argv[2],'wb').write(b)" \
  "$T/m.gguf" "$T/badmerge2.gguf"
check "inspect says when the tokenizer cannot be built" \
  bash -c "'$KILNC' inspect '$T/badmerge2.gguf' | grep -q 'tokenizer: tokenizer merge 0'"
# A value starting with '-' is taken as it is: the same logits as the '=' form.
"$KILNC" reference -m "$T/m.gguf" -p "- well-known e-mail" -n 0 --dump-logits "$T/d1.npy" >/dev/null 2>&1
"$KILNC" reference -m "$T/m.gguf" "--prompt=- well-known e-mail" -n 0 --dump-logits "$T/d2.npy" >/dev/null 2>&1
check "a dashed prompt is not rewritten" cmp -s "$T/d1.npy" "$T/d2.npy"
check "the dump left no temp file" test ! -e "$T/d1.npy.tmp"
# Outputs never overwrite inputs.
cp "$T/m.gguf" "$T/in.gguf"
expect_error "compile -o the input" "is the input" "$KILNC" compile "$T/in.gguf" -o "$T/in.gguf"
expect_error "dump-logits over the model" "is the input" "$KILNC" reference -m "$T/in.gguf" -p hi -n 1 --dump-logits "$T/in.gguf"
check "the input survived" cmp -s "$T/m.gguf" "$T/in.gguf"
expect_error "-o into a missing folder, before compiling" "the folder '$T/nodir' does not exist" "$KILNC" compile "$T/m.gguf" -o "$T/nodir/x.kiln"
expect_error "--dump-logits a folder" "is a folder" "$KILNC" reference -m "$T/m.gguf" -p hi -n 1 --dump-logits "$T"
expect_error "a table that is not a regular file" "is not a regular file" "$KILNC" compile "$T/m.gguf" --schedules /dev/zero
: > "$T/empty.txtpb"
expect_error "an empty schedule table" "is empty" "$KILNC" compile "$T/m.gguf" --schedules "$T/empty.txtpb"
expect_error "a bogus target without -o" "unsupported GPU target 'bogus'" "$KILNC" compile "$T/m.gguf" --target bogus
expect_error "threads out of range" "must be 0 (all cores) to 1024, got -3" "$KILNC" synth -t -3 -o "$T/x.gguf"
expect_error "stdout that cannot be written" "cannot write to standard output" bash -c "'$KILNC' inspect '$T/m.gguf' > /dev/full"
check "tokenize --json is valid JSON for split characters" bash -c "'$KILNC' tokenize -m '$T/m.gguf' --json \"\$(printf 'caf\\xc3\\xa9')\" | python3 -c 'import json,sys; json.load(sys.stdin.buffer)'"

finish
