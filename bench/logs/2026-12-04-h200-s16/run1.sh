#!/usr/bin/env bash
# Session 16, call 1 (staged at f1e4f30, the last commit of session 15, which
# no GPU had run): the 22 non-deep gpu tests.
export KILN_CALL_TESTS="-j4 -E deep" KILN_CALL_TEST_TIMEOUT=300
tools/gpu_call.sh
