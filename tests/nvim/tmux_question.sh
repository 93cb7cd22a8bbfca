#!/usr/bin/env bash
# A real Neovim in tmux, read off the screen (`tmux capture-pane -p`): a
# handed-off run of the `command` agent ends asking the user; the message shows
# the question and the status line marks the run as needing input; the user
# answers in `:Slipway reply`'s prompt, the answering run goes on in the same
# worktree (its commit holds the answer) and ends, and the mark goes.
#
# Run by scripts/nvim-test.sh with NVIM_BIN, SLIPWAY_BIN, ROOT and a hermetic
# HOME/git config in the environment; prints `ok - …` / `FAIL - …` lines.
set -uo pipefail
. "$(dirname "$0")/tmux_lib.sh"

command -v tmux >/dev/null 2>&1 || fail "tmux is not installed (tests/nvim/tmux_review.sh installs it)"

QUESTION='Should I keep the old name, or do you want a new one?'
ANSWER='call it harbour'

tmux_setup slipway-question
tmux_repo
out=$("$SLIPWAY_BIN" --repo "$repo" --json worktree create --branch tm/ask --source host-head 2>&1) || fail "slipway worktree create" "$out"
wt=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')

# The first run commits its work and asks; the `command` agent has no session,
# so the reply runs it again with the answer as its prompt: it writes that down
# and commits once the test opens its gate (its start stays on the screen till then).
cat >"$work/agent.sh" <<SH
#!/bin/sh
set -e
if [ "\$SLIPWAY_PROMPT" = 'rename it' ]; then
  echo work > work.txt
  git add work.txt
  git commit -q -m 'ask: the work'
  echo 'Done with the work.'
  echo
  echo '$QUESTION'
else
  n=0
  while [ ! -e '$work/gate' ]; do
    n=\$((n + 1))
    [ \$n -lt 1800 ] || exit 1
    sleep 0.1 # allow-sleep: the agent polls for the test's gate file
  done
  printf '%s\n' "\$SLIPWAY_PROMPT" > answer.txt
  git add answer.txt
  git commit -q -m 'ask: the answer'
  echo 'Named it.'
fi
SH

cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:prepend('$ROOT/editors/nvim')
vim.o.swapfile = false
vim.o.laststatus = 2
-- The status line as the help shows it (plain text), and its highlighted form.
vim.o.statusline = "[%{v:lua.require'slipway'.statusline()}]"
function _G.highlighted_status()
  vim.o.statusline = "{%{%v:lua.require'slipway'.statusline({'highlight': v:true})%}}"
end
vim.g.slipway = { cmd = { '$SLIPWAY_BIN', 'lsp' }, agent = { type = 'command', command = { 'sh', '$work/agent.sh' } } }
LUA

tmux -S "$socket" new-session -d -s "$session" -x 160 -y 40 \
  "cd '$wt' && exec '$NVIM_BIN' -u '$work/init.lua' -i NONE" || fail "tmux new-session"
wait_screen '~' || fail "Neovim did not start in tmux" "$(screen)"
tmux -S "$socket" send-keys -t "$session" ':Slipway handoff prompt=rename it' Enter

# 1. The message shows the run, the agent's own words and how to answer.
if wait_screen "asks: $QUESTION on tm/ask (your worktree) — :Slipway reply"; then
  say "ok - tmux: the message shows the question the agent asked and how to answer it"
else
  fail "no message with the question" "$(screen)"
fi
asked=$(screen | sed -n 's/.*slipway: run \([^ ]*\) asks: .*/\1/p' | head -1)
[ -n "$asked" ] || check_failed "the question's message names no run" "$(screen)"

# 2. The status line of the worktree marks it as waiting for an answer, in
# both forms, with no highlight code left over as text.
if wait_screen '[⎇ tm/ask ?]'; then
  say "ok - tmux: the status line marks the run as needing input"
else
  check_failed "the status line never marked the run as needing input" "$(screen)"
fi
tmux -S "$socket" send-keys -t "$session" ':lua highlighted_status()' Enter
if wait_screen '{⎇ tm/ask ?}'; then
  say "ok - tmux: the highlighted status line shows the same mark"
else
  check_failed "the highlighted status line does not show the mark" "$(screen)"
fi

# 3. :Slipway reply asks for the answer under the question; the user types it.
tmux -S "$socket" send-keys -t "$session" ':Slipway reply' Enter
if wait_screen "slipway: answer to $asked:" && screen | grep -B1 -F "slipway: answer to $asked:" | grep -qF -- "$QUESTION"; then
  say "ok - tmux: :Slipway reply prompts for the answer under the question, naming the run"
else
  check_failed ":Slipway reply: no prompt with the question and the run" "$(screen)"
fi
tmux -S "$socket" send-keys -t "$session" -l "$ANSWER"
tmux -S "$socket" send-keys -t "$session" Enter
if wait_screen "answers $asked" && wait_screen '{⎇ tm/ask ⟳}'; then
  say "ok - tmux: the answering run starts, says which run it answers, and runs in the worktree"
else
  check_failed "no message of the answering run, or it does not run here" "$(screen)"
fi
replied=$(screen | sed -n "s/.*slipway: run \([^ ]*\) answers $asked.*/\1/p" | head -1)
: >"$work/gate"
# Its end, in this same worktree ("your worktree"), with its one commit.
if [ -n "$replied" ] && wait_screen "run $replied completed: 1 commit on tm/ask (your worktree)" && wait_screen '{⎇ tm/ask ✓}'; then
  say "ok - tmux: the answering run ends completed in the same worktree"
else
  check_failed "the end of the answering run is not on the screen" "$(screen)"
fi
got=$(git -C "$repo" show tm/ask:answer.txt 2>&1)
log=$(git -C "$repo" log --format=%s tm/ask 2>&1)
if [ "$got" = "$ANSWER" ] && [ "$log" = $'ask: the answer\nask: the work\ninitial' ] && [ "$(cat "$wt/answer.txt" 2>&1)" = "$ANSWER" ]; then
  say "ok - tmux: the reply saw the answer and committed it on the run's branch, in its worktree"
else
  check_failed "the branch does not hold the answer after both runs" "answer.txt: $got"$'\n'"log: $log"
fi

# 4. Answered: the mark is gone (the status line is the only line in braces).
status_line() { screen | grep '^{' | sed 's/ *$//'; }
if [ "$(status_line)" = '{⎇ tm/ask ✓}' ]; then
  say "ok - tmux: the status line no longer marks the run as needing input"
else
  check_failed "the status line still marks the run as needing input" "$(screen)"
fi

tmux -S "$socket" send-keys -t "$session" ':qa!' Enter
exit $status
