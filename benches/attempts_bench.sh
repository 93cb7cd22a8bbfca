#!/usr/bin/env bash
# Eight attempts against eight `docker run` started in parallel, in the same run.
#
#   bash benches/attempts_bench.sh [ROUNDS]
#
# Measures, median of ROUNDS (default 7) interleaved rounds, the time from the
# request to the moment the last of 8 agents has started:
# - `slipway run --attempts 8 --branch … --sandbox docker`: 8 worktrees, 8
#   private git dirs, 8 containers on the local engine (no engine list), and
#   the same with an engine list (`local`, limit 8) so a slot is taken per run;
# - 8 `docker run --rm` of the same image started at once, each with a bind
#   mount, as the floor.
# Each agent's first act is to write the kernel's uptime clock (/proc/uptime,
# 10 ms steps, the same clock in a container: the test image has no `date`)
# into a file the bench reads; the last of the 8 is "all started". Needs the engine and the test image: bash scripts/docker-setup.sh
set -euo pipefail
ROUNDS=${1:-7}
N=8
IMAGE=slipway-test:latest
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
release_slipway "$ROOT"
scratch slipway-attempts-bench
hermetic_git "$WORK"
export XDG_CONFIG_HOME="$WORK/config" XDG_STATE_HOME="$WORK/state"
mkdir -p "$XDG_CONFIG_HOME/slipway"
ms() { awk -v ns="$1" 'BEGIN { printf "%.0f", ns / 1e6 }'; }
# An uptime reading ("4912.34 …", two decimals) in ns; the file $1.
up_ns() { local u; read -r u _ < "$1"; echo $((10#${u/./} * 10000000)); }
# The latest clock in the files given, less t0.
last_start() {
  local t0=$1; shift
  local last=0 t
  for f in "$@"; do t=$(up_ns "$f"); ((t > last)) && last=$t; done
  echo $((last - t0))
}
# What an agent runs first: the clock into the file $1.
STAMP='read -r u _ < /proc/uptime; echo "$u" >'


engines() {
  if [ "$1" = on ]; then
    printf '[[engines]]\nname = "local"\nurl = "unix:///var/run/docker.sock"\nlimit = %s\n' "$N" \
      > "$XDG_CONFIG_HOME/slipway/config.toml"
  else
    rm -f "$XDG_CONFIG_HOME/slipway/config.toml"
  fi
}

# Each prints the ns from the request to the last agent's start (in a
# subshell: every round gets folders of its own from mktemp).
slipway_round() {
  local repo
  repo=$(mktemp -d "$WORK/repo-XXXXXX")
  git init -q -b main "$repo" && git -C "$repo" commit -q --allow-empty -m init
  local t0
  t0=$(up_ns /proc/uptime)
  (cd "$repo" && "$SLIPWAY" --json run --attempts "$N" --branch try --sandbox docker \
    --image "$IMAGE" --network none --prompt go \
    -- sh -c "$STAMP \"\$SLIPWAY_WORKTREE/.started\"" >/dev/null)
  last_start "$t0" "$repo"/.slipway/worktrees/*/.started
}
docker_round() {
  local out
  out=$(mktemp -d "$WORK/docker-XXXXXX")
  local t0 pids=()
  t0=$(up_ns /proc/uptime)
  for ((i = 0; i < N; i++)); do
    docker run --rm --network none -v "$out:/out" "$IMAGE" sh -c "$STAMP /out/$i" >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  last_start "$t0" "$out"/*
}

plain=(); listed=(); docker_=(); r_plain=(); r_listed=()
# Interleaved, the order turning each round, so a noisy moment hits all three.
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then
    engines off; p=$(slipway_round); engines on; l=$(slipway_round); d=$(docker_round)
  else
    d=$(docker_round); engines on; l=$(slipway_round); engines off; p=$(slipway_round)
  fi
  plain+=("$p"); listed+=("$l"); docker_+=("$d")
  r_plain+=("$(ratio "$p" "$d")"); r_listed+=("$(ratio "$l" "$d")")
  echo "round $((r + 1)): slipway $(ms "$p") ms, with an engine list $(ms "$l") ms, docker run $(ms "$d") ms" >&2
done
P=$(median "${plain[@]}"); L=$(median "${listed[@]}"); D=$(median "${docker_[@]}")
echo
echo "median of $ROUNDS interleaved rounds, $N at once, image $IMAGE, network none"
echo
echo "| benchmark | slipway | $N \`docker run --rm\` at once | ratio (min–max) |"
echo "| --- | --- | --- | --- |"
echo "| \`run --attempts $N\`: request to the last agent started | $(ms "$P") ms | $(ms "$D") ms | $(ratio "$P" "$D") ($(spread "${r_plain[@]}")) |"
echo "| the same with an engine list (\`local\`, limit $N) | $(ms "$L") ms | $(ms "$D") ms | $(ratio "$L" "$D") ($(spread "${r_listed[@]}")) |"
