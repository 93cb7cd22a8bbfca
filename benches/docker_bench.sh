#!/usr/bin/env bash
# The docker sandbox against `docker run --rm` of the same image, in the same run.
#
#   bash benches/docker_bench.sh [ROUNDS]
#
# Measures, median of ROUNDS (default 9):
# - time from starting `slipway run --sandbox docker` to the agent's first output
#   line, against `docker run --rm` to the same line;
# - total wall time of the whole command (start, one line, teardown).
# Needs the engine and the test image: bash scripts/docker-setup.sh
set -euo pipefail
ROUNDS=${1:-9}
IMAGE=slipway-test:latest
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
release_slipway "$ROOT"
scratch slipway-docker-bench
hermetic_git "$WORK"
git init -q -b main "$WORK/repo" && git -C "$WORK/repo" commit -q --allow-empty -m init
ms() { awk -v ns="$1" 'BEGIN { printf "%.0f", ns / 1e6 }'; }

# Runs "$@", returns "first-line-ns total-ns" measured from the start.
first_line_and_total() {
  local t0 first="" line
  t0=$(now_ns)
  while IFS= read -r line; do
    if [ -z "$first" ] && [[ "$line" == *bench-first-line* ]]; then first=$(now_ns); fi
  done < <("$@" 2>&1)
  echo "$((first - t0)) $(( $(now_ns) - t0 ))"
}

s_first=(); s_total=(); d_first=(); d_total=(); r_first=(); r_total=()
cd "$WORK/repo"
slipway_round() {
  read -r f t < <(first_line_and_total "$SLIPWAY" run --sandbox docker --image "$IMAGE" --network none \
    --strategy head -- sh -c 'echo bench-first-line')
  s_first+=("$f"); s_total+=("$t")
}
docker_round() {
  read -r f t < <(first_line_and_total docker run --rm --network none "$IMAGE" sh -c 'echo bench-first-line')
  d_first+=("$f"); d_total+=("$t")
}
# Interleaved, and which goes first alternates, so a noisy moment hits both.
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then slipway_round; docker_round; else docker_round; slipway_round; fi
  r_first+=("$(ratio "${s_first[-1]}" "${d_first[-1]}")"); r_total+=("$(ratio "${s_total[-1]}" "${d_total[-1]}")")
done
SF=$(median "${s_first[@]}"); ST=$(median "${s_total[@]}")
DF=$(median "${d_first[@]}"); DT=$(median "${d_total[@]}")
echo
echo "median of $ROUNDS interleaved rounds, image $IMAGE, network none"
echo
echo "| benchmark | slipway run --sandbox docker | docker run --rm | ratio |"
echo "| --- | --- | --- | --- |"
echo "| start to the agent's first output line | $(ms "$SF") ms | $(ms "$DF") ms | $(ratio "$SF" "$DF") (rounds $(spread "${r_first[@]}")) |"
echo "| whole command: start, one line, teardown | $(ms "$ST") ms | $(ms "$DT") ms | $(ratio "$ST" "$DT") (rounds $(spread "${r_total[@]}")) |"
