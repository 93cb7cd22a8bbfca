#!/usr/bin/env bash
# Podman as a third engine, through its Docker-compatible API on a Unix
# socket (README "Scaling out"). Installs Debian's podman and catatonit (the
# init Podman gives a container that asks for one), and starts
# `podman system service` as root with default ulimits this machine allows
# (Podman's own defaults, nofile and nproc at 1048576 and the host maximum,
# are refused here by the kernel: "error setting rlimit type 7"). Copies the
# test image in from the first engine. Idempotent; run as root after
# scripts/docker-setup.sh.
#
#   SLIPWAY_PODMAN_SOCKET   the socket (default /run/slipway-podman.sock)
set -euo pipefail
SOCKET="${SLIPWAY_PODMAN_SOCKET:-/run/slipway-podman.sock}"
IMAGE=slipway-test:latest
BASE=/var/lib/slipway-podman
say() { echo "podman-setup: $*"; }
die() { echo "podman-setup: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (the service is rootful)"

if ! command -v podman >/dev/null 2>&1 || [ ! -x /usr/libexec/podman/catatonit ]; then
  say "installing podman and catatonit"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman catatonit >/dev/null
fi
mkdir -p "$BASE"
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n' > "$BASE/containers.conf"
ping() { curl -sf --max-time 5 --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1; }
if ! ping; then
  rm -f "$SOCKET"
  say "starting podman system service on unix://$SOCKET (log: $BASE/service.log)"
  CONTAINERS_CONF="$BASE/containers.conf" setsid podman system service --time=0 "unix://$SOCKET" \
    >"$BASE/service.log" 2>&1 </dev/null &
  for _ in $(seq 60); do ping && break; sleep 0.5; done
  ping || { tail -20 "$BASE/service.log" >&2; die "podman's API did not answer within 30 s"; }
fi
if ! podman image exists "localhost/$IMAGE"; then
  docker image inspect "$IMAGE" >/dev/null 2>&1 || die "$IMAGE is missing on the first engine: run scripts/docker-setup.sh"
  say "copying $IMAGE to podman"
  docker save "$IMAGE" | podman load >/dev/null
fi
say "podman ready at unix://$SOCKET with $IMAGE"
