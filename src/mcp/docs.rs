//! What the model reads: the server's instructions and every tool's
//! description. They teach how to use handoff well, not only what each call
//! does — the descriptions are the product's manual for agents.

/// Sent once at initialize.
pub(crate) const INSTRUCTIONS: &str = "\
handoff connects you to the humans you work for. Use it when only a person can decide or act:
- Questions: `ask` one question per decision, with a stable `key` (re-asking with the same key updates it in \
place: one question, one place; never ask twice). Ask only what a human must decide; decide the rest yourself. \
Pick answers up with `pending` (or `ask` with wait_seconds). A reply of kind `clarify` means the human corrected \
an earlier answer or wants the question reworded: re-read it, then usually `resolve` and `ask` again (or advance \
the board row). When you have acted on an answer, `resolve` the question with its outcome.
- Boards: a checklist per goal (`board_upsert`, `board_row`, `board_get`). A row with status `blocked` waits on a \
person (say what in `next_step`). Every write carries the versions you read (`board_version`, row `revision`); a \
stale one is refused with the current values: re-read with `board_get` and retry. `board_advance` finishes a row's \
step and asks the next one.
- Actions: before ANY irreversible side effect (sending, deploying, deleting, paying), `propose_action` and wait \
for approval (`action_status` with wait_seconds). Only when it is approved: `claim_action`, run it with the \
returned effective_args (an approver may have edited them), then `complete_action`. Never run a rejected, \
expired or unapproved action.
- Sessions: `checkpoint` your state, record tool calls in the ledger (`ledger_record`), and after a restart or \
wake-up call `resume` first. With nothing else to do until a human answers, block in `wait`: it returns the \
next answer, decision or wake for your session, or `{\"waiting\": true}` after at most 50 s — then call it again.
Errors come back as results with isError and a JSON body {reason, message, detail}: read the message, it says \
what to do.";

pub(crate) const ASK: &str = "\
Ask a human a question (it reaches them in chat and the web Inbox). Returns the question with its `id` and \
`revision`.
One question, one place: give every question a stable `key` (e.g. `db-choice`). Calling ask again with the same \
key while it is open UPDATES that question in place (new wording, options, context) instead of creating a \
duplicate — use that to refine a question, never ask the same thing twice.
Ask only what a human must decide (a preference, an approval of direction, missing credentials or facts); \
decide routine things yourself. Keep the title one line (≤ 120 chars); offer 2–4 `options` when the choice \
is closed, and mark one `recommended` if you have a view; put background in `context`.
Set `wait_seconds` (≤ 600) to block for a reply and pick it up in the same call (`answered: true`, the reply in \
`question.reply`); on timeout (`timed_out: true`) the question stays open and `pending` will deliver the reply \
later. Without a wait, continue other work and call `pending` later.";

pub(crate) const PENDING: &str = "\
Collect what humans answered: replies on your open questions (`questions`, each with `new` true the first \
time) and responses on your board rows (`rows`: annotations and `handled` marks on blocked rows). New ones are \
marked picked up. Replies already delivered keep coming back until you `resolve` the question \
(`new_only: true` for only the new ones).
Reply kinds: `answer` — act on it, then resolve the question with the outcome; `decline` — the human will not \
answer: find another way and resolve; `clarify` — the earlier answer is corrected or the question needs \
rewording: re-read it, then usually resolve and ask again (same key), or advance the board row.
Defaults to this server's project and session.";

pub(crate) const ANSWER: &str = "\
Record an answer the human gave you directly (e.g. in your terminal) on a question you asked, so the chat and \
Inbox show it as answered. Refused (reason `unread_answer`) if a human already replied through chat or the \
Inbox and you have not picked it up: that reply is then delivered to you in `detail` — act on it instead.";

pub(crate) const RESOLVE: &str = "\
Close one of your questions once you have acted on its answer, with a one-line `outcome` (what was decided or \
done). Resolved questions stop coming back in `pending`. To change a question instead, ask again with the same \
key; to replace it after a `clarify`, resolve it and ask anew.";

pub(crate) const BOARD_UPSERT: &str = "\
Create or update a board (a named checklist for a goal in the project) and any of its rows, all or nothing. \
Rows are matched by `label`; fields you omit keep their stored value. For an existing board pass its current \
`board_version`, and for every existing row you touch its current `revision` (from board_get or the last \
write); omit both only to create. A stale version refuses the whole write (reason `stale`) with the current \
`board_version` and row revisions in `detail`: re-read with board_get and retry. Row status: tracked, partial, \
missing, na, done, blocked — `blocked` means a human must act: say what in `next_step`, who in `owner` \
(decision, task, approval), and offer `options` for a decision.";

pub(crate) const BOARD_ROW: &str = "\
Write one row of a board (create it, or change some of its fields) with CAS on the row's `revision` (and on \
`board_version` if you pass it). Use it to mark progress (status done / partial), to block a row on a human \
(status blocked + next_step), or to store the `outcome` of a step a human marked handled (a handled row stays \
blocked until you store a non-empty outcome). Stale → refused with the current values: re-read and retry.";

pub(crate) const BOARD_ADVANCE: &str = "\
Finish a row's current step and ask the human the next one, in one step: the current step (with the human's \
response and your `outcome`) is archived in the row's history, the response fields reset and the row is \
blocked on `next_step`. Needs the row's current `revision` and the board's current `board_version` (from \
board_get). A stale version is refused (isError, reason `stale`) and `detail` carries the current \
`board_version` and row revisions: re-read with board_get, check the row still needs advancing, and retry with \
the current values. Use it after a `clarify` or an answer that leads to a follow-up step.";

pub(crate) const BOARD_GET: &str = "\
Read a board with all its rows from the source of truth: statuses, human responses (annotation, \
annotation_kind, handled_at), history, progress, and the current `board_version` and row `revision`s that \
every write needs. Name the board by id, short id or title (a title is looked up in the project).";

pub(crate) const PROPOSE_ACTION: &str = "\
Propose an action BEFORE any irreversible or risky side effect (sending an email or message, deploying, \
deleting data, spending money, changing production). A human (or a configured rule) approves or rejects it; do \
NOT perform the side effect yourself until it is approved. `args` is exactly what will run (a JSON object); \
`summary` is one line for the person deciding. Use a `dedup_key` so a retry returns the same action instead of \
a second one. Then wait with action_status (wait_seconds); once `approved`: claim_action → run it with the \
claimed effective_args → complete_action. Rejected or expired: do not run it; tell the user or find another way.";

pub(crate) const ACTION_STATUS: &str = "\
Read an action's status: pending, approved, executing, executed, failed, unknown, rejected, expired. With \
`wait_seconds` (≤ 600) it blocks until the action is decided (`until: decided`, the default) or settled \
(`until: settled`), or the wait runs out (`timed_out: true` — a status, not an error: check again later). \
Approved means you may claim and run it.";

pub(crate) const CLAIM_ACTION: &str = "\
Claim an approved action right before running it (approved → executing), so it can never run twice. Returns \
the action with the REAL `effective_args` (an approver may have edited the proposed args): run exactly those. \
Refused (reason `not_claimable`) if it is not approved, already claimed or ran, rejected or expired — then do \
not run it. After running, call complete_action with the same `owner`. The claim lasts `lease_seconds` \
(default 300); if you never complete, the outcome becomes `unknown` and a human is asked.";

pub(crate) const COMPLETE_ACTION: &str = "\
Report how a claimed action's run ended: `success: true` (executed) with its `result`, or `success: false` \
(failed) with an `error`. Only the executor that claimed it may (same `owner`). Report honestly: a failed run \
is never retried silently.";

pub(crate) const CHECKPOINT: &str = "\
Save your working state (any JSON, ≤ 1 MiB) for this session, so a restarted or woken agent can pick up with \
`resume`. Pass the session's current `revision` from resume, or 0 while the session has no checkpoint yet (a \
session the SessionStart hook registered included): a stale one is refused with \
the current revision (someone else checkpointed) — resume, merge, retry. The first checkpoint registers the \
session if needed.";

pub(crate) const LEDGER_RECORD: &str = "\
Record a tool call in this session's execution ledger so a crash mid-call is visible: phase `started` with \
`tool`, `payload` and `replay_safe` BEFORE the call runs, then phase `completed` or `failed` with its `result` \
after, under the same `event_id` (your idempotency key). Recording the same thing twice is a no-op; a \
different payload under the same event_id is refused. Calls started and never finished show up in resume: \
replay only those declared replay_safe. The session must be registered first (the SessionStart hook or your \
first `checkpoint` registers it).";

pub(crate) const RESUME: &str = "\
Call first after a restart or a wake-up: returns this session's last checkpoint (`state`, `revision`), the \
ledger tail, calls started and never finished (`interrupted`: replay only if `disposition` is `replay`, \
otherwise check whether it took effect or ask a human), answers you have not resolved (a delivered one has \
`reply.seen_at`), board rows waiting on you, \
and action decisions. It marks nothing: use pending to pick answers up.";

pub(crate) const WAIT: &str = "\
Block until the next answer, decision or wake for your session arrives, and pick it up: returns \
`{\"waiting\": false, \"arrivals\": [...]}` the moment one comes (the same arrivals `handoff wait --session` \
prints: question replies, action decisions, board-row responses, wakes from outside). \
After at most `wait_seconds` (default and most 50, under your MCP client's 60 s tool timeout) with nothing \
arrived it returns `{\"waiting\": true}`: nothing is lost, so CALL `wait` AGAIN to keep waiting, for as long as \
you have nothing else to do. Use it after `ask` or `propose_action` instead of polling `pending` in a loop.";
