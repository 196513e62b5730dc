# Sourced by the shell tests (tests/cli, tests/tools): a temporary folder $T
# removed on exit, pass/fail counting and the two kinds of check. End the
# test with `finish`.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
passes=0
check() {  # check <description> <condition command...>
  local what=$1; shift
  if "$@"; then echo "ok   $what"; passes=$((passes + 1)); else echo "FAIL $what"; fails=$((fails + 1)); fi
}
expect_error() {  # expect_error <description> <needle> <command...>: fails with exit 1..127, names the needle, no traceback
  local what=$1 needle=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -ge 1 ] && [ $rc -le 127 ] && grep -qF -- "$needle" <<<"$out" && ! grep -q '^Traceback' <<<"$out"; then
    echo "ok   $what"; passes=$((passes + 1))
  else
    echo "FAIL $what (rc=$rc): $out"; fails=$((fails + 1))
  fi
}
finish() {
  echo "$passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}
