#!/usr/bin/env bash
# Compiles the 8B synthetic models with the kilnc of each given git ref and
# stages the bundles for tools/gpu_ab.sh on the GPU host:
# .gpu/variants/NAME-TYPE.kiln.gz (run after tools/stage_gpu.sh, which
# wipes .gpu/). Each ref is checked out in a scratch worktree that shares
# BUILD's configuration through its own build folder, so the working tree
# and BUILD are left as they are; the models are synthesized once (seed 1,
# the same as gpu_ab.sh's) into $KILN_VARIANT_WORK.
# usage: tools/stage_variants.sh BUILD NAME=REF [NAME=REF ...]
#   e.g. tools/stage_variants.sh build old=HEAD~3 branch=attention-prewait-kv
# On the GPU host, tools/gpu_call.sh unpacks them and runs the A/B:
#   tools/gpu_call.sh "Q8_0 Q4_K_M" old=bundle:%W/old-%T.kiln new=%B/kilnc ...
# env: KILN_VARIANT_TYPES (default "Q8_0 Q4_K_M"), KILN_VARIANT_WORK
#      (default /tmp/kiln-variants: worktrees, their builds, the models)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
BUILD=$1
shift
TYPES=${KILN_VARIANT_TYPES:-Q8_0 Q4_K_M}
WORK=${KILN_VARIANT_WORK:-/tmp/kiln-variants}
OUT=.gpu/variants
mkdir -p "$WORK" "$OUT"
for TYPE in $TYPES; do
  G="$WORK/8b-$TYPE.gguf"
  [ -s "$G" ] || "$BUILD/bin/kilnc" synth --preset 8b --type "$TYPE" --seed 1 -o "$G" > /dev/null
done
for V in "$@"; do
  NAME=${V%%=*} REF=${V#*=}
  [ "$NAME" != "$V" ] || { echo "stage_variants: '$V' is not NAME=REF" >&2; exit 2; }
  SRC="$WORK/src-$NAME" BLD="$WORK/build-$NAME"
  rm -rf "$SRC"
  git worktree prune
  git worktree add --detach -q "$SRC" "$REF"
  # The worktree's third_party/ (git-ignored: the tokenizer) comes from here.
  [ -e third_party ] && ln -sfn "$PWD/third_party" "$SRC/third_party"
  echo "== $NAME ($REF = $(git -C "$SRC" rev-parse --short HEAD)): building kilnc"
  cmake -S "$SRC" -B "$BLD" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$WORK/cmake-$NAME.log" 2>&1 ||
    { tail -20 "$WORK/cmake-$NAME.log"; exit 1; }
  ninja -C "$BLD" kilnc > "$WORK/ninja-$NAME.log" 2>&1 || { tail -20 "$WORK/ninja-$NAME.log"; exit 1; }
  for TYPE in $TYPES; do
    "$BLD/bin/kilnc" compile "$WORK/8b-$TYPE.gguf" -o "$WORK/$NAME-$TYPE.kiln" | tail -1
    gzip -c "$WORK/$NAME-$TYPE.kiln" > "$OUT/$NAME-$TYPE.kiln.gz"
  done
  git worktree remove --force "$SRC"
done
ls -la "$OUT"
