#!/usr/bin/env bash
# A real Neovim in tmux, read from the screen (`tmux capture-pane -p`) as a
# person sees it: the review's `]f` works where the cursor lands and again
# from the quickfix list; `:help slipway-handoff` lands on the command;
# `:Slipway list` shows its rows; a worktree the command line removed leaves
# no buffer behind; at start-up, runs nobody saw end are told in one line
# offering review and land (never "Press ENTER"), runs watched in a terminal
# not at all; discard asks only when something would be lost; a run asks
# nothing the defaults decide.
#
# Waits are on what the screen or Neovim shows (polled with a deadline);
# "nothing else came" is decided by a later event: Neovim's own count of the
# reports and messages it showed, read over its RPC socket.
#
# Run by scripts/nvim-test.sh with NVIM_BIN, SLIPWAY_BIN, ROOT and a hermetic
# HOME/git config in the environment; prints `ok - …` / `FAIL - …` lines.
set -uo pipefail
. "$(dirname "$0")/tmux_lib.sh"
ok() { say "ok - tmux: $1"; }

command -v tmux >/dev/null 2>&1 || fail "tmux is not installed (apt-get install tmux)"

tmux_setup slipway-edges
nvim_sock="$work/nvim.sock"

sw() { "$SLIPWAY_BIN" --repo "$repo" "$@"; }
# Polls `cmd` until it succeeds, for up to `secs` seconds.
until_true() { # secs, cmd...
  local secs=$1 i
  shift
  for i in $(seq 1 $((secs * 10))); do
    "$@" && return 0
    sleep 0.1 # allow-sleep: the poll interval of a wait for the screen or a file
  done
  return 1
}
screen() { tmux -S "$socket" capture-pane -p -t "$session:nvim"; }
on_screen() { screen | grep -qF -- "$1"; }
wait_screen() { until_true "${2:-20}" on_screen "$1"; }
keys() { tmux -S "$socket" send-keys -t "$session:nvim" "$@"; }
# A Lua expression evaluated in the running Neovim.
nv() { "$NVIM_BIN" --server "$nvim_sock" --remote-expr "luaeval(\"$1\")" 2>/dev/null; }
nv_is() { [ "$(nv "$1")" = "$2" ]; }
nv_at_least() { local v; v=$(nv "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

tmux_repo

agent=$work/agent.sh
cat >"$agent" <<'AGENT'
#!/bin/sh
echo "$SLIPWAY_PROMPT" > "note-$(date +%s%N).txt"
git add . && git commit -q -m "agent: $SLIPWAY_PROMPT"
echo "agent wrote a note"
AGENT
chmod +x "$agent"

tmux -S "$socket" new-session -d -s "$session" -n term -x 200 -y 40 "cd '$repo' && exec bash --norc" ||
  fail "tmux new-session"

# A run watched in a terminal: it shows its own result.
tmux -S "$socket" send-keys -t "$session:term" \
  "'$SLIPWAY_BIN' run --strategy branch --branch watched/one --agent command --prompt watched -- '$agent'; echo WATCHED-DONE" Enter
until_true 60 sh -c "tmux -S '$socket' capture-pane -p -t '$session:term' | grep -q '^WATCHED-DONE'" ||
  fail "the watched run did not end" "$(tmux -S "$socket" capture-pane -p -t "$session:term")"
# Two runs nobody watched (their output goes to a file).
sw run --strategy branch --branch unseen/a --agent command --prompt a -- "$agent" >"$work/a.out" 2>&1 ||
  fail "run unseen/a" "$(cat "$work/a.out")"
sw run --strategy branch --branch unseen/b --agent command --prompt b -- "$agent" >"$work/b.out" 2>&1 ||
  fail "run unseen/b" "$(cat "$work/b.out")"
# A worktree with two changed files, for the review.
out=$(sw --json worktree create --branch rv/two 2>&1) || fail "worktree create" "$out"
wt=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
printf 'hello\nfrom the review\n' >"$wt/README.md"
printf 'second\n' >"$wt/second.txt"
git -C "$wt" add . && git -C "$wt" commit -q -m 'two files'

cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:prepend('$ROOT/editors/nvim')
vim.o.swapfile = false
vim.g.slipway = { cmd = { '$SLIPWAY_BIN', 'lsp' }, agent = { type = 'command', command = { '$agent' } } }
vim.lsp.enable('slipway')
LUA

tmux -S "$socket" new-window -t "$session" -n nvim \
  "cd '$repo' && exec '$NVIM_BIN' --listen '$nvim_sock' -u '$work/init.lua' -i NONE README.md" ||
  fail "tmux new-window"
until_true 20 test -S "$nvim_sock" || fail "Neovim did not start" "$(screen)"

# --- News at start-up: the two unseen runs, in one line, offering review and land.
if until_true 30 nv_is "#require('slipway.runs').finished" 2 && until_true 10 nv_at_least "require('slipway.util').shown" 1; then
  # Shown: now on the screen, as one line standing for both.
  wait_screen '(+1 more: :Slipway details)' 10
  s=$(screen)
  if printf '%s' "$s" | grep -qF 'Press ENTER'; then
    check_failed "the start-up reports asked Press ENTER" "$s"
  elif ! printf '%s' "$s" | grep -qF '(+1 more: :Slipway details)'; then
    check_failed "the two reports are not one line" "$s"
  elif ! printf '%s' "$s" | grep -qE ':Slipway review unseen/[ab] or :Slipway land unseen/[ab]'; then
    check_failed "the report offers no review and land" "$s"
  else
    ok "runs nobody saw end are told at start-up in one line offering review and land"
  fi
  told=$(nv "vim.json.encode(vim.tbl_map(function(r) return r.branch end, require('slipway.runs').finished))")
  case "$told" in
  *watched/one*) check_failed "a run watched in a terminal was told again" "$told" ;;
  *) ok "a run watched in a terminal is not told" ;;
  esac
else
  check_failed "the unseen runs were never told" "$(screen)"
fi

# --- :help slipway-handoff lands on the command, not on the mapping list.
keys ':help slipway-handoff' Enter
if wait_screen ':Slipway handoff [{worktree}] [prompt=TEXT]' 10; then
  ok ":help slipway-handoff shows the handoff command"
else
  check_failed ":help slipway-handoff did not land on the command" "$(screen)"
fi
keys ':only' Enter ':enew!' Enter

# --- :Slipway list shows a row per worktree.
keys ':Slipway list' Enter
if wait_screen 'slipway://list' 20 && on_screen 'rv/two' && on_screen 'unseen/a' && on_screen 'watched/one'; then
  ok ":Slipway list shows the rows"
else
  check_failed ":Slipway list does not show its rows" "$(screen)"
fi
keys ':only' Enter

# --- Review: ]f where the cursor lands (the worktree's file), then from the quickfix list.
keys ':Slipway review rv/two' Enter
if wait_screen 'slipway://rv/two@base/README.md' 30; then
  keys ']f'
  if wait_screen 'slipway://rv/two@base/second.txt' 10 && ! on_screen 'E447'; then
    ok "review: ]f in the worktree's file shows the next file"
  else
    check_failed "review: ]f in the worktree's file" "$(screen)"
  fi
  keys ':copen' Enter ']f'
  if wait_screen 'slipway://rv/two@base/README.md' 10; then
    keys ']f'
    if wait_screen 'slipway://rv/two@base/second.txt' 10 && ! on_screen 'E447'; then
      ok "review: ]f twice from the quickfix list"
    else
      check_failed "review: the second ]f from the quickfix list" "$(screen)"
    fi
  else
    check_failed "review: ]f from the quickfix list" "$(screen)"
  fi
  keys Escape ':tabclose!' Enter
else
  check_failed "review did not open" "$(screen)"
fi

# --- A worktree the command line removes leaves no buffer behind.
keys ":edit $wt/second.txt" Enter
until_true 10 nv_is "vim.fn.buflisted(vim.fn.bufnr('second.txt'))" 1 || check_failed "the worktree's file did not open" "$(screen)"
out=$(sw discard rv/two --force 2>&1) || check_failed "slipway discard rv/two" "$out"
if until_true 20 nv_is "vim.fn.buflisted(vim.fn.bufnr('$wt/second.txt'))" 0; then
  keys ':ls' Enter
  if wait_screen ':ls' 5 && ! on_screen 'second.txt'; then
    ok "a worktree the command line removed leaves no buffer listed"
  else
    check_failed ":ls still lists the removed worktree's file" "$(screen)"
  fi
  keys Enter
else
  check_failed "the removed worktree's buffer stays listed" "$(screen)"
fi

# --- Discard asks only when something would be lost, and lists it.
keys ':Slipway discard unseen/a' Enter
if wait_screen 'Keep it' 20 && on_screen 'lose 1 commit'; then
  keys '1' Enter
  wait_screen 'kept unseen/a' 10 && ok "discard of unlanded work asks, listing what is lost" ||
    check_failed "discard: keeping it" "$(screen)"
else
  check_failed "discard of unlanded work does not ask with the list" "$(screen)"
fi
out=$(sw land unseen/a --how squash 2>&1) || check_failed "slipway land unseen/a" "$out"
keys ':Slipway discard unseen/a' Enter
if wait_screen 'discarded unseen/a' 20 && ! on_screen 'Keep it'; then
  ok "discard of landed work asks nothing"
else
  check_failed "discard of squash-landed work asked or failed" "$(screen)"
fi

# --- A run asks nothing the defaults decide: straight to started, then merged.
keys ':Slipway run prompt=by the defaults' Enter
if wait_screen 'started (by the defaults' 20 && ! on_screen 'strategy'; then
  ok ":Slipway run asks no strategy or source"
else
  check_failed ":Slipway run asked for what the defaults decide" "$(screen)"
fi
if wait_screen 'merged into main' 60; then
  ok "the run's end is told: merged into main"
else
  check_failed "the default run's end was not told" "$(screen)"
fi

keys Escape ':qall!' Enter
exit $status
