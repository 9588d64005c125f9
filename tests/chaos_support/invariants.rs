//! After the storm: let the last daemon settle (without recovering
//! anything from here: only the daemon and the agents' processes do, and
//! a person who taps Run now in chat on an approved action nobody is left
//! to run, see `humans::Settler`), then
//! check every invariant against the database, the fake
//! chat, the harness's own record of what it did and the files the
//! commands wrote, printing each as numbers. What a healthy run must show
//! is written out here, not taken from the code under test.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use super::raw::{Arg, Raw};
use super::{CHAT, Ctx, Log, RULE_EVENTS};
use crate::common::fake_telegram::FakeTelegram;
use handoff::store::Store;
use handoff::store::actions::Status;
use handoff::store::questions::ReplyRecord;
use serde_json::Value;

mod chat;
mod slack;

/// Every invariant, in the order they are printed.
pub const INVARIANTS: &[&str] = &[
    "no_lost_answer",
    "no_double_execution",
    "interrupted_are_unknown",
    "chat_message_per_item",
    "event_per_change",
    "audit_status_agree",
    "wake_delivered",
];

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// "id pid" lines as pairs.
fn pairs(path: &std::path::Path) -> Vec<(String, u32)> {
    lines(path)
        .iter()
        .map(|l| {
            let mut w = l.split_whitespace();
            let id = w.next().unwrap_or_default().to_string();
            let pid = w.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            (id, pid)
        })
        .collect()
}

async fn scalar(pool: &Raw, sql: &'static str) -> i64 {
    pool.scalar(sql, &[]).await
}

/// Whether an event of `kind` with `payload` must wake the `[[notify]]`
/// rule: the rule's event types, except what the agent did itself.
fn should_wake(kind: &str, payload: &Value) -> bool {
    RULE_EVENTS.contains(&kind) && payload["source"].as_str() != Some("agent")
}

/// One row of the event log.
struct Ev {
    seq: i64,
    kind: String,
    entity: String,
    actor: String,
    payload: Value,
}

/// The statuses an action kind of event moves between (docs/design.md §4):
/// the statuses it may follow and the one it leaves; `None` for a kind
/// that changes no status (an approval short of the quorum, a patch, a
/// refused attempt, an escalation step, a purge).
fn status_move(kind: &str) -> Option<(&'static [&'static str], &'static str)> {
    Some(match kind {
        "approved" => (&["pending"], "approved"),
        "rejected" => (&["pending"], "rejected"),
        "expired" => (&["pending"], "expired"),
        "claimed" => (&["approved"], "executing"),
        "verifying" => (&["executing"], "executing"),
        "executed" => (&["executing", "unknown"], "executed"),
        "failed" => (&["executing", "unknown"], "failed"),
        "unknown" => (&["executing"], "unknown"),
        "retry" => (&["executing", "unknown"], "approved"),
        _ => return None,
    })
}

/// Walk one action's events in order: each after-status (`payload.status`)
/// must follow from the one before by the event's kind. The last status,
/// or the first event that breaks the chain.
fn status_moves<'e>(evs: impl Iterator<Item = &'e Ev>) -> Result<String, String> {
    let mut now: Option<String> = None;
    for e in evs {
        let Some(kind) = e.kind.strip_prefix("action.") else {
            continue;
        };
        let after = e.payload["status"].as_str().unwrap_or("?").to_string();
        let ok = match (&now, kind, status_move(kind)) {
            (None, "proposed", _) => true,
            (None, ..) | (Some(_), "proposed", _) => false,
            (Some(before), _, Some((from, to))) => from.contains(&before.as_str()) && after == to,
            (Some(before), _, None) => *before == after,
        };
        if !ok {
            return Err(format!(
                "event {} ({}) moves {now:?} to {after}",
                e.seq, e.kind
            ));
        }
        now = Some(after);
    }
    now.ok_or_else(|| "no event".to_string())
}

/// Every event, in order.
async fn events(pool: &Raw) -> Vec<Ev> {
    let rows: Vec<(i64, String, String, String, String)> = pool
        .all(
            "SELECT seq, type, entity_id, actor, payload FROM events ORDER BY seq",
            &[],
        )
        .await;
    rows.into_iter()
        .map(|(seq, kind, entity, actor, p)| Ev {
            seq,
            kind,
            entity,
            actor,
            payload: serde_json::from_str(&p).unwrap_or_default(),
        })
        .collect()
}

/// The process id in an executor's claim owner (`who:pid:nonce`).
fn owner_pid(owner: &str) -> Option<u32> {
    owner.split(':').nth(1)?.parse().ok()
}

/// Expected wake-ups not yet delivered (no delivered row, or no line the
/// target wrote).
async fn undelivered_wakes(store: &Store, pool: &Raw, ctx: &Ctx) -> (usize, Vec<String>) {
    let want: Vec<i64> = events(pool)
        .await
        .into_iter()
        .filter(|e| should_wake(&e.kind, &e.payload))
        .map(|e| e.seq)
        .collect();
    let ran: HashSet<String> = pairs(&ctx.wakes()).into_iter().map(|(e, _)| e).collect();
    let delivered: HashSet<i64> = store
        .all_deliveries()
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.origin == "rule:chaos" && d.status == "delivered")
        .map(|d| d.event_seq)
        .collect();
    let missing = want
        .iter()
        .filter(|s| !delivered.contains(s) || !ran.contains(&format!("evt_{s}")))
        .map(|s| format!("evt_{s}"))
        .collect();
    (want.len(), missing)
}

/// Actions a settled round may not have: pending or executing, or
/// approved other than by a verifier's "rerun" (an approved `--exec`
/// action waits for a runner; when the racers have stopped after a
/// verifier sent it back, it rightly waits).
const LIVE_ACTIONS: &str = "SELECT COUNT(*) FROM actions a WHERE status IN ('pending', 'executing')
     OR (status = 'approved' AND (SELECT event FROM action_audit u WHERE u.action_id = a.id ORDER BY seq DESC LIMIT 1) <> 'retry')";

/// Changes the chat has not caught up with: events past the chat
/// follower's cursor, and messages marked as owing a redraw (a change the
/// killed daemon recorded but did not draw; the last one draws it after
/// start). Without this the check could read a message a moment before its
/// owed edit and call a correct daemon wrong. Pushes still on their way
/// (a burst's items waiting for their digest) are counted by
/// [`chat::WAITING`].
const OWED_REDRAWS: &str = "SELECT (SELECT COUNT(*) FROM events
         WHERE seq > COALESCE((SELECT seq FROM cursors WHERE name = 'chat'), 0))
     + (SELECT COUNT(*) FROM chat_messages WHERE dirty_at IS NOT NULL)";

/// The same for Slack: events past the Slack sender's cursor, and items
/// whose Slack message is owed a draw.
const SLACK_OWED: &str = "SELECT (SELECT COUNT(*) FROM events
         WHERE seq > COALESCE((SELECT seq FROM cursors WHERE name = 'slack'), 0))
     + (SELECT COUNT(*) FROM slack_owed)";

/// Wait until the last daemon has done everything it owes: leases lapsed
/// into `unknown`, pending actions expired, every tap taken from
/// Telegram, every item in chat, every wake-up delivered — meanwhile a
/// person taps Run now on approved actions nobody is left to run, as one
/// would on their message. Not getting there within `secs` is a violation.
pub async fn settle(
    store: &Store,
    pool: &Raw,
    fake: &FakeTelegram,
    ctx: &Ctx,
    secs: u64,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut said = Instant::now();
    let mut person = super::humans::Settler::default();
    loop {
        person.act(ctx, fake, pool).await;
        // Read again each time: the person's taps must be taken too.
        let updates: Vec<i64> = ctx.log().taps.iter().map(|t| t.update).collect();
        let live = scalar(pool, LIVE_ACTIONS).await;
        let no_msg = chat::items_without_message(pool, fake).await;
        let (_, no_wake) = undelivered_wakes(store, pool, ctx).await;
        let untaken = updates.iter().filter(|u| !fake.confirmed(**u)).count();
        let mut owed = scalar(pool, OWED_REDRAWS).await + scalar(pool, chat::WAITING).await;
        let mut untaken = untaken;
        if let Some(fake) = &ctx.slack {
            untaken += super::slack::unacked(ctx, fake);
            owed += scalar(pool, SLACK_OWED).await + slack::unposted(pool).await as i64;
        }
        if live == 0 && no_msg.is_empty() && no_wake.is_empty() && untaken == 0 && owed == 0 {
            return Ok(());
        }
        if said.elapsed() >= Duration::from_secs(10) {
            said = Instant::now();
            println!(
                "chaos: still settling: {live} live actions, {} items without a message, {} wakes undelivered, {untaken} taps not taken, {owed} changes owed",
                no_msg.len(),
                no_wake.len()
            );
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the last daemon did not settle in {secs} s: {live} actions pending, approved or executing, {} items without a message, {} wakes undelivered, {untaken} taps never taken, {owed} changes not yet applied or drawn in chat",
                no_msg.len(),
                no_wake.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Replay a trail of (transition, actor) — an action's audit rows or its
/// events — through the actions' transition table, counting distinct
/// approvers against `required`, the quorum the harness asked for. `Err`
/// names a transition that does not exist.
fn replay<'a>(
    trail: impl IntoIterator<Item = (&'a str, &'a str)>,
    required: i64,
) -> Result<Status, String> {
    use Status::*;
    let mut s: Option<Status> = None;
    let mut approvers: HashSet<&str> = HashSet::new();
    for (event, actor) in trail {
        let mut approve = |final_: bool| -> Result<(), String> {
            if !approvers.insert(actor) {
                return Err(format!("{actor} approved twice"));
            }
            let n = approvers.len() as i64;
            if final_ != (n >= required) {
                return Err(format!(
                    "{event} with {n} distinct approval(s) of {required}"
                ));
            }
            Ok(())
        };
        s = Some(match (s, event) {
            (None, "proposed") => Pending,
            (Some(Pending), "approval_added") => {
                approve(false)?;
                Pending
            }
            (Some(Pending), "patched") => Pending,
            (Some(Pending), "approved") => {
                approve(true)?;
                Approved
            }
            (Some(Pending), "rejected") => Rejected,
            (Some(Pending), "expired") => Expired,
            (Some(Approved), "claimed") => Executing,
            (Some(Executing), "verifying") => Executing,
            (Some(Executing | Unknown), "executed") => Executed,
            (Some(Executing | Unknown), "failed") => Failed,
            (Some(Executing), "unknown") => Unknown,
            (Some(Executing | Unknown), "retry") => Approved,
            (from, ev) => return Err(format!("no transition {from:?} --{ev}-->")),
        });
    }
    s.ok_or_else(|| "empty audit".to_string())
}

/// One invariant's tally.
struct Tally {
    name: &'static str,
    ok: usize,
    total: usize,
    note: String,
    violations: Vec<String>,
}

impl Tally {
    fn new(name: &'static str) -> Tally {
        Tally {
            name,
            ok: 0,
            total: 0,
            note: String::new(),
            violations: Vec::new(),
        }
    }

    fn check(&mut self, ok: bool, violation: impl FnOnce() -> String) {
        self.total += 1;
        if ok {
            self.ok += 1;
        } else {
            self.violations.push(violation());
        }
    }
}

/// Floors: each count a round must exceed zero on, or it exercised nothing.
struct Floors {
    unmet: Vec<String>,
    /// A burst round: the usual agents did not run.
    bursts: bool,
}

impl Floors {
    fn at_least(&mut self, what: &str, n: usize, min: usize) {
        if n < min {
            self.unmet
                .push(format!("floor: {what} was {n}, at least {min} required"));
        }
    }

    /// A floor on what only the usual agents do (asks that wait,
    /// proposals, runs, waits): none in a burst round.
    fn of_agents(&mut self, what: &str, n: usize, min: usize) {
        if !self.bursts {
            self.at_least(what, n, min);
        }
    }
}

/// What [`check`] found.
pub struct Checked {
    pub by_invariant: BTreeMap<&'static str, Vec<String>>,
    pub other: Vec<String>,
}

/// Check and print every invariant.
#[allow(clippy::too_many_arguments)]
pub async fn check(
    store: &Store,
    pool: &Raw,
    fake: &FakeTelegram,
    ctx: &Ctx,
    last_epoch: u64,
    floors_apply: bool,
    stranded: Option<&str>,
) -> Checked {
    let log: Log = std::mem::take(&mut *ctx.log());
    let mut floors = Floors {
        unmet: Vec::new(),
        bursts: ctx.bursts,
    };
    let mut tallies = Vec::new();

    // 1. No committed answer lost.
    let mut t = Tally::new("no_lost_answer");
    let questions: Vec<(String, String)> = pool.all("SELECT id, status FROM questions", &[]).await;
    let mut history_of: HashMap<String, Vec<ReplyRecord>> = HashMap::new();
    let mut reply_of: HashMap<String, Option<String>> = HashMap::new();
    for (id, _) in &questions {
        let q = store.get_question(id).await.unwrap().unwrap();
        let h = store.question_replies(id).await.unwrap();
        let seqs: Vec<i64> = h.iter().map(|r| r.reply_seq).collect();
        let last = h.last().and_then(|r| r.reply.clone());
        t.check(
            seqs == (1..=q.reply_seq).collect::<Vec<_>>()
                && last.as_ref() == q.reply.as_ref().map(|r| &r.text),
            || {
                format!(
                    "question {id}: history {seqs:?} / {last:?} vs reply_seq {} / {:?}",
                    q.reply_seq, q.reply
                )
            },
        );
        reply_of.insert(id.clone(), q.reply.map(|r| r.text));
        history_of.insert(id.clone(), h);
    }
    let in_history = |id: &str, source: &str, by: Option<&str>, text: &str| {
        history_of.get(id).is_some_and(|h| {
            h.iter().any(|r| {
                r.source.as_str() == source
                    && by.is_none_or(|b| r.by == b)
                    && r.reply.as_deref() == Some(text)
            })
        })
    };
    let mut inbox = 0;
    for (id, text) in &log.inbox_committed {
        inbox += 1;
        t.check(in_history(id, "inbox", None, text), || {
            format!("inbox reply {text:?} on {id} lost")
        });
    }
    // Every tap: taken from Telegram, answered at most once per time it
    // was delivered, and each of its "Recorded" answers backed by a
    // history row of its own — of the tapped question, by the tapping
    // user, with the tapped label — that no other tap's answer claims.
    // Each tap is matched by its callback id: a double tap with the same
    // label cannot lend its row to a first tap whose write was lost.
    let (mut option_taps, mut recorded, mut refused, mut unanswered, mut replayed) =
        (0, 0, 0, 0, 0);
    type Answer = (String, String, String);
    // (question, by, text) → the seqs of its chat history rows, in order.
    let mut rows_of: HashMap<Answer, Vec<i64>> = HashMap::new();
    for (id, h) in &history_of {
        // Slack's answers are matched against Slack's taps (`slack`).
        for r in h
            .iter()
            .filter(|r| r.source.as_str() == "chat" && !r.by.starts_with("slack:"))
        {
            if let Some(text) = &r.reply {
                rows_of
                    .entry((id.clone(), r.by.clone(), text.clone()))
                    .or_default()
                    .push(r.seq);
            }
        }
    }
    // How many rows of each answer the taps' "Recorded" answers took, and
    // how many more its taps could have written (one per delivery).
    let mut taken: HashMap<Answer, usize> = HashMap::new();
    let mut spare: HashMap<Answer, usize> = HashMap::new();
    for tap in &log.taps {
        let served = fake.served(tap.update) as usize;
        let answers = fake.answers_to(&tap.callback);
        if served > 1 {
            replayed += 1;
        }
        t.check(served >= 1, || {
            format!(
                "tap {} (update {}) never reached the bot",
                tap.callback, tap.update
            )
        });
        t.check(answers.len() <= served.max(1), || {
            format!(
                "tap {} delivered {served} time(s) got {} answers: {answers:?}",
                tap.callback,
                answers.len()
            )
        });
        let Some(label) = &tap.label else { continue };
        option_taps += 1;
        let by = format!("@user{}", tap.user);
        let key: Answer = (tap.item.clone(), by.clone(), label.clone());
        if answers.is_empty() {
            unanswered += 1;
        }
        let mut owns = 0;
        for a in &answers {
            if let Some(said) = a.strip_prefix("Recorded: ") {
                recorded += 1;
                t.check(said == label, || {
                    format!("tap {} on {label:?} was toasted {a:?}", tap.callback)
                });
                let rows = rows_of.get(&key).map_or(0, Vec::len);
                let took = taken.entry(key.clone()).or_default();
                t.check(*took < rows, || {
                    format!(
                        "tap {} by {by} on {label:?} (question {}) was toasted {a:?} but no history row is left for it: {rows} row(s) hold that answer, each claimed by an earlier tap",
                        tap.callback, tap.item
                    )
                });
                *took += 1;
                owns += 1;
            } else {
                refused += 1;
            }
        }
        *spare.entry(key).or_default() += served.max(1).saturating_sub(owns);
    }
    // And the other way: every chat answer in a history was written by a
    // tap of its own (one per delivery of it).
    for (key, rows) in &rows_of {
        let (id, by, text) = key;
        let unclaimed = rows
            .len()
            .saturating_sub(taken.get(key).copied().unwrap_or(0));
        let room = spare.get(key).copied().unwrap_or(0);
        t.check(unclaimed <= room, || {
            format!(
                "question {id}: {} chat answer(s) {text:?} by {by} (rows {rows:?}), more than its taps could have written ({} toasted, {room} more deliveries)",
                rows.len(),
                taken.get(key).copied().unwrap_or(0)
            )
        });
    }
    let mut picked = 0;
    for (id, seq, text) in &log.agent_got {
        picked += 1;
        let found = history_of.get(id).is_some_and(|h| {
            h.iter()
                .any(|r| r.reply_seq == *seq && r.reply.as_deref() == Some(text))
        });
        t.check(found, || {
            format!("ask --wait got {text:?} (seq {seq}) on {id}, not in history")
        });
    }
    // What `wait --session` handed out as replies: the session's own
    // questions, with a reply their history holds.
    let mut replies_arrived = 0;
    for (session, a) in log.arrived.iter().filter(|(_, a)| a["type"] == "reply") {
        replies_arrived += 1;
        let q = &a["question"];
        let id = q["id"].as_str().unwrap_or_default();
        let text = q["reply"]["text"].as_str().unwrap_or_default();
        t.check(
            q["session"].as_str() == Some(session.as_str())
                && in_history(id, q["reply"]["source"].as_str().unwrap_or_default(), None, text),
            || format!("wait --session {session} got reply {text:?} on {id} (session {}), not in its history", q["session"]),
        );
    }
    let slack_note = match &ctx.slack {
        Some(fake) => slack::answers(&mut t, &log, &history_of, fake, &mut floors),
        None => String::new(),
    };
    floors.of_agents("replies handed out by wait --session", replies_arrived, 1);
    floors.at_least("questions", questions.len(), 1);
    floors.at_least("option taps", option_taps, 1);
    floors.at_least("taps toasted \"Recorded\"", recorded, 1);
    floors.at_least("inbox replies the daemon accepted", inbox, 1);
    floors.of_agents("replies picked up by ask --wait", picked, 1);
    t.note = format!(
        "({} questions consistent with their history; {} taps, {option_taps} on options: {recorded} toasted \"Recorded\" and found in history, {refused} refused, {unanswered} unanswered (daemon killed first), {replayed} replayed after a restart; {inbox} inbox replies the daemon accepted found ({} refused, {} unanswered: the daemon was killed under them); {picked} picked up by ask --wait, {replies_arrived} handed out by wait --session)",
        questions.len(),
        log.taps.len(),
        log.inbox_refused,
        log.inbox_uncertain
    ) + &slack_note;
    tallies.push(t);

    // 2. No action executed twice; executed ones exactly once, by the
    // process that says it ran them.
    let mut t = Tally::new("no_double_execution");
    let effects = pairs(&ctx.side_effects());
    let mut runs_of: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (id, pid) in &effects {
        runs_of.entry(id.clone()).or_default().push(*pid);
    }
    let actions: Vec<(String, String, i64)> = pool
        .all("SELECT id, status, approvals_required FROM actions", &[])
        .await;
    let status_of: HashMap<&str, &str> = actions
        .iter()
        .map(|(id, s, _)| (id.as_str(), s.as_str()))
        .collect();
    // The quorum the harness asked for each action, found by its summary
    // (which the harness made unique), not the quorum its row holds.
    let summaries: Vec<(String, String)> = pool.all("SELECT id, summary FROM actions", &[]).await;
    let asked_of: HashMap<&str, (&str, Option<i64>)> = summaries
        .iter()
        .map(|(id, sum)| {
            (
                id.as_str(),
                (sum.as_str(), log.quorum_asked.get(sum).copied()),
            )
        })
        .collect();
    let mut audits = HashMap::new();
    for (id, ..) in &actions {
        audits.insert(id.clone(), store.action_audit(id).await.unwrap());
    }
    for (id, pids) in &runs_of {
        let approved = audits
            .get(id)
            .is_some_and(|a| a.iter().any(|e| e.event == "approved"));
        t.check(pids.len() == 1, || {
            format!(
                "action {id} ran more than once: {} runs, by pids {pids:?}",
                pids.len()
            )
        });
        t.check(approved, || {
            format!("action {id} ran (by pids {pids:?}) and was never approved")
        });
    }
    let mut executed = 0;
    for (id, status, _) in &actions {
        let n = runs_of.get(id).map_or(0, Vec::len);
        match status.as_str() {
            "executed" => {
                executed += 1;
                t.check(n == 1, || format!("executed action {id} ran {n} times"));
            }
            "rejected" | "expired" => {
                t.check(n == 0, || format!("{status} action {id} ran {n} times"));
            }
            _ => {}
        }
    }
    let (mut by_proposer, mut by_recover) = (0, 0);
    for p in &log.proposed {
        let pids = runs_of.get(&p.id).cloned().unwrap_or_default();
        let now = status_of.get(p.id.as_str()).copied().unwrap_or("missing");
        t.check(p.exit != Some(0) || p.status == "executed", || {
            format!("propose of {} exited 0 but printed {}", p.id, p.status)
        });
        t.check(
            p.status == now
                || !matches!(
                    p.status.as_str(),
                    "executed" | "failed" | "rejected" | "expired"
                ),
            || {
                format!(
                    "propose of {} printed {}, the store says {now}",
                    p.id, p.status
                )
            },
        );
        if p.status == "executed" {
            if p.claimed {
                by_proposer += 1;
                t.check(pids == [p.pid], || {
                    format!(
                        "propose {} says it ran {}, the side effects say {pids:?}",
                        p.pid, p.id
                    )
                });
            } else {
                t.check(pids.len() == 1 && pids[0] != p.pid, || {
                    format!(
                        "propose {} followed another run of {}, the side effects say {pids:?}",
                        p.pid, p.id
                    )
                });
            }
        }
    }
    for (pid, id, claimed) in &log.recover_ran {
        if !claimed {
            continue;
        }
        by_recover += 1;
        let pids = runs_of.get(id).cloned().unwrap_or_default();
        t.check(pids == [*pid], || {
            format!("recover {pid} says it ran {id}, the side effects say {pids:?}")
        });
    }
    floors.of_agents("side effects", effects.len(), 1);
    floors.of_agents("executed actions", executed, 1);
    floors.of_agents("runs by their proposer", by_proposer, 1);
    floors.of_agents("runs won by a recover racer", by_recover, 1);
    t.note = format!(
        "({} side effects over {} actions, {executed} executed with exactly one; {by_proposer} run by their proposer, {by_recover} by a `handoff recover` racer, {} recover runs, {} proposals with a verifier)",
        effects.len(),
        runs_of.len(),
        log.recovers,
        log.verified_proposals
    );
    tallies.push(t);

    // 3. Every interrupted execution is `unknown` (or went to its
    // verifier), none left executing — as the daemon and the agents left
    // it: nothing here recovers.
    let mut t = Tally::new("interrupted_are_unknown");
    let mut interrupted = 0;
    for (id, status, _) in &actions {
        let audit = &audits[id];
        let Some(last_claim) = audit.iter().rposition(|e| e.event == "claimed") else {
            continue;
        };
        let after = &audit[last_claim..];
        let finished = after
            .iter()
            .any(|e| matches!(e.event.as_str(), "executed" | "failed"));
        if after.iter().any(|e| e.event == "retry") {
            // Its verifier found nothing done and sent it back for a re-run.
            interrupted += 1;
            t.check(status == "approved", || {
                format!("action {id} claimed, sent back by its verifier, is {status}")
            });
        } else if !finished {
            interrupted += 1;
            t.check(status == "unknown", || {
                format!("action {id} claimed, never finished, is {status}")
            });
        }
    }
    let mut caught = 0;
    for (id, pid, _) in &log.executor_kills {
        let audit = &audits[id];
        let owner = format!("exec:{pid}:");
        let Some(claim) = audit
            .iter()
            .position(|e| e.event == "claimed" && e.actor.starts_with(&owner))
        else {
            t.check(false, || {
                format!("killed executor {pid} never claimed {id}")
            });
            continue;
        };
        let next = audit[claim + 1..].first().map(|e| e.event.as_str());
        if matches!(next, Some("unknown" | "verifying")) {
            caught += 1;
        }
        t.check(
            matches!(next, Some("unknown" | "verifying" | "executed" | "failed")),
            || format!("action {id}: its executor {pid} was killed and the claim was followed by {next:?}"),
        );
    }
    let executing = scalar(
        pool,
        "SELECT COUNT(*) FROM actions WHERE status = 'executing'",
    )
    .await;
    t.check(executing == 0, || {
        format!("{executing} actions still executing")
    });
    let unknown = actions.iter().filter(|(_, s, _)| s == "unknown").count();
    let verifying = audits
        .values()
        .flatten()
        .filter(|e| e.event == "verifying")
        .count();
    let kills = &log.executor_kills;
    floors.of_agents("executors killed mid-command", kills.len(), 1);
    floors.of_agents("kills recovered as unknown or verified", caught, 1);
    t.note = format!(
        "({interrupted} interrupted, {unknown} unknown, {verifying} sent to their verifier; {} executors killed -9 mid-command ({} with their whole group), {caught} of them recovered by the daemon or a racer; {executing} executing)",
        kills.len(),
        kills.iter().filter(|(.., g)| *g).count()
    );
    tallies.push(t);

    // 4. Every question and action is shown once per chat and topic it
    // is routed to: its own card in its final state, or one digest.
    let t = chat::message_per_item(pool, fake, ctx, &log, &reply_of, last_epoch, &mut floors).await;
    let ids: Vec<&str> = questions
        .iter()
        .map(|(id, _)| id.as_str())
        .chain(actions.iter().map(|(id, ..)| id.as_str()))
        .collect();
    tallies.push(t);
    // And exactly once in Slack, with Slack on.
    if let Some(slack) = &ctx.slack {
        tallies.push(slack::message_per_item(pool, slack, ctx, &reply_of, &mut floors).await);
    }

    // 5. Every change has its event — checked against what the harness
    // itself saw happen, not only against the audit rows the same trigger
    // writes with the events: each run's side effect and each executor
    // seen executing has the `action.claimed` event of its process; each
    // proposal printed, approval counted, Inbox reply accepted and reply
    // `ask --wait` printed has its event; each action's events replay,
    // through the transition table, to the status its row holds; and each
    // question's events match its history and status.
    let mut t = Tally::new("event_per_change");
    let evs = events(pool).await;
    let mut events_of: HashMap<&str, Vec<&Ev>> = HashMap::new();
    for e in &evs {
        events_of.entry(e.entity.as_str()).or_default().push(e);
    }
    let of = |id: &str, kind: &str| -> Vec<&Ev> {
        events_of
            .get(id)
            .into_iter()
            .flatten()
            .filter(|e| e.kind == kind)
            .copied()
            .collect()
    };
    let claimed_by = |id: &str, pid: u32| {
        of(id, "action.claimed")
            .iter()
            .any(|e| owner_pid(&e.actor) == Some(pid))
    };
    for (id, pid) in &effects {
        t.check(claimed_by(id, *pid), || {
            format!("action {id}: process {pid} ran it (its side effect) and no action.claimed event names that process")
        });
    }
    for (id, pid, _) in &log.executor_kills {
        t.check(claimed_by(id, *pid), || {
            format!("action {id}: process {pid} was seen executing it and no action.claimed event names that process")
        });
    }
    for p in &log.proposed {
        t.check(of(&p.id, "action.proposed").len() == 1, || {
            format!(
                "action {}: printed by propose, {} action.proposed events",
                p.id,
                of(&p.id, "action.proposed").len()
            )
        });
    }
    for (id, approver) in &log.inbox_approved {
        let found = of(id, "action.approval_added")
            .into_iter()
            .chain(of(id, "action.approved"))
            .any(|e| e.actor == *approver);
        t.check(found, || {
            format!("action {id}: the store counted {approver}'s approval and no approval event names them")
        });
    }
    let answered = |id: &str, ok: &dyn Fn(&Value) -> bool| {
        of(id, "question.answered").iter().any(|e| ok(&e.payload))
    };
    for (id, text) in &log.inbox_committed {
        t.check(
            answered(id, &|p| p["source"] == "inbox" && p["text"] == text.as_str()),
            || format!("question {id}: inbox reply {text:?} accepted and no question.answered event holds it"),
        );
    }
    for (id, seq, text) in &log.agent_got {
        t.check(
            answered(id, &|p| p["reply_seq"] == *seq && p["text"] == text.as_str()),
            || format!("question {id}: ask --wait got {text:?} (seq {seq}) and no question.answered event holds it"),
        );
    }
    for (id, status, _) in &actions {
        let required = asked_of.get(id.as_str()).and_then(|a| a.1).unwrap_or(1);
        let trail = events_of
            .get(id.as_str())
            .into_iter()
            .flatten()
            .filter_map(|e| Some((e.kind.strip_prefix("action.")?, e.actor.as_str())));
        let replayed = replay(trail, required);
        t.check(
            replayed.as_ref().is_ok_and(|s| s.as_str() == status),
            || format!("action {id}: status {status}, its events replay to {replayed:?}"),
        );
        // The log is the audit: every status change of the row is one
        // event whose kind allows it and whose after-status is the next.
        let moved = status_moves(events_of.get(id.as_str()).into_iter().flatten().copied());
        t.check(moved.as_ref().is_ok_and(|last| last == status), || {
            format!("action {id}: status {status}, its events' statuses {moved:?}")
        });
    }
    for (id, status) in &questions {
        let got: Vec<&str> = events_of
            .get(id.as_str())
            .into_iter()
            .flatten()
            .map(|e| e.kind.as_str())
            .collect();
        let count = |k: &str| got.iter().filter(|g| **g == k).count();
        let h = &history_of[id];
        let replies = h.iter().filter(|r| r.reply.is_some()).count();
        let cleared = h.len() - replies;
        let closed = match status.as_str() {
            "resolved" => count("question.resolved") == 1,
            "dismissed" => count("question.dismissed") == 1,
            _ => count("question.resolved") + count("question.dismissed") == 0,
        };
        t.check(
            count("question.flagged") == 1
                && count("question.answered") == replies
                && count("question.reply_cleared") == cleared
                && closed,
            || {
                format!(
                    "question {id} ({status}): {} history rows ({replies} replies), events {got:?}",
                    h.len()
                )
            },
        );
    }
    floors.at_least("events", evs.len(), 1);
    t.note = format!(
        "({} events over {} items; {} side effects, {} executors seen executing, {} proposals, {} counted Inbox approvals, {} accepted Inbox replies and {} replies picked up matched to their events)",
        evs.len(),
        ids.len(),
        effects.len(),
        log.executor_kills.len(),
        log.proposed.len(),
        log.inbox_approved.len(),
        log.inbox_committed.len(),
        log.agent_got.len()
    );
    tallies.push(t);

    // 6. Audit and status agree for every action, approvals counted
    // against the quorum the harness asked for (and the row holds that
    // quorum); nothing is left pending or approved.
    let mut t = Tally::new("audit_status_agree");
    let mut quorum_two = 0;
    for (id, status, required) in &actions {
        let (summary, asked) = asked_of.get(id.as_str()).copied().unwrap_or(("?", None));
        t.check(asked.is_some(), || {
            format!("action {id} ({summary:?}) is no proposal the harness made")
        });
        let asked = asked.unwrap_or(*required);
        t.check(asked == *required, || {
            format!(
                "action {id}: the harness asked for a quorum of {asked}, its row holds {required}"
            )
        });
        let trail = audits[id]
            .iter()
            .map(|e| (e.event.as_str(), e.actor.as_str()));
        let replayed = replay(trail, asked);
        t.check(
            replayed.as_ref().is_ok_and(|s| s.as_str() == status),
            || format!("action {id}: status {status}, audit replays to {replayed:?}"),
        );
        let rerun = audits[id].last().is_some_and(|e| e.event == "retry");
        t.check(
            !matches!(status.as_str(), "pending" | "executing") && (status != "approved" || rerun),
            || format!("action {id} left {status}"),
        );
        if asked == 2 && audits[id].iter().any(|e| e.event == "approved") {
            quorum_two += 1;
        }
    }
    let approvals_off = scalar(
        pool,
        "SELECT COUNT(*) FROM actions a WHERE approvals <> (SELECT COUNT(*) FROM action_approvals p WHERE p.action_id = a.id)",
    )
    .await;
    t.check(approvals_off == 0, || {
        format!("{approvals_off} actions whose approvals disagree with their approval rows")
    });
    floors.of_agents("actions", actions.len(), 1);
    floors.of_agents("quorum-2 actions approved", quorum_two, 1);
    // The agents' CLI calls go through the daemon's socket while it lives
    // (and are killed with it): each such write leaves its request id.
    // (PostgreSQL has no socket: the CLI writes to the server itself.)
    if !ctx.postgres() {
        let through_socket = scalar(pool, "SELECT COUNT(DISTINCT key) FROM requests").await;
        floors.at_least(
            "CLI calls written through the daemon's socket",
            through_socket as usize,
            1,
        );
    }
    let by_status = actions.iter().fold(BTreeMap::new(), |mut m, (_, s, _)| {
        *m.entry(s.as_str()).or_insert(0) += 1;
        m
    });
    // The action left behind after the storm: run once, from chat, by a
    // person's Run now (its proposer and the racers had stopped).
    if let Some(id) = stranded {
        let status = status_of.get(id).copied().unwrap_or("missing");
        let runs = runs_of.get(id).map_or(0, Vec::len);
        let tapped = log.settle_runs.iter().any(|r| r == id);
        t.check(status == "executed" && runs == 1 && tapped, || {
            format!("action {id}, left approved after the storm: {status}, run {runs} times, Run now tapped: {tapped}")
        });
    }
    let settled: HashSet<&String> = log.settle_runs.iter().collect();
    t.note = format!(
        "(statuses {by_status:?}; {quorum_two} approved at a quorum of 2; {} approved actions nobody was left to run{}, taken by a person's Run now after the storm)",
        settled.len(),
        if stranded.is_some() {
            ", one of them left so on purpose"
        } else {
            ""
        }
    );
    tallies.push(t);

    // 7. Every event the rule wakes on reached its target; nothing else
    // did; and no daemon ran one wake-up twice (a second run is allowed
    // only from a later daemon, after a kill).
    let mut t = Tally::new("wake_delivered");
    let (total, missing) = undelivered_wakes(store, pool, ctx).await;
    for m in &missing {
        t.check(false, || format!("wake {m} not delivered"));
    }
    t.ok += total - missing.len();
    t.total += total - missing.len();
    let wanted: HashSet<String> = evs
        .iter()
        .filter(|e| should_wake(&e.kind, &e.payload))
        .map(|e| format!("evt_{}", e.seq))
        .collect();
    let ran = pairs(&ctx.wakes());
    let mut runs: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (ev, pid) in &ran {
        t.check(wanted.contains(ev), || {
            format!("wake {ev} ran but its event wakes nobody")
        });
        runs.entry(ev.as_str()).or_default().push(*pid);
    }
    let mut dups = 0;
    for (ev, pids) in &runs {
        let mut distinct = pids.clone();
        distinct.sort();
        distinct.dedup();
        dups += pids.len() - 1;
        t.check(distinct.len() == pids.len(), || {
            format!(
                "wake {ev} ran {} times by daemons {pids:?}: one daemon ran it twice",
                pids.len()
            )
        });
    }
    // What `wait --session` handed out as decisions: events of the
    // session's own actions, each exactly as the log holds it, none twice.
    const DECISIONS: &[&str] = &[
        "action.approved",
        "action.rejected",
        "action.expired",
        "action.executed",
        "action.failed",
        "action.unknown",
    ];
    let by_seq: HashMap<i64, (&str, &str)> = evs
        .iter()
        .map(|e| (e.seq, (e.kind.as_str(), e.entity.as_str())))
        .collect();
    let mut handed: HashSet<i64> = HashSet::new();
    for (session, a) in log.arrived.iter().filter(|(_, a)| a["type"] == "decision") {
        let ev = &a["event"];
        let seq = ev["seq"].as_i64().unwrap_or(-1);
        let kind = ev["type"].as_str().unwrap_or_default();
        let entity = ev["entity_id"].as_str().unwrap_or_default();
        t.check(
            by_seq.get(&seq) == Some(&(kind, entity))
                && DECISIONS.contains(&kind)
                && ev["session"].as_str() == Some(session.as_str()),
            || format!("wait --session {session} got {ev}, which is not one of its decisions in the log"),
        );
        t.check(handed.insert(seq), || {
            format!("decision evt_{seq} handed out twice")
        });
    }
    floors.of_agents("decisions handed out by wait --session", handed.len(), 1);
    floors.at_least("wake-ups delivered", total - missing.len(), 1);
    t.note = format!(
        "({} runs of the exec target, {dups} repeated by a later daemon after a kill; {} decisions handed out by wait --session)",
        ran.len(),
        handed.len()
    );
    tallies.push(t);

    println!(
        "chaos agents: {} asks, {} proposals ({} with a verifier), {} recovers, {} waits ({} arrivals); humans: {} taps, {} inbox replies, {} inbox approvals; weather: {} Telegram faults",
        log.asks,
        log.proposals,
        log.verified_proposals,
        log.recovers,
        log.waits,
        log.arrived.len(),
        log.taps.len(),
        log.inbox_committed.len(),
        log.inbox_approvals,
        log.weather
    );
    floors.at_least("Telegram faults injected", log.weather as usize, 1);
    if ctx.slack.is_some() {
        println!(
            "chaos Slack: {} taps, {} Slack faults",
            log.slack_taps.len(),
            log.slack_weather
        );
        floors.at_least("Slack faults injected", log.slack_weather as usize, 1);
    }
    // Several daemons: the jobs only one may do moved between them (chat
    // messages sent and taps answered by more than one daemon process) and
    // the wake-ups were run by more than one.
    if ctx.daemons.lock().unwrap().len() > 1 {
        let senders: HashSet<u64> = fake.messages(CHAT).iter().map(|m| m.epoch).collect();
        floors.at_least("daemon processes that sent chat messages", senders.len(), 2);
        let answerers: HashSet<u64> = fake
            .calls("answerCallbackQuery")
            .iter()
            .filter_map(|c| c.token_epoch)
            .collect();
        floors.at_least("daemon processes that answered taps", answerers.len(), 2);
        let wakers: HashSet<u32> = pairs(&ctx.wakes()).into_iter().map(|(_, p)| p).collect();
        floors.at_least("daemon processes that ran wake-ups", wakers.len(), 2);
    }
    let mut by_invariant = BTreeMap::new();
    for t in tallies {
        let verdict = if t.violations.is_empty() {
            "ok"
        } else {
            "VIOLATED"
        };
        println!(
            "invariant {}: {}/{} {verdict} {}",
            t.name, t.ok, t.total, t.note
        );
        for v in t.violations.iter().take(5) {
            println!("  {v}");
        }
        by_invariant.insert(t.name, t.violations);
    }
    let mut other: Vec<String> = log
        .unexpected
        .iter()
        .map(|u| format!("agent process: {u}"))
        .collect();
    if floors_apply {
        for f in &floors.unmet {
            println!("{f}");
        }
        other.extend(floors.unmet);
    }
    Checked {
        by_invariant,
        other,
    }
}

/// Print what the database and the last daemon's log say about every item
/// a violation names, to make a failure readable.
pub async fn explain(violations: &[String], pool: &Raw, daemon_log: &str) {
    let mut ids: Vec<&str> = violations
        .iter()
        .flat_map(|v| v.split_whitespace())
        .filter(|w| w.len() == 32 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    ids.sort();
    ids.dedup();
    for id in ids.into_iter().take(10) {
        let rows: Vec<(String, i64, Option<i64>, String, i64)> = pool
            .all(
                "SELECT item_kind, chat_id, message_id, status, revision FROM chat_messages WHERE item_id = ?",
                &[Arg::Text(id)],
            )
            .await;
        let events: Vec<(i64, String, String)> = pool
            .all(
                "SELECT seq, type, channel FROM events WHERE entity_id = ? ORDER BY seq",
                &[Arg::Text(id)],
            )
            .await;
        println!("item {id}: chat_messages {rows:?}\n  events {events:?}");
        let short = &id[id.len() - 8..];
        for line in daemon_log
            .lines()
            .filter(|l| l.contains(id) || l.contains(short))
            .take(10)
        {
            println!("  log: {line}");
        }
    }
    let cursors: Vec<(String, i64)> = pool.all("SELECT name, seq FROM cursors", &[]).await;
    println!("cursors {cursors:?}");
}

/// The status walk fails where the log misses a change: a claim with no
/// event (the skip-event fault) leaves `approved → executed`.
#[test]
fn status_moves_catch_a_change_with_no_event() {
    let ev = |seq: i64, kind: &str, status: &str| Ev {
        seq,
        kind: format!("action.{kind}"),
        entity: "a".into(),
        actor: "x".into(),
        payload: serde_json::json!({ "status": status }),
    };
    let whole = [
        ev(1, "proposed", "pending"),
        ev(2, "approval_added", "pending"),
        ev(3, "approved", "approved"),
        ev(4, "claimed", "executing"),
        ev(5, "executed", "executed"),
    ];
    assert_eq!(status_moves(whole.iter()), Ok("executed".to_string()));
    let skipped = [&whole[0], &whole[1], &whole[2], &whole[4]];
    let err = status_moves(skipped.into_iter()).unwrap_err();
    assert!(err.contains("event 5 (action.executed)"), "{err}");
    let quiet = [&whole[0], &ev(2, "refused_attempt", "approved")];
    assert!(
        status_moves(quiet.into_iter()).is_err(),
        "a refusal changes nothing"
    );
}
