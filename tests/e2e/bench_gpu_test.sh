#!/usr/bin/env bash
# kiln bench and kiln profile on a synthesized tiny model (label gpu): every
# JSON field is there; a greedy decode step costs the host one launch and
# one sync and no copy (the argmax arrives in mapped memory); the kernels per token are the decode plan's launches
# plus the step advance; profile rows add up to the plans; the weight bytes
# per token are `kilnc inspect`'s figure (plus the norm weights that several
# fused kernels each re-read, under 1 %); KV bytes follow the depth; the
# bandwidth probe reads at a plausible rate; the profile's attribution has
# a row per decode kernel.
# usage: bench_gpu_test.sh TYPE
set -euo pipefail
TYPE=$1
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${KILN_BIN_DIR:-$HERE}  # staged GPU runs keep the binaries beside this script
[ -x "$BIN/kilnc" ] && [ -x "$BIN/kiln" ] || { echo "no kilnc/kiln in $BIN (set KILN_BIN_DIR)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BIN/kilnc" synth --preset tiny --type "$TYPE" --seed 7 -o "$W/m.gguf"
"$BIN/kilnc" compile "$W/m.gguf" -o "$W/m.kiln" >/dev/null
"$BIN/kilnc" inspect "$W/m.gguf" > "$W/inspect.txt"
WEIGHTS=$(sed -n 's/.*weight bytes read per decoded token: \([0-9]*\).*/\1/p' "$W/inspect.txt")
KV=$(sed -n 's/.*KV cache bytes per token of context (f16): \([0-9]*\).*/\1/p' "$W/inspect.txt")
FILES=(-b "$W/m.kiln" -m "$W/m.gguf")
"$BIN/kiln" bench "${FILES[@]}" --prompt-lengths 64,300 --depths 0,1024 --steps 32 --json > "$W/bench.json"
"$BIN/kiln" profile "${FILES[@]}" --depth 256 --steps 16 --attribution --json > "$W/profile.json"
# The tables, for the log.
"$BIN/kiln" bench "${FILES[@]}" --prompt-lengths 64 --depths 0 --steps 16
"$BIN/kiln" profile "${FILES[@]}" --steps 8 --attribution
python3 - "$W/bench.json" "$W/profile.json" "$WEIGHTS" "$KV" <<'PY'
import json, sys
bench, prof = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
weights, kv = int(sys.argv[3]), int(sys.argv[4])
bad = []
def check(ok, what):
    if not ok: bad.append(what)
for key in ["gpu", "kernels", "context", "kernels_per_token", "bytes_known", "probe_gb_per_s", "probe_bytes",
            "startup_to_first_token_ms", "ttft_prompt_tokens", "first_ttft_ms", "second_ttft_ms", "decode_ahead",
            "prefill", "decode"]:
    check(key in bench, f"bench json lacks {key}")
check(bench["decode_ahead"] is True, "bench did not time decode with the next step queued ahead")
check(bench["bytes_known"], "the bundle states no bytes read")
check(100 < bench["probe_gb_per_s"] < 20000, f"probe reads {bench['probe_gb_per_s']} GB/s")
check(bench["startup_to_first_token_ms"] > 0, "no startup time")
check(bench["first_ttft_ms"] < 5 * bench["second_ttft_ms"] + 50,
      f"first request {bench['first_ttft_ms']} ms against {bench['second_ttft_ms']} ms: not warm")
check([p["tokens"] for p in bench["prefill"]] == [64, 300], "prefill lengths")
check(all(p["tok_per_s"] > 0 for p in bench["prefill"]), "prefill speed")
check([d["depth"] for d in bench["decode"]] == [0, 1024], "decode depths")
for d in bench["decode"]:
    for key in ["steps", "tok_per_s", "ms_per_token", "kernel_ms_per_token", "kernel_fraction",
                "host_launches_per_token", "host_syncs_per_token", "host_copies_per_token",
                "weight_bytes_per_token", "kv_bytes_per_token", "gb_per_s", "probe_percent"]:
        check(key in d, f"decode json lacks {key}")
    at = f"depth {d['depth']}"
    check(d["host_launches_per_token"] == 1, f"{at}: {d['host_launches_per_token']} host launches per token")
    check(d["host_syncs_per_token"] == 1, f"{at}: {d['host_syncs_per_token']} host syncs per token")
    check(d["host_copies_per_token"] == 0, f"{at}: {d['host_copies_per_token']} host copies per token")
    check(weights <= d["weight_bytes_per_token"] <= weights * 1.01,
          f"{at}: {d['weight_bytes_per_token']} weight bytes per token, kilnc inspect says {weights}")
    # Middle timed position: depth + 4 warm-up + 16, attending to one more.
    check(d["kv_bytes_per_token"] == kv * (d["depth"] + 21), f"{at}: {d['kv_bytes_per_token']} KV bytes per token")
    check(d["tok_per_s"] > 0 and d["gb_per_s"] > 0 and d["probe_percent"] > 0, f"{at}: speeds")
    # Eager per-launch spans against the graph's wall time: on this tiny
    # model each ~5 us span is mostly launch latency the graph does not pay
    # (6.9 seen on an H200 at depth 1024), so the bound only catches a unit
    # error (a factor of 1000), not a slow kernel.
    check(0 < d["kernel_fraction"] < 50, f"{at}: kernel/wall {d['kernel_fraction']}")
for step in ["decode", "prefill"]:
    t = prof[step]
    check(sum(r["count"] for r in t["kernels"]) == t["launches_per_step"], f"profile {step}: counts")
    times = [r["total_ms"] for r in t["kernels"]]
    check(times == sorted(times, reverse=True), f"profile {step}: not sorted by time")
    check(all(r["p50_us"] <= r["p90_us"] <= r["max_us"] for r in t["kernels"]), f"profile {step}: percentiles")
check(bench["kernels_per_token"] == prof["decode"]["launches_per_step"] + 1, "kernels per token")
check(prof["decode"]["steps_profiled"] == 16, "profiled decode steps")
att = prof.get("attribution", {})
rows = att.get("kernels", [])
check(att.get("compiled_ms_per_token", 0) > 0, "attribution: no compiled step time")
check(sum(r["count"] for r in rows) == prof["decode"]["launches_per_step"], "attribution: counts")
check(len(rows) == len({r["name"] for r in prof["decode"]["kernels"]}), "attribution: a row per decode kernel")
check(all(r["swapped_ms_per_token"] > 0 for r in rows), "attribution: swapped step times")
swapped = [r["swapped_ms_per_token"] for r in rows]
check(swapped == sorted(swapped), "attribution: not sorted by what is saved")
print(f"probe {bench['probe_gb_per_s']:.0f} GB/s; decode {bench['decode'][0]['tok_per_s']:.0f} tok/s at depth 0, "
      f"{bench['decode'][1]['tok_per_s']:.0f} at 1024; {bench['kernels_per_token']} kernels per token")
if bad:
    print("FAILED:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("bench and profile OK")
PY
