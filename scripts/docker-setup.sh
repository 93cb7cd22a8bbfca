#!/usr/bin/env bash
# Makes a Docker Engine answer on this machine and builds the local test image
# `slipway-test:latest`, for the docker sandbox tests (tests/docker_sandbox.rs).
#
# Idempotent: every step checks first and says what it did. Meant for a fresh
# Debian machine run as root (a developer's or CI's); no image can be pulled
# there, so the test image is assembled from the host's own binaries.
#
#   bash scripts/docker-setup.sh
#
# Environment:
#   SLIPWAY_DOCKERD_LOG   where the daemon started here logs (default /var/log/slipway-dockerd.log)
#   SLIPWAY_TEST_IMAGE    the image to build (default slipway-test:latest)
set -euo pipefail

IMAGE="${SLIPWAY_TEST_IMAGE:-slipway-test:latest}"
DOCKERD_LOG="${SLIPWAY_DOCKERD_LOG:-/var/log/slipway-dockerd.log}"
# Bump when the image's contents change, so an old image on a kept machine is rebuilt.
IMAGE_VERSION=7

say() { echo "docker-setup: $*"; }
die() { echo "docker-setup: error: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1; }

apt_install() {
  [ "$(id -u)" = 0 ] || die "please install $* (or run this script as root)"
  need apt-get || die "please install $* (no apt-get here)"
  say "installing $*"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- 1. the engine ---------------------------------------------------------
if ! need dockerd; then
  # docker.io brings dockerd, containerd, runc and tini (the engine's docker-init).
  apt_install docker.io
fi
if ! need docker; then
  apt_install docker.io
fi

# True when the pid in file $1 is a live process named $2: not a zombie (a
# killed daemon lingers as one until reaped) and not a reused pid.
proc_alive() {
  local pid stat
  pid="$(cat "$1" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat%% *}" != Z ]
}

DOCKERD_PIDFILE=/var/run/docker.pid
# dockerd's own containerd: a stale pid file makes dockerd wait for a dead one.
CONTAINERD_PIDFILE=/var/run/docker/containerd/containerd.pid

start_dockerd() {
  # Pid files left by daemons that died with the session block new ones.
  proc_alive "$DOCKERD_PIDFILE" dockerd || rm -f "$DOCKERD_PIDFILE"
  proc_alive "$CONTAINERD_PIDFILE" containerd || rm -f "$CONTAINERD_PIDFILE"
  say "starting dockerd (log: $DOCKERD_LOG)"
  mkdir -p "$(dirname "$DOCKERD_LOG")"
  # vfs works on any filesystem (overlay-on-overlay does not); no bridge or
  # iptables because test containers run with network `none`. setsid detaches
  # the daemon from this shell so it outlives the script.
  setsid dockerd --storage-driver=vfs --bridge=none --iptables=false --ip6tables=false \
    </dev/null >>"$DOCKERD_LOG" 2>&1 &
  echo $! >"$work_pid"
}

if docker info >/dev/null 2>&1; then
  say "the engine already answers"
else
  [ "$(id -u)" = 0 ] || die "the Docker engine does not answer and only root can start dockerd here"
  work_pid="$(mktemp)"
  if proc_alive "$DOCKERD_PIDFILE" dockerd; then
    # Another run of this script started it and it is still coming up.
    say "dockerd (pid $(cat "$DOCKERD_PIDFILE")) is starting; waiting for it"
    cp "$DOCKERD_PIDFILE" "$work_pid"
    starts=1
  else
    start_dockerd
    starts=1
  fi
  deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ! proc_alive "$work_pid" dockerd; then
      # It died (a containerd left over from a killed daemon is the usual
      # cause); one more start after cleaning up usually works.
      tail -n 5 "$DOCKERD_LOG" >&2 || true
      [ "$starts" -lt 3 ] || die "dockerd exits at start (log above, in $DOCKERD_LOG)"
      starts=$((starts + 1))
      rm -f "$CONTAINERD_PIDFILE"
      sleep 1
      start_dockerd
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 30 "$DOCKERD_LOG" >&2 || true
      die "dockerd did not answer within 60 s (log above, in $DOCKERD_LOG)"
    fi
    sleep 0.5
  done
  rm -f "$work_pid"
  say "the engine answers"
fi

# --- 2. the test image -----------------------------------------------------
have_version="$(docker image inspect -f '{{index .Config.Labels "slipway.test-image.version"}}' "$IMAGE" 2>/dev/null || true)"
if [ "$have_version" = "$IMAGE_VERSION" ]; then
  say "image $IMAGE is up to date"
  exit 0
fi

# tini is the init the image carries; the engine's `init: true` uses its own.
if ! need tini && ! need dumb-init; then
  ( apt_install tini ) || say "no tini package: the image gets no init of its own"
fi

# The image carries the host's git: the tests commit from inside the container.
need git || apt_install git

say "building $IMAGE"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{etc,tmp,root,home,proc,sys,dev,run,workspace}
# Merged /usr, as Debian has it: /bin/sh and /lib/... resolve as on the host.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
chmod 1777 "$root/tmp"

# Copies a file to the same absolute path inside the rootfs (following symlinks).
copy_in() {
  local src="$1" dst="$root$1"
  mkdir -p "$(dirname "$dst")"
  [ -e "$dst" ] || cp -L "$src" "$dst"
}

# Every library ldd names for an ELF file, and the dynamic loader.
copy_libs() {
  # ldd fails on static programs and scripts: they need nothing.
  { ldd "$1" 2>/dev/null || true; } | awk '
    $2 == "=>" && $3 ~ /^\// { print $3 }
    $1 ~ /^\// { print $1 }' | while read -r lib; do
    copy_in "$lib"
  done
}

tools=(sh bash git env cat echo ls ln readlink sleep touch mkdir rm cp mv chmod id stat kill ps
       printf tee grep sed head tail wc sort setsid timeout true false pwd dirname basename
       mknod mkfifo tini dumb-init)
copied=()
for tool in "${tools[@]}"; do
  path="$(type -P "$tool" || true)"
  [ -n "$path" ] || continue
  # Keep each program at its host path (git's compiled-in exec path depends on it),
  # and also reachable from /usr/bin for scripts that hard-code it.
  copy_in "$path"
  copy_libs "$path"
  [ -e "$root/usr/bin/$tool" ] || ln -s "$path" "$root/usr/bin/$tool"
  copied+=("$tool")
done

# git's helpers (git-core) with their libraries; cp -a keeps the hard links.
if exec_path="$(git --exec-path 2>/dev/null)" && [ -d "$exec_path" ]; then
  mkdir -p "$root$(dirname "$exec_path")"
  cp -a "$exec_path" "$root$exec_path"
  find "$exec_path" -type f -perm -u+x | while read -r f; do copy_libs "$f"; done
  # git's default templates, when installed, so `git init` inside works quietly.
  for t in /usr/share/git-core/templates /usr/local/share/git-core/templates; do
    if [ -d "$t" ]; then mkdir -p "$root$(dirname "$t")"; cp -a "$t" "$root$t"; fi
  done
fi

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
slipway:x:1000:1000:slipway:/home/slipway:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
slipway:x:1000:
nogroup:x:65534:
EOF
mkdir -p "$root/home/slipway"

# A stand-in for Claude Code (no LLM is reachable here): it speaks the
# stream-json format, commits what the prompt says, and on --resume proves the
# session file was handed into the container where Claude Code looks for it.
mkdir -p "$root/usr/local/bin"
cat >"$root/usr/local/bin/claude" <<'FAKE'
#!/bin/sh
prompt=$(cat)
sid=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee
resumed=""
while [ $# -gt 0 ]; do
  case "$1" in --resume) sid="$2"; shift;; esac
  shift
done
if [ "$sid" != aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee ]; then
  dir="$HOME/.claude/projects/$(printf '%s' "$PWD" | sed 's/[^a-zA-Z0-9]/-/g')"
  if [ -f "$dir/$sid.jsonl" ]; then resumed="resumed $(head -n 1 "$dir/$sid.jsonl" | sed 's/["{}]//g')"; else resumed="no session file at $dir/$sid.jsonl"; fi
fi
echo '{"type":"system","subtype":"init","session_id":"'"$sid"'","model":"fake"}'
[ -n "$resumed" ] && echo '{"type":"assistant","message":{"content":[{"type":"text","text":"'"$resumed"'"}]},"session_id":"'"$sid"'"}'
printf '%s\n' "$prompt" >> claude.txt
git add claude.txt && git commit -qm "claude: $prompt"
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"'"$sid"'","usage":{"input_tokens":7,"output_tokens":3}}'
FAKE
chmod 755 "$root/usr/local/bin/claude"
chown 1000:1000 "$root/home/slipway"

old_id="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "LABEL slipway.test-image.version=$IMAGE_VERSION" \
  --change 'CMD ["/bin/sh"]' \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
# The outdated image is untagged now; drop it unless a container still uses it.
if [ -n "$old_id" ]; then docker rmi "$old_id" >/dev/null 2>&1 || true; fi
size="$(du -sh "$work/rootfs.tar" | cut -f1)"
say "built $IMAGE ($size) with: ${copied[*]} and git-core"
