#!/usr/bin/env bash
# Installs the agent CLIs of scripts/agents.txt from npm at their pinned versions,
# for the real-agent tests (tests/real_agents.rs), and builds the local image
# `slipway-agents:latest` (Node, Claude Code and Codex) for their docker tests.
#
# Idempotent and cached: each CLI goes to its own folder
# $SLIPWAY_AGENTS_DIR/<name>-<version> (default ~/.cache/slipway/agents) and is
# installed only when that folder is not complete yet. Needs node >= 20.6 and npm;
# only the npm registry is contacted, and only for a CLI not yet installed.
#
#   bash scripts/agents-setup.sh            # every CLI, then the image
#   bash scripts/agents-setup.sh --no-image # the CLIs only
set -euo pipefail
cd "$(dirname "$0")/.."

AGENTS_DIR="${SLIPWAY_AGENTS_DIR:-$HOME/.cache/slipway/agents}"
say() { echo "agents-setup: $*"; }
die() { echo "agents-setup: error: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || die "node is required (Node.js >= 20.6)"
command -v npm >/dev/null 2>&1 || die "npm is required"
node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=6)?0:1)' \
  || die "node $(node --version) is too old: Pi needs >= 20.6"

mkdir -p "$AGENTS_DIR"
while read -r name package version program; do
  case "$name" in ''|'#'*) continue ;; esac
  dir="$AGENTS_DIR/$name-$version"
  if [ -f "$dir/.complete" ] && [ -x "$dir/node_modules/.bin/$program" ]; then
    say "$name $version is installed"
    continue
  fi
  say "installing $package@$version into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  # The native binaries arrive as optional dependencies; a failed install leaves
  # no .complete marker, so the next run starts over.
  npm install --no-fund --no-audit --no-update-notifier --loglevel=error \
    --prefix "$dir" "$package@$version" >/dev/null \
    || die "npm could not install $package@$version"
  [ -x "$dir/node_modules/.bin/$program" ] || die "$package@$version has no $program program"
  touch "$dir/.complete"
done < scripts/agents.txt

if [ "${1:-}" != --no-image ]; then
  bash scripts/agents-image.sh "$AGENTS_DIR"
fi
