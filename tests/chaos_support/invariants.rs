//! After the storm: let the last daemon settle, then check every invariant
//! of issue 7 against the database, the fake chat and the files the
//! commands wrote, printing each as numbers. Returns the violations.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::actions::{AuditEntry, Status};
use sqlx::SqlitePool;

use super::{CHAT, Ctx, RULE_EVENTS};
use crate::common::fake_telegram::FakeTelegram;

/// Event ids the `[[notify]]` rule must have delivered: every event of a
/// rule type that wakes anyone.
async fn expected_wakes(store: &Store) -> Vec<i64> {
    store
        .events_after(0, i64::MAX)
        .await
        .unwrap()
        .iter()
        .filter(|e| RULE_EVENTS.contains(&e.kind.as_str()) && handoff::notify::wakes(e))
        .map(|e| e.seq)
        .collect()
}

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

async fn scalar(pool: &SqlitePool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// Items (kind, id) without a chat message the fake holds.
async fn items_without_message(pool: &SqlitePool, fake: &FakeTelegram) -> (usize, Vec<String>) {
    let items: Vec<(String, String)> = sqlx::query_as(
        "SELECT 'question', id FROM questions UNION ALL SELECT 'action', id FROM actions",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let sent: Vec<(String, String, Option<i64>)> = sqlx::query_as(
        "SELECT item_kind, item_id, message_id FROM chat_messages WHERE status = 'sent' AND chat_id = ?",
    )
    .bind(CHAT)
    .fetch_all(pool)
    .await
    .unwrap();
    let shown: HashSet<(String, String)> = sent
        .into_iter()
        .filter(|(_, _, m)| m.is_some_and(|m| fake.message(CHAT, m).is_some()))
        .map(|(k, i, _)| (k, i))
        .collect();
    let missing = items
        .iter()
        .filter(|i| !shown.contains(*i))
        .map(|(k, i)| format!("{k} {i}"))
        .collect();
    (items.len(), missing)
}

async fn undelivered_wakes(store: &Store, ctx: &Ctx) -> (usize, Vec<String>) {
    let want = expected_wakes(store).await;
    let file: HashSet<String> = lines(&ctx.wakes()).into_iter().collect();
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
        .filter(|s| !delivered.contains(s) || !file.contains(&handoff::notify::event_id(**s)))
        .map(|s| format!("evt_{s}"))
        .collect();
    (want.len(), missing)
}

/// Wait (bounded) until the last daemon has done everything it owes:
/// leases lapsed into `unknown`, pending actions expired, every item in
/// chat, every wake-up delivered.
pub async fn settle(store: &Store, pool: &SqlitePool, fake: &FakeTelegram, ctx: &Ctx) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        store.recover().await.unwrap();
        let live = scalar(
            pool,
            "SELECT COUNT(*) FROM actions WHERE status IN ('pending', 'executing')",
        )
        .await;
        let (_, no_msg) = items_without_message(pool, fake).await;
        let (_, no_wake) = undelivered_wakes(store, ctx).await;
        if live == 0 && no_msg.is_empty() && no_wake.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            println!(
                "settle timed out: {live} live actions, {} items without a message, {} wakes undelivered",
                no_msg.len(),
                no_wake.len()
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Replay an audit trail through DESIGN §4's transition table. `Err` names
/// a transition that does not exist.
fn replay(audit: &[AuditEntry]) -> Result<Status, String> {
    use Status::*;
    let mut s: Option<Status> = None;
    for e in audit {
        s = Some(match (s, e.event.as_str()) {
            (None, "proposed") => Pending,
            (Some(Pending), "approval_added" | "patched") => Pending,
            (Some(Pending), "approved") => Approved,
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

/// Check and print every invariant; return the violations (empty: all held).
pub async fn check(
    store: &Store,
    pool: &SqlitePool,
    fake: &FakeTelegram,
    ctx: &Ctx,
) -> Vec<String> {
    let log = std::mem::take(&mut *ctx.log());
    let mut tallies = Vec::new();

    // 1. No committed answer lost.
    let mut t = Tally::new("no_lost_answer");
    let qids: Vec<String> = sqlx::query_scalar("SELECT id FROM questions")
        .fetch_all(pool)
        .await
        .unwrap();
    let mut history_of = HashMap::new();
    for id in &qids {
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
        history_of.insert(id.clone(), h);
    }
    let in_history = |id: &str, source: &str, text: &str| {
        history_of.get(id).is_some_and(|h| {
            h.iter()
                .any(|r| r.source.as_str() == source && r.reply.as_deref() == Some(text))
        })
    };
    let (mut inbox, mut chat, mut picked) = (0, 0, 0);
    for (id, text) in &log.inbox_committed {
        inbox += 1;
        t.check(in_history(id, "inbox", text), || {
            format!("inbox reply {text:?} on {id} lost")
        });
    }
    for toast in fake.toasts() {
        if let Some(label) = toast.strip_prefix("Recorded: ") {
            chat += 1;
            let found = history_of
                .iter()
                .any(|(id, _)| in_history(id, "chat", label));
            t.check(found, || {
                format!("chat tap recorded {label:?} but not in any history")
            });
        }
    }
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
    t.note = format!(
        "({} questions consistent with their history; committed replies found: {inbox} inbox, {chat} chat taps toasted \"Recorded\", {picked} picked up by ask --wait)",
        qids.len()
    );
    tallies.push(t);

    // 2. No action executed twice; executed ones exactly once.
    let mut t = Tally::new("no_double_execution");
    let effects = lines(&ctx.side_effects());
    let mut per_action: BTreeMap<String, usize> = BTreeMap::new();
    for id in &effects {
        *per_action.entry(id.clone()).or_default() += 1;
    }
    let actions: Vec<(String, String)> = sqlx::query_as("SELECT id, status FROM actions")
        .fetch_all(pool)
        .await
        .unwrap();
    let mut audits = HashMap::new();
    for (id, _) in &actions {
        audits.insert(id.clone(), store.action_audit(id).await.unwrap());
    }
    for (id, n) in &per_action {
        let approved = audits
            .get(id)
            .is_some_and(|a| a.iter().any(|e| e.event == "approved"));
        t.check(*n == 1 && approved, || {
            format!("action {id}: {n} side effects, approved: {approved}")
        });
    }
    let executed: Vec<&String> = actions
        .iter()
        .filter(|(_, s)| s == "executed")
        .map(|(id, _)| id)
        .collect();
    for id in &executed {
        let n = per_action.get(*id).copied().unwrap_or(0);
        t.check(n == 1, || {
            format!("executed action {id} has {n} side effects")
        });
    }
    t.note = format!(
        "({} side effects over {} actions, {} executed with exactly one)",
        effects.len(),
        per_action.len(),
        executed.len()
    );
    tallies.push(t);

    // 3. Every interrupted execution is `unknown`, none left executing.
    let mut t = Tally::new("interrupted_are_unknown");
    let mut interrupted = 0;
    for (id, status) in &actions {
        let audit = &audits[id];
        let Some(last_claim) = audit.iter().rposition(|e| e.event == "claimed") else {
            continue;
        };
        let finished = audit[last_claim..]
            .iter()
            .any(|e| matches!(e.event.as_str(), "executed" | "failed"));
        if !finished {
            interrupted += 1;
            t.check(status == "unknown", || {
                format!("action {id} claimed, never finished, is {status}")
            });
        }
    }
    let executing = scalar(
        pool,
        "SELECT COUNT(*) FROM actions WHERE status = 'executing'",
    )
    .await;
    t.check(executing == 0, || {
        format!("{executing} actions still executing after recover()")
    });
    let kills = &log.executor_kills;
    let unknown = actions.iter().filter(|(_, s)| s == "unknown").count();
    t.note = format!(
        "({interrupted} interrupted, {unknown} unknown; {} executors killed -9 mid-command, {} with their whole group; 0 executing)",
        kills.len(),
        kills.iter().filter(|(_, g)| *g).count()
    );
    // Most kills land mid-command: with five or more, none ending `unknown`
    // would mean the path was not exercised.
    if kills.len() >= 5 {
        t.check(unknown > 0, || {
            "executors were killed, yet no action is unknown".into()
        });
    }
    tallies.push(t);

    // 4. Every question and action got at least one chat message.
    let mut t = Tally::new("chat_message_per_item");
    let (total, missing) = items_without_message(pool, fake).await;
    t.total = total;
    t.ok = total - missing.len();
    t.violations = missing
        .into_iter()
        .map(|m| format!("{m} has no chat message"))
        .collect();
    t.note = format!("({} messages in the chat)", fake.messages(CHAT).len());
    tallies.push(t);

    // 5. Event seq has no gaps.
    let mut t = Tally::new("event_seq_no_gaps");
    let (n, lo, hi): (i64, Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT COUNT(*), MIN(seq), MAX(seq) FROM events")
            .fetch_one(pool)
            .await
            .unwrap();
    t.check(lo == Some(1) && hi == Some(n), || {
        format!("{n} events, seq {lo:?}..={hi:?}")
    });
    t.note = format!("(seq 1..={} with {n} events)", hi.unwrap_or(0));
    tallies.push(t);

    // 6. Audit and status agree for every action.
    let mut t = Tally::new("audit_status_agree");
    for (id, status) in &actions {
        let replayed = replay(&audits[id]);
        t.check(
            replayed.as_ref().is_ok_and(|s| s.as_str() == status),
            || format!("action {id}: status {status}, audit replays to {replayed:?}"),
        );
    }
    let approvals_ok = sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM actions a WHERE approvals <> (SELECT COUNT(*) FROM action_approvals p WHERE p.action_id = a.id)",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    t.check(approvals_ok == 0, || {
        format!("{approvals_ok} actions whose approvals disagree with their approval rows")
    });
    let by_status = actions.iter().fold(BTreeMap::new(), |mut m, (_, s)| {
        *m.entry(s.as_str()).or_insert(0) += 1;
        m
    });
    t.note = format!("(statuses {by_status:?})");
    tallies.push(t);

    // 7. Every wake-up event reached its target at least once.
    let mut t = Tally::new("wake_delivered");
    let (total, missing) = undelivered_wakes(store, ctx).await;
    t.total = total;
    t.ok = total - missing.len();
    t.violations = missing
        .into_iter()
        .map(|m| format!("wake {m} not delivered"))
        .collect();
    let lines_n = lines(&ctx.wakes()).len();
    t.note = format!("({lines_n} runs of the exec target: duplicates after a crash are allowed)");
    tallies.push(t);

    println!(
        "chaos agents: {} asks, {} proposals, {} waits ({} arrivals); humans: {} taps, {} inbox replies, {} inbox approvals",
        log.asks,
        log.proposals,
        log.waits,
        log.arrivals,
        log.taps,
        log.inbox_committed.len(),
        log.inbox_approvals
    );
    let mut violations = Vec::new();
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
        violations.extend(t.violations.into_iter().map(|v| format!("{}: {v}", t.name)));
    }
    for u in &log.unexpected {
        violations.push(format!("agent process: {u}"));
    }
    violations
}

/// Print what the database and the last daemon's log say about every item
/// a violation names, to make a failure readable.
pub async fn explain(violations: &[String], pool: &SqlitePool, daemon_log: &str) {
    let mut ids: Vec<&str> = violations
        .iter()
        .flat_map(|v| v.split_whitespace())
        .filter(|w| w.len() == 32 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    ids.sort();
    ids.dedup();
    for id in ids.into_iter().take(10) {
        let rows: Vec<(String, i64, Option<i64>, String, i64)> = sqlx::query_as(
            "SELECT item_kind, chat_id, message_id, status, revision FROM chat_messages WHERE item_id = ?",
        )
        .bind(id)
        .fetch_all(pool)
        .await
        .unwrap();
        let events: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, type, channel FROM events WHERE entity_id = ? ORDER BY seq",
        )
        .bind(id)
        .fetch_all(pool)
        .await
        .unwrap();
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
    let cursors: Vec<(String, i64)> = sqlx::query_as("SELECT name, seq FROM cursors")
        .fetch_all(pool)
        .await
        .unwrap();
    println!("cursors {cursors:?}");
}
