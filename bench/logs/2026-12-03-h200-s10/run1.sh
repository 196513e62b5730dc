#!/usr/bin/env bash
# Session 10, call 1 (call1/): session 9's prepared next-call.sh, run
# unchanged (its header says what it stages and runs). Carry [".gpu",
# "third_party"].
exec bash bench/logs/2026-12-03-h200-s9/next-call.sh
