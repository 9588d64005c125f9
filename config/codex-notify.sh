#!/bin/sh
# Codex `notify` program: after each turn, (re)register this Codex thread as
# the handoff session $HANDOFF_SESSION with an exec wake target that resumes
# the thread when a person responds.
#
# Start Codex with a session id of your choosing, which its tool calls
# inherit (so `handoff ask` / `propose` carry it):
#     HANDOFF_SESSION=codex-$(date +%s) codex
# and in ~/.codex/config.toml:
#     notify = ["/home/you/.config/handoff/codex-notify.sh"]
# Codex passes the notification JSON as the last argument.
set -u
[ -n "${HANDOFF_SESSION:-}" ] || exit 0
payload=${1:-}
thread=$(printf '%s' "$payload" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("thread-id", ""))' 2>/dev/null) ||
  thread=$(printf '%s' "$payload" | sed -n 's/.*"thread-id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
[ -n "$thread" ] || exit 0
prompt="handoff: a person responded. Run \`handoff session resume --session $HANDOFF_SESSION\` and continue."
# argv, no shell interpolation of the values: sh -c gets them as $1..$3.
handoff session register --session "$HANDOFF_SESSION" --agent codex --cwd "$PWD" \
  --wake-exec -- sh -c 'cd "$1" && exec codex exec resume "$2" "$3"' sh "$PWD" "$thread" "$prompt" \
  >/dev/null 2>&1 || true
exit 0
