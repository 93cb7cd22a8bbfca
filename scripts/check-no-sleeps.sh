#!/usr/bin/env bash
# Fails when test code waits by the clock: `sleep`, `from_millis`, `setTimeout`
# or a fixed `collect_for` window, where a test should wait on the event itself
# (a file, a record state, a notification) with a generous deadline, and decide
# "it did not happen" by a later event that proves the window closed.
#
# A line may keep one of them when it says why on the line itself, after the
# marker `allow-sleep:` (an agent that must stall on purpose, the poll interval
# of a helper that waits for an event, a simulated model's answer time).
# scripts/test.sh runs this; it prints every exception it allowed, so the list
# stays short and in view.
set -euo pipefail
cd "$(dirname "$0")/.."

# Test functions another change is rewriting: their lines are not judged until
# it lands. Each entry names the function and who rewrites it.
#   a_run_that_ended_while_no_sidecar_was_up_is_reported_exactly_once: issue 21 ("News")
skip_functions=(a_run_that_ended_while_no_sidecar_was_up_is_reported_exactly_once)

# `sleep` as a word, also right after a `\n` or `\t` inside a string literal.
pattern='(^|[^A-Za-z_]|[\\][nt])sleep([^A-Za-z_]|$)|from_millis|setTimeout|[.]collect_for[(]'

mapfile -t files < <(
  # A pathspec's `*` matches across folders: these are every file below.
  git ls-files --cached --others --exclude-standard -- \
    'tests/*.rs' 'tests/*.lua' 'tests/*.sh' \
    'editors/vscode/test/*.ts' 'editors/vscode/e2e/*.ts' |
    grep -v -e '^tests/fixtures/' -e '/node_modules/' | sort -u
)
[ "${#files[@]}" -gt 0 ] || { echo "check-no-sleeps: no test files found" >&2; exit 1; }

skips="$(IFS='|'; echo "${skip_functions[*]}")"
# Prints FILE:LINE:TEXT for every line that matches, outside the skipped
# functions (from `fn NAME(` to the next line that is a lone `}`).
awk -v pattern="$pattern" -v skips="$skips" '
  FNR == 1 { skipping = 0 }
  {
    if (skips != "" && match($0, "fn (" skips ")\\(")) skipping = 1
    if (!skipping && $0 ~ pattern) printf "%s:%d:%s\n", FILENAME, FNR, $0
    if (skipping && $0 ~ /^}/) skipping = 0
  }
' "${files[@]}" >"${TMPDIR:-/tmp}/check-no-sleeps.$$" || true
found="${TMPDIR:-/tmp}/check-no-sleeps.$$"
trap 'rm -f "$found"' EXIT

allowed="$(grep -c 'allow-sleep: ..' "$found" || true)"
bad="$(grep -v 'allow-sleep: ..' "$found" || true)"
echo "check-no-sleeps: ${#files[@]} test files, $allowed commented exceptions:"
grep 'allow-sleep: ..' "$found" | sed -E 's/^([^:]+:[0-9]+):.*allow-sleep: */  \1: /' || true
if [ -n "$bad" ]; then
  echo "check-no-sleeps: waits by the clock in test code (wait on the event, or say why with 'allow-sleep: <reason>' on the line):" >&2
  echo "$bad" >&2
  exit 1
fi
