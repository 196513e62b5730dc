#!/usr/bin/env bash
# Builds the bundle fuzzer (tests/runtime/bundle_fuzz.cc: Bundle::Parse +
# ValidateManifest) with clang++-19, libFuzzer, ASan and UBSan, and its seed
# corpus of valid bundles; with RUNS, also fuzzes that many executions.
#
#   tools/build_bundle_fuzzer.sh [OUT_DIR [RUNS]]
#
# OUT_DIR (default build-bundle/fuzz) receives gen/ (protoc output), obj/,
# bundle_fuzz, make_bundle_seeds, seeds/ and, when fuzzing, corpus/ and
# crash-* files. Abseil and protobuf come from Debian's static archives; they
# are not instrumented, which is fine: the code under test is.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${repo_root}/build-bundle/fuzz}"
runs="${2:-}"
CXX="${KILN_FUZZ_CXX:-clang++-19}"  # not $CXX: the main build's g++ may be set there
LIBDIR=/usr/lib/x86_64-linux-gnu
jobs="${JOBS:-2}"

mkdir -p "${out}/gen/runtime" "${out}/gen.new" "${out}/obj" "${out}/seeds"
# protoc into a scratch folder; the generated files are replaced only when
# they change, so manifest.pb.o is not rebuilt on every run.
protoc --cpp_out="${out}/gen.new" -I "${repo_root}" "${repo_root}/runtime/manifest.proto"
for f in manifest.pb.h manifest.pb.cc; do
  cmp -s "${out}/gen.new/runtime/${f}" "${out}/gen/runtime/${f}" || cp "${out}/gen.new/runtime/${f}" "${out}/gen/runtime/${f}"
done
rm -rf "${out}/gen.new"

cxxflags=(-std=c++20 -g -O1 -fno-omit-frame-pointer
          -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
          -Wall -Wno-unused-parameter -I"${repo_root}" -I"${out}/gen")
# What both programs link (bundle_writer.cc's own dependencies included: a
# source missing here shows up as an undefined reference at the link).
lib_sources=(
  "${out}/gen/runtime/manifest.pb.cc"
  "${repo_root}/runtime/bundle/bundle_format.cc"
  "${repo_root}/runtime/bundle/bundle_reader.cc"
  "${repo_root}/runtime/bundle/expr.cc"
  "${repo_root}/runtime/bundle/validator.cc"
  "${repo_root}/support/mapped_file.cc"
  "${repo_root}/support/write_file.cc"
  "${repo_root}/models/gguf/ggml_type.cc"
  "${repo_root}/compiler/bundle_writer.cc"
  "${repo_root}/tests/runtime/test_manifest.cc"
)
sources=("${lib_sources[@]}"
  "${repo_root}/tests/runtime/bundle_fuzz.cc"
  "${repo_root}/tests/runtime/make_bundle_seeds.cc"
)

# Compile what changed, ${jobs} at a time.
compile() {  # $1: source
  local obj="${out}/obj/$(basename "${1%.cc}").o"
  # Any header it may include (the repository's, the generated manifest's)
  # newer than the object rebuilds it.
  if [[ ! -f "${obj}" || "$1" -nt "${obj}" || -n "$(find "${repo_root}/runtime" "${repo_root}/support" \
        "${repo_root}/models" "${repo_root}/compiler" "${repo_root}/tests/runtime" "${out}/gen" \
        -name '*.h' -newer "${obj}" -print -quit)" ]]; then
    echo "build_bundle_fuzzer: ${CXX} -c $(basename "$1")"
    "${CXX}" "${cxxflags[@]}" -c "$1" -o "${obj}"
  fi
}
pids=()
for src in "${sources[@]}"; do
  compile "${src}" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "${pid}"; done

common=()
for src in "${lib_sources[@]}"; do common+=("${out}/obj/$(basename "${src%.cc}").o"); done
libs=("${LIBDIR}/libprotobuf.a" -Wl,--start-group "${LIBDIR}"/libabsl_*.a -Wl,--end-group
      "${LIBDIR}/libz.a" -lpthread)
"${CXX}" -fsanitize=fuzzer,address,undefined "${common[@]}" "${out}/obj/bundle_fuzz.o" \
  "${libs[@]}" -o "${out}/bundle_fuzz"
"${CXX}" -fsanitize=address,undefined "${common[@]}" "${out}/obj/make_bundle_seeds.o" \
  "${libs[@]}" -o "${out}/make_bundle_seeds"
"${out}/make_bundle_seeds" "${out}/seeds"
echo "build_bundle_fuzzer: built ${out}/bundle_fuzz; seeds in ${out}/seeds"

if [[ -n "${runs}" ]]; then
  mkdir -p "${out}/corpus"
  cp -n "${out}/seeds/"* "${out}/corpus/" 2>/dev/null || true
  cd "${out}"
  ./bundle_fuzz -runs="${runs}" -print_final_stats=1 corpus
fi
