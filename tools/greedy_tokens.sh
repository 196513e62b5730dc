# Sourced by tools/gpu_ab.sh and tools/gpu_graph_select.sh: the fixed
# 16-token prompt whose 16 greedy tokens two bundles of one model must agree
# on (a schedule or kernel change reorders arithmetic only), and the run.
GREEDY_PROMPT=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
# greedy_tokens KILN BUNDLE MODEL [kiln run arguments...]: the 16 tokens on
# stdout, kiln's stderr left to the caller; stopped after GREEDY_TIMEOUT
# seconds (default 120).
greedy_tokens() {
  local kiln=$1 bundle=$2 model=$3
  shift 3
  timeout "${GREEDY_TIMEOUT:-120}" "$kiln" run -b "$bundle" -m "$model" --tokens "$GREEDY_PROMPT" -n 16 --ignore-eos -c 256 "$@"
}
