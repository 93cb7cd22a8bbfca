# Helpers the shell benches share: `source "$(dirname "$0")/lib.sh"`.

now_ns() { date +%s%N; }
# median of the arguments (nanoseconds)
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# "min–max" of the arguments (ratios)
spread() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s–%s", lo, hi}'; }

# Hermetic git under the folder $1: a private HOME and global config, no system config.
hermetic_git() {
  export HOME="$1/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$1/home/.gitconfig"
  mkdir -p "$HOME"
  printf '[user]\n\tname = bench\n\temail = bench@slipway.invalid\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"
}

# A scratch folder for one bench run, removed at exit unless KEEP is set.
scratch() {
  WORK=$(mktemp -d "/tmp/$1-XXXXXX")
  trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
}

# Builds the release binary of the checkout at $1; sets SLIPWAY to it
# (SLIPWAY_BIN names a binary to measure instead, and nothing is built).
release_slipway() {
  if [ -n "${SLIPWAY_BIN:-}" ]; then SLIPWAY=$SLIPWAY_BIN; return; fi
  cargo build --release --quiet --manifest-path "$1/Cargo.toml"
  SLIPWAY="${CARGO_TARGET_DIR:-$1/target}/release/slipway"
}
