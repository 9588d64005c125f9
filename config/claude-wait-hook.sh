#!/bin/sh
# Claude Code Stop hook (run with "asyncRewake": true): wait in the background
# for a person to respond to this session, then wake Claude with what arrived.
#
# Claude Code passes the hook input as JSON on stdin; its `session_id` is the
# handoff session (claude-session-start-hook.sh exported it as
# HANDOFF_SESSION, so the agent's `handoff ask` / `propose` carry the same id).
# On exit 2 Claude Code feeds the hook's stderr to the model, so the arrival
# is printed there. A timeout (handoff's exit 5) ends quietly with 0.
set -u
input=$(cat)
sid=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("session_id", ""))' 2>/dev/null) ||
  sid=$(printf '%s' "$input" | sed -n 's/.*"session_id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
[ -n "$sid" ] || exit 0
handoff wait --session "$sid" --timeout "${HANDOFF_WAIT_TIMEOUT:-30m}" --exit-code 2 >&2 2>/dev/null
rc=$?
[ "$rc" -eq 5 ] && exit 0
exit "$rc"
