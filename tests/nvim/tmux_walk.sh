#!/usr/bin/env bash
# A real Neovim in tmux, read off the screen (`tmux capture-pane -p`): while a
# handed-off run of the `command` agent goes, the status line and the
# `:Slipway runs` view show its latest step (its latest output line) and follow
# it; when it ends the status line says done.
#
# Run by scripts/nvim-test.sh with NVIM_BIN, SLIPWAY_BIN, ROOT and a hermetic
# HOME/git config in the environment; prints `ok - …` / `FAIL - …` lines.
set -uo pipefail
. "$(dirname "$0")/tmux_lib.sh"

command -v tmux >/dev/null 2>&1 || fail "tmux is not installed (tests/nvim/tmux_review.sh installs it)"

tmux_setup slipway-walk
tmux_repo
out=$("$SLIPWAY_BIN" --repo "$repo" --json worktree create --branch tm/walk --source host-head 2>&1) || fail "slipway worktree create" "$out"
wt=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')

# The agent says `step one`, waits for gate1, says `step two`, waits for gate2, commits.
cat >"$work/agent.sh" <<SH
#!/bin/sh
wait_for() {
  n=0
  while [ ! -e "\$1" ]; do
    n=\$((n + 1))
    [ \$n -lt 900 ] || exit 1
    sleep 0.1 # allow-sleep: the agent polls for the test's gate file
  done
}
echo 'step one'
wait_for '$work/gate1'
echo 'step two'
wait_for '$work/gate2'
echo done > done.txt
git add done.txt
git commit -q -m 'walk: done'
SH

cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:prepend('$ROOT/editors/nvim')
vim.o.swapfile = false
vim.o.laststatus = 2
vim.o.statusline = "[%{v:lua.require'slipway'.statusline()}]"
vim.g.slipway = { cmd = { '$SLIPWAY_BIN', 'lsp' }, agent = { type = 'command', command = { 'sh', '$work/agent.sh' } } }
LUA

# The runs view's row of the run shows step "$1".
row_says() { screen | grep -F 'running  tm/walk' | grep -qF -- "· $1"; }

tmux -S "$socket" new-session -d -s "$session" -x 160 -y 40 \
  "cd '$wt' && exec '$NVIM_BIN' -u '$work/init.lua' -i NONE" || fail "tmux new-session"
wait_screen '~' || fail "Neovim did not start in tmux" "$(screen)"
tmux -S "$socket" send-keys -t "$session" ':Slipway handoff prompt=walk away' Enter

if wait_screen '[⎇ tm/walk ⟳ step one]'; then
  say "ok - tmux: the status line shows the run's latest step"
else
  check_failed "the status line never showed step one" "$(screen)"
fi
tmux -S "$socket" send-keys -t "$session" ':Slipway runs' Enter
if wait_for row_says 'step one'; then
  say "ok - tmux: :Slipway runs shows the run, its state and latest step"
else
  check_failed ":Slipway runs: no row with step one" "$(screen)"
fi
: >"$work/gate1"
if wait_for row_says 'step two' && wait_screen '⟳ step two]'; then
  say "ok - tmux: the runs view and the status line follow the next step"
else
  check_failed "step two never reached the runs view and the status line" "$(screen)"
fi
: >"$work/gate2"
# The runs view has the focus; the worktree's window still shows its status line.
if wait_screen '[⎇ tm/walk ✓]' && wait_screen 'completed  tm/walk'; then
  say "ok - tmux: when the run ends the status line says done and the view completed"
else
  check_failed "the end of the run is not on the screen" "$(screen)"
fi

# An interactive agent in a terminal: :qa is refused, saying what to do, on the screen.
cat >"$work/inter.sh" <<SH
#!/bin/sh
echo 'interactive agent ready'
exec sleep 600 # allow-sleep: the interactive agent stays up until it is stopped
SH
tmux -S "$socket" send-keys -t "$session" Escape ":lua vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = { 'sh', '$work/inter.sh' } } })" Enter
tmux -S "$socket" send-keys -t "$session" ':Slipway agent' Enter
wait_screen 'interactive agent ready' || check_failed "the interactive agent did not start" "$(screen)"
tmux -S "$socket" send-keys -t "$session" C-\\ C-n ':qa' Enter
if wait_screen ':Slipway stop ends it, :qa! quits and ends it'; then
  say "ok - tmux: :qa with a live agent terminal is refused, naming :Slipway stop and :qa!"
else
  check_failed ":qa: no message naming :Slipway stop and :qa!" "$(screen)"
fi
tmux -S "$socket" send-keys -t "$session" Enter ':Slipway stop' Enter
if wait_screen 'stopped the interactive agent in tm/walk'; then
  say "ok - tmux: :Slipway stop ends the interactive agent"
else
  check_failed ":Slipway stop: no message" "$(screen)"
fi
tmux -S "$socket" send-keys -t "$session" ':qa' Enter
gone() { ! tmux -S "$socket" has-session -t "$session" 2>/dev/null; }
if wait_for gone; then
  say "ok - tmux: once the agent ended, :qa quits"
else
  check_failed ":qa did not quit after :Slipway stop" "$(screen)"
  tmux -S "$socket" send-keys -t "$session" ':qall!' Enter
fi
exit $status
