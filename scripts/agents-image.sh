#!/usr/bin/env bash
# Builds the local images the real-agent docker tests run (tests/real_agents.rs):
# `slipway-agent-claude-code:latest` and `slipway-agent-codex:latest`, each the test
# image `slipway-test:latest` (scripts/docker-setup.sh: sh, bash, git, coreutils)
# plus one agent CLI as scripts/agents-setup.sh installed it, with what it needs to
# run: Claude Code is a native binary; Codex is Node's launcher (`codex.js`) for
# its native binary, so its image also gets the host's `node`. No image can be
# pulled here: like the test image, these are `docker import`ed from host files.
#
#   bash scripts/agents-image.sh [AGENTS_DIR]
#
# Idempotent: an image whose label names the CLI version, this script's version
# and the test image it was built on is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

AGENTS_DIR="${1:-${SLIPWAY_AGENTS_DIR:-$HOME/.cache/slipway/agents}}"
BASE="${SLIPWAY_TEST_IMAGE:-slipway-test:latest}"
# Bump when what goes into the images changes.
SCRIPT_VERSION=1

say() { echo "agents-image: $*"; }
die() { echo "agents-image: error: $*" >&2; exit 1; }

docker image inspect "$BASE" >/dev/null 2>&1 || die "$BASE is missing: run scripts/docker-setup.sh first"

base_id="$(docker image inspect -f '{{.Id}}' "$BASE" | sed 's/^sha256://' | cut -c1-12)"

version_of() { awk -v n="$1" '$1 == n { print $3 }' scripts/agents.txt; }

# Copies a host file to the same absolute path under $root (following symlinks),
# with every library ldd names for it.
copy_with_libs() {
  local src="$1"
  mkdir -p "$root$(dirname "$src")"
  cp -L "$src" "$root$src"
  { ldd "$src" 2>/dev/null || true; } | awk '
    $2 == "=>" && $3 ~ /^\// { print $3 }
    $1 ~ /^\// { print $1 }' | while read -r lib; do
    if [ ! -e "$root$lib" ]; then
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    fi
  done
}

build() {
  local agent="$1" version image label have dir
  version="$(version_of "$agent")"
  [ -n "$version" ] || die "scripts/agents.txt has no $agent"
  image="slipway-agent-$agent:latest"
  label="$version-$SCRIPT_VERSION-$base_id"
  have="$(docker image inspect -f '{{index .Config.Labels "slipway.agent-image.version"}}' "$image" 2>/dev/null || true)"
  if [ "$have" = "$label" ]; then
    say "image $image is up to date"
    return
  fi
  dir="$AGENTS_DIR/$agent-$version"
  [ -f "$dir/.complete" ] || die "$agent $version is not installed in $dir: run scripts/agents-setup.sh"
  say "building $image ($agent $version)"
  work="$(mktemp -d)"
  root="$work/rootfs"
  mkdir -p "$root"
  local cid
  cid="$(docker create "$BASE" /bin/true)"
  docker export "$cid" | tar -C "$root" -x
  docker rm "$cid" >/dev/null
  # The test image's stand-in for Claude Code makes room for the real one.
  rm -f "$root/usr/local/bin/claude"
  mkdir -p "$root/usr/local/bin" "$root/usr/local/lib"
  case "$agent" in
    claude-code)
      local exe
      exe="$(readlink -f "$dir/node_modules/.bin/claude")"
      copy_with_libs "$exe"
      ln -s "$exe" "$root/usr/local/bin/claude"
      ;;
    codex)
      copy_with_libs "$(readlink -f "$(command -v node)")"
      [ -e "$root/usr/bin/node" ] || ln -s "$(readlink -f "$(command -v node)")" "$root/usr/bin/node"
      local lib="$root/usr/local/lib/codex/node_modules/@openai"
      local triple=x86_64-unknown-linux-musl
      mkdir -p "$lib/codex-linux-x64/vendor/$triple"
      cp -a "$dir/node_modules/@openai/codex" "$lib/codex"
      cp -a "$dir/node_modules/@openai/codex-linux-x64/package.json" "$lib/codex-linux-x64/"
      # The CLI and its helpers; the voice and sandbox resources stay out.
      for part in bin codex-path codex-package.json; do
        cp -a "$dir/node_modules/@openai/codex-linux-x64/vendor/$triple/$part" "$lib/codex-linux-x64/vendor/$triple/"
      done
      ln -s ../lib/codex/node_modules/@openai/codex/bin/codex.js "$root/usr/local/bin/codex"
      ;;
    *) die "no image recipe for $agent" ;;
  esac
  local old_id
  old_id="$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)"
  tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL slipway.agent-image.version=$label" \
    --change 'CMD ["/bin/sh"]' \
    "$work/rootfs.tar" "$image" >/dev/null
  if [ -n "$old_id" ]; then docker rmi "$old_id" >/dev/null 2>&1 || true; fi
  say "built $image ($(du -sh "$work/rootfs.tar" | cut -f1))"
  rm -rf "$work"
}

build claude-code
build codex
