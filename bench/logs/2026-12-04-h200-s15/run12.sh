#!/usr/bin/env bash
# Session 15, call 12 (staged at 9ace44e: usage errors after parsing exit 2):
# the kiln runtime's gpu test only (the command-line and executor cases).
KILN_CALL_TESTS="-R kiln_run_test" KILN_CALL_TEST_TIMEOUT=120 bash tools/gpu_call.sh
