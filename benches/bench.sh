#!/usr/bin/env bash
# Benchmarks slipway against the git CLI in the same run, on the same fixtures.
#
#   bash benches/bench.sh [FILES] [BRANCHES] [IGNORED_FILES] [ROUNDS]
#
# Defaults: 5000 tracked files, 5000 branches, a 10000-file ignored node_modules,
# 7 rounds (median reported). Prints a Markdown table of medians and ratios.
set -euo pipefail
FILES=${1:-5000}
BRANCHES=${2:-5000}
IGNORED=${3:-10000}
ROUNDS=${4:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
SLIPWAY="$ROOT/target/release/slipway"
# A journaled ext4 made for the bench (a loop-mounted image when root), never
# the CI root filesystem (see benches/fixture.py: journaled_dir).
WORK=$(python3 "$ROOT/benches/fixture.py" mount slipway-bench-)
trap 'python3 "$ROOT/benches/fixture.py" umount "$WORK"' EXIT

# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
hermetic_git "$WORK"
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
# median of the arguments (ratios)
median_g() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Fixture 1: FILES tracked files in 100 folders, an ignored node_modules of IGNORED files.
REPO="$WORK/repo"
mkdir -p "$REPO" && cd "$REPO"
git init -q
for ((d = 0; d < 100; d++)); do mkdir -p "src/d$d"; done
for ((i = 0; i < FILES; i++)); do printf 'file %d\n' "$i" > "src/d$((i % 100))/f$i.txt"; done
printf 'node_modules/\n' > .gitignore
git add -A && git commit -q -m "fixture: $FILES files"
for ((d = 0; d < 100; d++)); do mkdir -p "node_modules/pkg$d/lib"; done
for ((i = 0; i < IGNORED; i++)); do printf 'module %d\n' "$i" > "node_modules/pkg$((i % 100))/lib/m$i.js"; done

slip_times=()
git_times=()
for ((r = 0; r < ROUNDS; r++)); do
  t0=$(now_ns)
  "$SLIPWAY" --json worktree create --branch "bench/s$r" --copy node_modules > /dev/null
  "$SLIPWAY" --json worktree close "bench/s$r" > /dev/null
  t1=$(now_ns)
  git worktree add -q "$WORK/g$r" -b "bench/g$r"
  cp -r node_modules "$WORK/g$r/"
  git worktree remove --force "$WORK/g$r"
  t2=$(now_ns)
  slip_times+=($((t1 - t0)))
  git_times+=($((t2 - t1)))
done
S_WT=$(median "${slip_times[@]}")
G_WT=$(median "${git_times[@]}")

# Copy-in alone: slipway's copier against cp -r, same source, same target
# filesystem. A create without copy-in is timed in the same round and taken
# off, and the rounds interleave the three ways (so a busy moment hits them
# alike): --copy node_modules, .worktreeinclude selecting node_modules (the
# ignored-file listing included), and cp -r.
copy_slip=()
copy_incl=()
copy_cp=()
ratio_slip=()
ratio_incl=()
for ((r = 0; r < ROUNDS; r++)); do
  t0=$(now_ns)
  "$SLIPWAY" --json worktree create --branch "bench/d$r" > /dev/null
  t1=$(now_ns)
  "$SLIPWAY" --json worktree close "bench/d$r" > /dev/null
  t2=$(now_ns)
  "$SLIPWAY" --json worktree create --branch "bench/e$r" --copy node_modules > /dev/null
  t3=$(now_ns)
  "$SLIPWAY" --json worktree close "bench/e$r" > /dev/null
  printf 'node_modules/\n' > .worktreeinclude
  t4=$(now_ns)
  "$SLIPWAY" --json worktree create --branch "bench/f$r" > /dev/null
  t5=$(now_ns)
  rm .worktreeinclude
  "$SLIPWAY" --json worktree close "bench/f$r" > /dev/null
  mkdir -p "$WORK/cp$r"
  t6=$(now_ns)
  cp -r node_modules "$WORK/cp$r/"
  t7=$(now_ns)
  rm -rf "$WORK/cp$r"
  base=$((t1 - t0))
  cp_ns=$((t7 - t6))
  copy_slip+=($(( (t3 - t2) - base )))
  copy_incl+=($(( (t5 - t4) - base )))
  copy_cp+=($cp_ns)
  ratio_slip+=($(ratio $(( (t3 - t2) - base )) "$cp_ns"))
  ratio_incl+=($(ratio $(( (t5 - t4) - base )) "$cp_ns"))
done
S_CP=$(median "${copy_slip[@]}")
I_CP=$(median "${copy_incl[@]}")
G_CP=$(median "${copy_cp[@]}")

# Fixture 2: BRANCHES branches on distinct commits, plus a remote-tracking copy of each.
BR="$WORK/branches"
mkdir -p "$BR" && cd "$BR"
git init -q
{
  for ((i = 1; i <= BRANCHES; i++)); do
    printf 'commit refs/heads/main\nmark :%d\ncommitter bench <b@x> %d +0000\ndata <<EOM\ncommit %d\nEOM\nM 644 inline f.txt\ndata <<EOM\n%d\nEOM\n\n' "$i" $((1700000000 + i)) "$i" "$i"
  done
  for ((i = 1; i <= BRANCHES; i++)); do
    printf 'reset refs/heads/b%05d\nfrom :%d\n\n' "$i" "$i"
  done
  for ((i = 1; i <= BRANCHES; i += 2)); do
    printf 'reset refs/remotes/origin/b%05d\nfrom :%d\n\n' "$i" "$i"
  done
} | git fast-import --quiet
git checkout -q main
git pack-refs --all

b_slip=()
b_git=()
for ((r = 0; r < ROUNDS; r++)); do
  t0=$(now_ns)
  "$SLIPWAY" --json branches > "$WORK/slip.json"
  t1=$(now_ns)
  git for-each-ref --format='%(refname) %(objectname) %(subject) %(committerdate:unix) %(HEAD) %(upstream:short)' refs/heads refs/remotes > "$WORK/git.txt"
  t2=$(now_ns)
  b_slip+=($((t1 - t0)))
  b_git+=($((t2 - t1)))
done
S_BR=$(median "${b_slip[@]}")
G_BR=$(median "${b_git[@]}")
LISTED=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))[\"branches\"]))" "$WORK/slip.json")
GIT_LISTED=$(wc -l < "$WORK/git.txt")

echo
echo "fixture: $FILES tracked files, $IGNORED ignored files copied in, $BRANCHES branches (+$(( (BRANCHES + 1) / 2 )) remote-tracking); median of $ROUNDS rounds"
echo
echo "| benchmark | slipway | git CLI | ratio (slipway / git) |"
echo "| --- | --- | --- | --- |"
echo "| worktree create + copy node_modules + close vs \`git worktree add\` + \`cp -r\` + \`git worktree remove\` | $(ms "$S_WT") ms | $(ms "$G_WT") ms | $(ratio "$S_WT" "$G_WT") |"
echo "| copy-in of node_modules alone (--copy) vs \`cp -r\` | $(ms "$S_CP") ms | $(ms "$G_CP") ms | $(ratio "$S_CP" "$G_CP") (per round: median $(median_g "${ratio_slip[@]}"), $(spread "${ratio_slip[@]}")) |"
echo "| copy-in of node_modules alone (.worktreeinclude) vs \`cp -r\` | $(ms "$I_CP") ms | $(ms "$G_CP") ms | $(ratio "$I_CP" "$G_CP") (per round: median $(median_g "${ratio_incl[@]}"), $(spread "${ratio_incl[@]}")) |"
echo "| \`slipway branches --json\` vs \`git for-each-ref\` (same fields; $LISTED vs $GIT_LISTED refs) | $(ms "$S_BR") ms | $(ms "$G_BR") ms | $(ratio "$S_BR" "$G_BR") |"
