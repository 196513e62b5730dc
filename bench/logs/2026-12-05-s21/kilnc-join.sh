#!/usr/bin/env bash
# The staged kilnc with --matvec-join added to `compile`: the "join" variant
# of join-ab.sh (a Q4_K_M layer's q/k and v projections as one launch).
K=${KILN_BIN_DIR:-/tmp/kiln-gpu/pkg/bin}/kilnc
if [ "${1:-}" = compile ]; then
  shift
  exec "$K" compile "$@" --matvec-join
fi
exec "$K" "$@"
