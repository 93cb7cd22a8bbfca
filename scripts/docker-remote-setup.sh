#!/usr/bin/env bash
# A second Docker engine that stands in for a remote one: it listens on
# loopback TCP with its own data and exec roots (DESIGN.md §6), and gets the
# test image from the first engine (no pulls). Idempotent; run as root after
# scripts/docker-setup.sh.
#
#   SLIPWAY_REMOTE_DOCKER_PORT   port on 127.0.0.1 (default 23750)
set -euo pipefail
PORT="${SLIPWAY_REMOTE_DOCKER_PORT:-23750}"
IMAGE=slipway-test:latest
BASE=/var/lib/slipway-docker-remote
REMOTE="tcp://127.0.0.1:$PORT"
say() { echo "docker-remote-setup: $*"; }
die() { echo "docker-remote-setup: error: $*" >&2; exit 1; }

if ! DOCKER_HOST="$REMOTE" docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || die "only root can start the second dockerd"
  mkdir -p "$BASE/data" "$BASE/exec"
  pidfile="$BASE/dockerd.pid"
  if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then rm -f "$pidfile"; fi
  rm -f "$BASE/exec/containerd/containerd.pid" 2>/dev/null || true
  say "starting a second dockerd on $REMOTE (log: $BASE/dockerd.log)"
  setsid dockerd -H "$REMOTE" --data-root "$BASE/data" --exec-root "$BASE/exec" \
    --pidfile "$pidfile" --storage-driver=vfs --bridge=none --iptables=false --ip6tables=false \
    >"$BASE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 120); do
    DOCKER_HOST="$REMOTE" docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  DOCKER_HOST="$REMOTE" docker info >/dev/null 2>&1 || { tail -20 "$BASE/dockerd.log" >&2; die "the second dockerd did not answer within 60 s"; }
fi
want="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null)" || die "$IMAGE is missing on the first engine: run scripts/docker-setup.sh"
have="$(DOCKER_HOST="$REMOTE" docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
  say "copying $IMAGE to the second engine"
  docker save "$IMAGE" | DOCKER_HOST="$REMOTE" docker load >/dev/null
fi
say "second engine ready at $REMOTE with $IMAGE"
