# Sourced by the whole-model GPU tests (model_gpu_test.sh,
# foreign_gpu_test.sh): the check they share.
#
# check_vs_reference GGUF TOKENS NPROMPT CTX BOUND
#   Compiles GGUF with --prefill-logits all into $W/m.kiln, runs it with kiln
#   on the prompt TOKENS (NPROMPT comma-separated ids) for 32 greedy steps
#   in a context of CTX, and compares with the CPU reference (fp16 KV cache
#   like the GPU): every logits row within BOUND (all rows, then the decode
#   rows alone), and the greedy tokens. Needs $BIN (kilnc, kiln), $HERE
#   (compare_logits.py) and the work folder $W; leaves $W/m.kiln,
#   $W/gpu.{txt,npy} and $W/cpu.{txt,npy} for the caller's further checks.
#   Exits 1 on a mismatch.
check_vs_reference() {
  local gguf=$1 tokens=$2 nprompt=$3 ctx=$4 bound=$5
  "$BIN/kilnc" compile "$gguf" -o "$W/m.kiln" --prefill-logits all >/dev/null
  "$BIN/kiln" run -b "$W/m.kiln" -m "$gguf" --tokens "$tokens" -n 32 --ignore-eos -c "$ctx" \
    --dump-logits "$W/gpu.npy" > "$W/gpu.txt"
  # Logits: the reference fed exactly the tokens the GPU saw (prompt and the
  # GPU's own greedy tokens), so a near-tie that flips one token cannot make
  # the rest of the comparison meaningless.
  local gen
  gen=$(tail -n 1 "$W/gpu.txt" | tr ' ' ',')
  "$BIN/kilnc" reference -m "$gguf" --tokens "$tokens,$gen" -n 0 -c "$ctx" --kv-f16 \
    --dump-logits "$W/cpu.npy" > /dev/null 2>&1
  # Greedy tokens: the reference's own generation from the prompt.
  "$BIN/kilnc" reference -m "$gguf" --tokens "$tokens" -n 32 --ignore-eos -c "$ctx" --kv-f16 \
    > "$W/cpu.txt" 2>/dev/null
  python3 "$HERE/compare_logits.py" "$W/gpu.npy" "$W/cpu.npy" "$bound"
  python3 "$HERE/compare_logits.py" "$W/gpu.npy" "$W/cpu.npy" "$bound" "$nprompt"
  if ! diff <(tail -n 1 "$W/gpu.txt") <(tail -n 1 "$W/cpu.txt"); then
    echo "greedy tokens differ from the CPU reference"
    exit 1
  fi
  echo "greedy tokens identical over 32 steps"
}
