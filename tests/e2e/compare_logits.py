#!/usr/bin/env python3
"""Compares two float32 .npy logits dumps row by row: relative error
||a - b|| / ||b|| per row must stay under a bound. Prints the worst rows.
usage: compare_logits.py A.npy B.npy BOUND [FIRST_ROW [END_ROW]]"""
import sys
import numpy as np

a, b, bound = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
end = int(sys.argv[5]) if len(sys.argv) > 5 else None
if a.shape != b.shape:
    print("shape mismatch: %s vs %s" % (a.shape, b.shape))
    sys.exit(1)
if not np.all(np.isfinite(a)):
    print("non-finite logits in %s" % sys.argv[1])
    sys.exit(1)
err = np.linalg.norm((a - b).astype(np.float64), axis=1) / np.maximum(np.linalg.norm(b.astype(np.float64), axis=1), 1e-30)
err = err[first:end]
worst = int(np.argmax(err))
print("rows %d..%d: max rel err %.3e (row %d), median %.3e, bound %.1e" %
      (first, first + len(err) - 1, err[worst], worst + first, float(np.median(err)), bound))
sys.exit(0 if err[worst] <= bound else 1)
