#!/usr/bin/env bash
# Builds the libFuzzer targets with clang++-19 (the main build uses g++, and
# libFuzzer needs clang) and writes their seed corpora.
#
#   tools/build_fuzzers.sh [OUT_DIR]        # default: build-fuzz
#   OUT_DIR/gguf_fuzz -dict=tests/models/gguf/gguf_fuzz.dict -runs=1000000 \
#       OUT_DIR/gguf_corpus
#
# Sources are compiled directly (instrumented); Abseil links statically.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-fuzz}"
cxx="${KILN_FUZZ_CXX:-/usr/bin/clang++-19}"
libdir=/usr/lib/x86_64-linux-gnu

mkdir -p "$out/gguf_corpus"
cd "$root"

common=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$root" -Wall -Wno-unused-parameter)
# The archives are listed in a group so their mutual references resolve
# whatever the order; only the objects actually needed are linked.
absl=(-Wl,--start-group "$libdir"/libabsl_*.a -Wl,--end-group -lpthread)
gguf_srcs=(models/gguf/ggml_type.cc models/gguf/gguf_value.cc models/gguf/gguf_reader.cc
           models/gguf/gguf_writer.cc support/mapped_file.cc support/write_file.cc)

echo "building $out/gguf_fuzz"
"$cxx" "${common[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  tests/models/gguf/gguf_fuzz.cc "${gguf_srcs[@]}" "${absl[@]}" -o "$out/gguf_fuzz"

echo "building $out/gguf_fuzz_seeds and writing $out/gguf_corpus"
"$cxx" "${common[@]}" -fsanitize=address,undefined \
  tests/models/gguf/gguf_fuzz_seeds.cc "${gguf_srcs[@]}" "${absl[@]}" -o "$out/gguf_fuzz_seeds"
"$out/gguf_fuzz_seeds" "$out/gguf_corpus"
