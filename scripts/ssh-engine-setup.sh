#!/usr/bin/env bash
# An SSH server on loopback that stands in for a remote machine with a Docker
# engine, for the ssh:// engine tests (tests/engines.rs): OpenSSH from Debian's
# packages, its own host key, a client key it alone accepts, and a client
# config so the tests never read or write the user's ~/.ssh. Idempotent; run
# as root after scripts/docker-setup.sh.
#
#   SLIPWAY_SSH_PORT   port on 127.0.0.1 (default 23722)
#
# Leaves in /var/lib/slipway-ssh: `ssh` (a wrapper: ssh -F client_config "$@",
# what tests give slipway as SLIPWAY_SSH) and `url` (ssh://root@127.0.0.1:PORT).
set -euo pipefail
PORT="${SLIPWAY_SSH_PORT:-23722}"
BASE=/var/lib/slipway-ssh
say() { echo "ssh-engine-setup: $*"; }
die() { echo "ssh-engine-setup: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "only root can start the test sshd"
if ! command -v ssh >/dev/null 2>&1 || [ ! -x /usr/sbin/sshd ]; then
  say "installing openssh-server and openssh-client"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
  # The package's own sshd on port 22 is not wanted here.
  if command -v service >/dev/null 2>&1; then service ssh stop >/dev/null 2>&1 || true; fi
fi
mkdir -p "$BASE" /run/sshd
chmod 700 "$BASE"
[ -f "$BASE/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$BASE/host_key"
[ -f "$BASE/id" ] || ssh-keygen -q -t ed25519 -N '' -f "$BASE/id"
cp "$BASE/id.pub" "$BASE/authorized_keys"
chmod 600 "$BASE/authorized_keys"
cat >"$BASE/sshd_config" <<CFG
ListenAddress 127.0.0.1
Port $PORT
HostKey $BASE/host_key
AuthorizedKeysFile $BASE/authorized_keys
PidFile $BASE/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowStreamLocalForwarding yes
AllowTcpForwarding yes
CFG
echo "[127.0.0.1]:$PORT $(cat "$BASE/host_key.pub")" >"$BASE/known_hosts"
cat >"$BASE/client_config" <<CFG
Host *
  IdentityFile $BASE/id
  IdentitiesOnly yes
  UserKnownHostsFile $BASE/known_hosts
  StrictHostKeyChecking yes
  GlobalKnownHostsFile /dev/null
CFG
cat >"$BASE/ssh" <<SH
#!/bin/sh
exec ssh -F $BASE/client_config "\$@"
SH
chmod 755 "$BASE/ssh"
echo "ssh://root@127.0.0.1:$PORT" >"$BASE/url"

if ! "$BASE/ssh" -o BatchMode=yes -p "$PORT" root@127.0.0.1 true 2>/dev/null; then
  pidfile="$BASE/sshd.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then kill "$(cat "$pidfile")"; fi
  /usr/sbin/sshd -t -f "$BASE/sshd_config" || die "sshd refuses its config"
  /usr/sbin/sshd -f "$BASE/sshd_config" -E "$BASE/sshd.log"
  for _ in $(seq 100); do
    "$BASE/ssh" -o BatchMode=yes -p "$PORT" root@127.0.0.1 true 2>/dev/null && break
    sleep 0.1
  done
  "$BASE/ssh" -o BatchMode=yes -p "$PORT" root@127.0.0.1 true || { tail -20 "$BASE/sshd.log" >&2; die "the test sshd did not let the test key in"; }
fi
say "sshd ready at $(cat "$BASE/url") (client: $BASE/ssh)"
