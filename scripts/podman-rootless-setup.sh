#!/usr/bin/env bash
# Rootless Podman as a user runs it on their own machine: a user of its own
# (slipway-rootless, with subordinate ids from /etc/subuid), whose
# `podman system service` serves the Docker-compatible API on a socket in
# its runtime dir, with the test image copied into that user's storage.
# tests/rootless_podman.rs runs slipway as that user against it. Idempotent;
# run as root after scripts/podman-setup.sh (which installs podman).
#
#   SLIPWAY_ROOTLESS_USER   the user (default slipway-rootless)
set -euo pipefail
NAME="${SLIPWAY_ROOTLESS_USER:-slipway-rootless}"
IMAGE=slipway-test:latest
say() { echo "podman-rootless-setup: $*"; }
die() { echo "podman-rootless-setup: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it creates the user and starts the service as that user)"

# newuidmap/newgidmap map the subordinate ids; slirp4netns is the network of
# a rootless container; fuse-overlayfs its storage where the kernel's
# overlayfs refuses an unprivileged mount.
missing=()
for tool in podman newuidmap slirp4netns fuse-overlayfs; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing podman uidmap slirp4netns fuse-overlayfs (missing: ${missing[*]})"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman uidmap slirp4netns fuse-overlayfs >/dev/null
fi
if ! id "$NAME" >/dev/null 2>&1; then
  say "creating the user $NAME"
  useradd --create-home --shell /bin/sh "$NAME"
fi
uid="$(id -u "$NAME")"
home="$(getent passwd "$NAME" | cut -d: -f6)"
for map in /etc/subuid /etc/subgid; do
  grep -q "^$NAME:" "$map" 2>/dev/null || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 "$NAME"
done
run_dir="/run/user/$uid"
mkdir -p "$run_dir"
chown "$NAME:" "$run_dir"
chmod 700 "$run_dir"
# The same ulimits as the rootful service: Podman's own defaults are refused
# by this kernel ("error setting rlimit type 7").
mkdir -p "$home/.config/containers"
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n' \
  > "$home/.config/containers/containers.conf"
chown -R "$NAME:" "$home/.config"
as_user() { runuser -u "$NAME" -- env -i HOME="$home" XDG_RUNTIME_DIR="$run_dir" PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

SOCKET="$run_dir/podman.sock"
ping() { curl -sf --max-time 5 --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1; }
if ! ping; then
  rm -f "$SOCKET"
  say "starting $NAME's podman system service on unix://$SOCKET (log: $home/service.log)"
  # The log is opened by the user, so it is theirs; nothing holds this
  # script's output open. It starts in the user's home: conmon needs its
  # working directory to exist for the service's whole life.
  as_user setsid sh -c "cd '$home' && exec podman system service --time=0 unix://$SOCKET >'$home/service.log' 2>&1" \
    </dev/null >/dev/null 2>&1 &
  for _ in $(seq 60); do ping && break; sleep 0.5; done
  ping || { tail -20 "$home/service.log" >&2; die "the rootless podman API did not answer within 30 s"; }
fi
if ! as_user podman image exists "localhost/$IMAGE"; then
  docker image inspect "$IMAGE" >/dev/null 2>&1 || die "$IMAGE is missing on the first engine: run scripts/docker-setup.sh"
  say "copying $IMAGE to $NAME's podman"
  docker save "$IMAGE" | as_user podman load >/dev/null
fi
rootless="$(curl -sf --unix-socket "$SOCKET" http://podman/v4.0.0/libpod/info | python3 -c 'import json,sys; print(json.load(sys.stdin)["host"]["security"]["rootless"])')"
[ "$rootless" = True ] || die "the service at $SOCKET is not rootless (host.security.rootless = $rootless)"
say "rootless podman ready at unix://$SOCKET for $NAME (uid $uid) with $IMAGE"
