#!/usr/bin/env bash
# A real Neovim in tmux, read off the screen: `:Slipway attempts GROUP` shows a
# group of three attempts with their check results (attempt 3's fails), and
# `L` on attempt 2 with the confirmation answered lands it and prints what was
# landed and what was discarded; the branches say the same.
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

tmux_setup slipway-attempts
tmux_repo

# Three attempts on try/1…3, each committing a file naming its branch.
agent=$work/commit-attempt
cat >"$agent" <<'SH'
#!/bin/sh
set -eu
printf '%s\n' "$SLIPWAY_SOURCE_BRANCH" > attempt.txt
git add attempt.txt
git commit -q -m "attempt $SLIPWAY_SOURCE_BRANCH"
SH
chmod +x "$agent"
out=$("$SLIPWAY_BIN" --repo "$repo" --json run --attempts 3 --branch try \
  --check 'test "$SLIPWAY_SOURCE_BRANCH" != try/3 && echo fine || { echo broken; exit 4; }' \
  --prompt 'write attempt.txt' -- "$agent" 2>&1) || fail "slipway run --attempts 3" "$out"
group=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["groupId"])') ||
  fail "no groupId in the group's answer" "$out"
winner=$(git -C "$repo" rev-parse try/2)

cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:prepend('$ROOT/editors/nvim')
vim.o.swapfile = false
vim.g.slipway = { cmd = { '$SLIPWAY_BIN', 'lsp' } }
LUA

tmux -S "$socket" new-session -d -s "$session" -x 160 -y 40 \
  "cd '$repo' && exec '$NVIM_BIN' -u '$work/init.lua' -i NONE" || fail "tmux new-session"
wait_screen '~' || fail "Neovim did not start in tmux" "$(screen)"
tmux -S "$socket" send-keys -t "$session" ":Slipway attempts $group" Enter

if wait_screen "attempts $group" && wait_screen 'fail (exit 4)'; then
  s=$(screen)
  ok=1
  printf '%s' "$s" | grep -qF '<CR> diff' || ok=0                    # the keys line
  [ "$(printf '%s\n' "$s" | grep -c 'completed.*pass')" = 2 ] || ok=0 # attempts 1 and 2 pass
  printf '%s' "$s" | grep -q 'completed.*fail (exit 4).*try/3' || ok=0
  printf '%s' "$s" | grep -qF 'Press ENTER' && ok=0
  if [ $ok = 1 ]; then
    say "ok - tmux: :Slipway attempts shows the three attempts with their check results"
  else
    check_failed ":Slipway attempts: the table lacks a row or its check result" "$s"
  fi
else
  check_failed ":Slipway attempts: no table on the screen" "$(screen)"
fi

# The cursor starts on attempt 1: one line down is attempt 2.
tmux -S "$socket" send-keys -t "$session" j L
if wait_screen 'losing their work'; then
  # vim.ui.select's own list: the second item discards the others even losing their work.
  tmux -S "$socket" send-keys -t "$session" 2 Enter
  if wait_screen 'landed attempt 2 (try/2) into main'; then
    s=$(screen)
    ok=1
    printf '%s' "$s" | grep -qF 'discarded attempts 1, 3' || ok=0
    printf '%s' "$s" | grep -qF 'Press ENTER' && ok=0
    [ "$(git -C "$repo" rev-parse main)" = "$winner" ] || ok=0
    [ "$(git -C "$repo" branch --list --format='%(refname:short)' 'try/*')" = try/2 ] || ok=0
    if [ $ok = 1 ]; then
      say "ok - tmux: L lands attempt 2 and the message names the discarded attempts"
    else
      check_failed "L: the message, main or the branches are not what landing attempt 2 makes" \
        "$s
main: $(git -C "$repo" rev-parse main) (want $winner)
branches: $(git -C "$repo" branch --list 'try/*')"
    fi
  else
    check_failed "L: no landed message on the screen" "$(screen)"
  fi
else
  check_failed "L: no confirmation on the screen" "$(screen)"
fi
if wait_screen 'try/1 (gone)'; then
  say "ok - tmux: the view shows the discarded attempts gone"
else
  check_failed "the view does not show try/1 gone" "$(screen)"
fi

tmux -S "$socket" send-keys -t "$session" Escape ':qall!' Enter
exit $status
