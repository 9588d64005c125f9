#!/bin/sh
# Claude Code SessionStart hook: register the session with handoff and export
# HANDOFF_SESSION for every later Bash command of the session (through
# $CLAUDE_ENV_FILE), so `handoff ask`, `propose` and `board upsert` carry the
# id that the Stop hook (claude-wait-hook.sh) waits on.
set -u
input=$(cat)
sid=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("session_id", ""))' 2>/dev/null) ||
  sid=$(printf '%s' "$input" | sed -n 's/.*"session_id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
[ -n "$sid" ] || exit 0
if [ -n "${CLAUDE_ENV_FILE:-}" ]; then
  printf 'export HANDOFF_SESSION=%s\n' "$sid" >>"$CLAUDE_ENV_FILE"
fi
handoff session register --session "$sid" --agent claude --cwd "$PWD" \
  --project "${HANDOFF_PROJECT:-$(basename "$PWD")}" >/dev/null 2>&1 || true
exit 0
