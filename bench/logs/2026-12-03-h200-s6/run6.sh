#!/usr/bin/env bash
# Session 6, GPU call 6 (.gpu/ staged at 18ff3dc, the session's last code and
# shipped table): the 22 non-deep gpu tests, nothing else.
KILN_CALL_TEST_TIMEOUT=170 bash tools/gpu_call.sh
