#!/usr/bin/env bash
# A real Neovim in tmux: `:Slipway review` shows the quickfix list and the two
# diff windows on the screen (`tmux capture-pane -p`), and a two-line message
# sent while typing in Insert mode is one line, without "Press ENTER", and is
# on the screen after Insert mode ends.
#
# Run by scripts/nvim-test.sh with NVIM_BIN, SLIPWAY_BIN, ROOT and a hermetic
# HOME/git config in the environment; prints `ok - …` / `FAIL - …` lines.
# tmux is installed with apt-get when missing; if it cannot be, the test fails.
set -uo pipefail
. "$(dirname "$0")/tmux_lib.sh"

if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -qq tmux || { apt-get update -qq && apt-get install -y -qq tmux; }) >/dev/null 2>&1
  fi
  command -v tmux >/dev/null 2>&1 || fail "tmux is not installed and apt-get install tmux failed"
fi

tmux_setup slipway-test

# A repository with a worktree holding one commit.
tmux_repo
out=$("$SLIPWAY_BIN" --repo "$repo" --json worktree create --branch tm/one --source host-head 2>&1) || fail "slipway worktree create" "$out"
wt=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
printf 'hello\nfrom tmux\n' >"$wt/README.md"
git -C "$wt" commit -q -am 'tmux change'

cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:prepend('$ROOT/editors/nvim')
vim.o.swapfile = false
vim.g.slipway = { cmd = { '$SLIPWAY_BIN', 'lsp' } }
LUA


tmux -S "$socket" new-session -d -s "$session" -x 160 -y 40 \
  "cd '$repo' && exec '$NVIM_BIN' -u '$work/init.lua' -i NONE" || fail "tmux new-session"
# Neovim is up once it draws its empty buffer; keys sent from then on reach it.
wait_screen '~' || fail "Neovim did not start in tmux" "$(screen)"
tmux -S "$socket" send-keys -t "$session" ':Slipway review tm/one' Enter

if wait_screen 'slipway review tm/one' && wait_screen 'slipway://tm/one@base/README.md'; then
  s=$(screen)
  ok=1
  printf '%s' "$s" | grep -qF 'README.md|' || ok=0              # the quickfix entry
  printf '%s' "$s" | grep -qF 'modified +1 -0' || ok=0        # its text
  printf '%s' "$s" | grep -qF 'from tmux' || ok=0             # the worktree side
  printf '%s' "$s" | grep -qF 'Press ENTER' && ok=0
  if [ $ok = 1 ]; then
    say "ok - tmux: :Slipway review shows the quickfix list and the diff windows"
  else
    check_failed ":Slipway review: the screen lacks the quickfix entry or the diff" "$s"
  fi
else
  check_failed ":Slipway review: no quickfix list and base buffer on the screen" "$(screen)"
fi

# A two-line message while typing in Insert mode: sent once Insert mode has
# begun and the typed text is on the screen; it leaves a file when it is sent.
sent=$work/sent
tmux -S "$socket" send-keys -t "$session" Escape ':tabnew' Enter
tmux -S "$socket" send-keys -t "$session" ":lua vim.api.nvim_create_autocmd('TextChangedI', { once = true, callback = function() vim.schedule(function() require('slipway.util').notify('sent in insert mode\\nsecond line'); vim.fn.writefile({}, '$sent') end) end })" Enter
tmux -S "$socket" send-keys -t "$session" 'i' 'typing'
wait_for test -e "$sent" || check_failed "the message in Insert mode was never sent" "$(screen)"
tmux -S "$socket" send-keys -t "$session" Escape
wait_screen 'slipway: sent in insert mode (:Slipway details)'
s=$(screen)
if printf '%s' "$s" | grep -qF 'Press ENTER'; then
  check_failed "a message asked Press ENTER" "$s"
elif ! printf '%s\n' "$s" | grep -v '^[[:space:]]*$' | tail -1 | grep -qF 'slipway: sent in insert mode (:Slipway details)'; then
  check_failed "the Insert-mode message is not on the last line after Insert mode ended" "$s"
else
  say "ok - tmux: a message sent in Insert mode is one line, shown again after Insert mode"
fi
tmux -S "$socket" send-keys -t "$session" ':qall!' Enter
exit $status
