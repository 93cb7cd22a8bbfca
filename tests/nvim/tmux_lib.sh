# Shared by the tmux tests: result lines and failing.
say() { printf '%s\n' "$*"; }
status=0
# A failed check; the next one still runs.
check_failed() {
  say "FAIL - tmux: $1"
  [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/    /'
  status=1
}
# A failed setup: nothing after it can run.
fail() {
  check_failed "$@"
  exit 1
}

# A temp folder ($work), a tmux server on its own socket ($socket) for a session
# named $session, both gone when the test ends (kept with SLIPWAY_NVIM_KEEP=1).
tmux_setup() { # session name
  work=$(mktemp -d "${TMPDIR:-/tmp}/slipway-tmux-XXXXXX")
  work=$(cd "$work" && pwd -P)
  session="$1-$$"
  socket="$work/tmux.sock"
  trap 'tmux -S "$socket" kill-server >/dev/null 2>&1; [ "${SLIPWAY_NVIM_KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT
}

# $repo: a new repository under $work with README.md committed on main.
tmux_repo() {
  repo=$work/repo
  mkdir -p "$repo"
  git -C "$repo" init -q -b main
  printf 'hello\n' >"$repo/README.md"
  git -C "$repo" add README.md
  git -C "$repo" commit -q -m initial
}

# The screen of $session, and waits on it (after tmux_setup).
screen() { tmux -S "$socket" capture-pane -p -t "$session"; }
# Waits (60 s at most) until the command "$@" succeeds.
wait_for() {
  local i
  for i in $(seq 1 300); do
    "$@" && return 0
    sleep 0.2 # allow-sleep: the poll interval of a wait for the screen or a file
  done
  return 1
}
on_screen() { screen | grep -qF -- "$1"; }
wait_screen() { wait_for on_screen "$1"; }
