#!/usr/bin/env bash
# The staged kilnc with --matvec-join added to `compile`: the "join" variant
# of join-ab.sh (a Q4_K_M layer's q/k and v projections as one launch), as
# it ran in session 21 call 1 at 5dcb4f4. The join is the default since; the
# flag is gone (--no-matvec-join turns it off).
K=${KILN_BIN_DIR:-/tmp/kiln-gpu/pkg/bin}/kilnc
if [ "${1:-}" = compile ]; then
  shift
  exec "$K" compile "$@" --matvec-join
fi
exec "$K" "$@"
