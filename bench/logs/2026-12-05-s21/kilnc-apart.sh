#!/usr/bin/env bash
# The staged kilnc with --no-matvec-join added to `compile`: the "apart"
# variant of join-ab.sh (a Q4_K_M layer's q/k and v projections as two
# launches side by side, as before session 21).
K=${KILN_BIN_DIR:-/tmp/kiln-gpu/pkg/bin}/kilnc
if [ "${1:-}" = compile ]; then
  shift
  exec "$K" compile "$@" --no-matvec-join
fi
exec "$K" "$@"
