//! Every statement the store runs for a list, a page, a count, a sweep or
//! a recovery pass over actions and the event log is served by an index:
//! the test drives a scripted history through the public API, records
//! every statement sqlx sends (its `sqlx::query` tracing event carries the
//! text), and asks SQLite for each one's `EXPLAIN QUERY PLAN`. A plan that
//! scans `actions` or `events` row by row fails it, naming the statement.
//! Recording what ran, rather than a list of statements kept here, means a
//! new statement is checked the day it is added.

mod common;

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use common::{TempDb, new_action, raw_pool};
use handoff::clock::Clock;
use handoff::store::actions::{Actor, ClaimOutcome, OnExpire, Resolution};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

/// Statements that read every row by design, each with why. Nothing else
/// may scan `actions` or `events`.
const WHOLE_TABLE: &[(&str, &str)] = &[
    (
        "ORDER BY created_at DESC, id DESC",
        "the action list reads every action of the project and cuts its page in memory",
    ),
    (
        "substr(id, -length($1))",
        "a short id is a suffix of the full one: matched against every id",
    ),
    (
        "AND ($1 IS NULL OR at >= $1)",
        "the audit export reads every audit entry of the log, in order (an operator's command)",
    ),
    (
        "WHERE created_at < $1",
        "the purge's report counts what it keeps (an operator's command, not a transition)",
    ),
];

static SEEN: OnceLock<&'static Mutex<Vec<String>>> = OnceLock::new();

struct Record(&'static Mutex<Vec<String>>);

impl<S: tracing::Subscriber> Layer<S> for Record {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" {
            return;
        }
        let mut v = Text::default();
        event.record(&mut v);
        // sqlx writes the full text only when it differs from the summary.
        let sql = if v.statement.trim().is_empty() {
            v.summary
        } else {
            v.statement
        };
        self.0.lock().unwrap().push(sql);
    }
}

#[derive(Default)]
struct Text {
    summary: String,
    statement: String,
}

impl tracing::field::Visit for Text {
    fn record_str(&mut self, f: &tracing::field::Field, value: &str) {
        match f.name() {
            "summary" => self.summary = value.to_string(),
            "db.statement" => self.statement = value.to_string(),
            _ => {}
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

fn seen() -> &'static Mutex<Vec<String>> {
    SEEN.get_or_init(|| {
        let v: &'static Mutex<Vec<String>> = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Registry::default().with(Record(v)))
            .expect("the only subscriber of this test binary");
        v
    })
}

/// `sql` cut into its statements at semicolons outside quotes.
fn statements(sql: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                cur.push(c);
            }
            ';' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether a plan line reads `actions` or `events` row by row.
fn full_scan(line: &str) -> bool {
    ["actions", "events"].iter().any(|t| {
        let scan = format!("SCAN {t}");
        line.starts_with(&scan)
            && line[scan.len()..]
                .chars()
                .next()
                .is_none_or(|c| c == ' ' && !line.contains("INDEX"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_pages_counts_and_recovery_use_indexes() {
    let seen = seen();
    let db = TempDb::new();
    let (store, clock) = db.open_manual(1_800_000_000_000).await;
    let t0 = clock.now_ms();
    // Only what the history runs, not the schema's migrations.
    seen.lock().unwrap().clear();

    // A history touching every read and sweep: proposals with and without
    // expiry, dedup keys, decisions, a claim, a completion, a lapse to
    // unknown and its resolution, an expiry, an escalation pass, a purge.
    let mut ids = Vec::new();
    for i in 0..6 {
        let mut n = new_action("deploy", &format!(r#"{{"n":{i}}}"#));
        n.dedup_key = Some(format!("d{i}"));
        if i % 2 == 0 {
            n.ttl_ms = Some(60_000);
            n.on_expire = if i == 4 {
                OnExpire::Reject
            } else {
                OnExpire::Expire
            };
        }
        ids.push(store.propose(&n).await.unwrap().action.id);
    }
    store
        .propose(&new_action("deploy", r#"{"n":0}"#))
        .await
        .unwrap();
    store
        .approve(&ids[1], Actor::cli("alice"), None)
        .await
        .unwrap();
    store
        .approve(&ids[3], Actor::cli("alice"), None)
        .await
        .unwrap();
    store
        .approve(&ids[5], Actor::cli("alice"), None)
        .await
        .unwrap();
    store
        .reject(&ids[2], Actor::cli("bob"), "no")
        .await
        .unwrap();
    let claimed = store.claim(&ids[1], "runner", 1_000).await.unwrap();
    assert!(
        matches!(claimed, ClaimOutcome::Claimed { .. }),
        "{claimed:?}"
    );
    store
        .complete(
            &ids[1],
            "runner",
            true,
            serde_json::json!({"ok": true}),
            None,
        )
        .await
        .unwrap();
    store.claim(&ids[3], "runner", 1_000).await.unwrap();
    store.extend_lease(&ids[3], "runner", 1_000).await.unwrap();
    store.claimable().await.unwrap();
    store.next_housekeeping_due().await.unwrap();
    clock.set(t0 + 120_000);
    store.counts(None).await.unwrap();
    store.counts(Some("proj")).await.unwrap();
    store.overview().await.unwrap();
    store.expire_due().await.unwrap();
    store.expire_due_in(Some("proj")).await.unwrap();
    store.escalate_due().await.unwrap();
    for a in store.lapsed().await.unwrap() {
        store.lapse_to_unknown(&a).await.unwrap();
    }
    store
        .resolve_unknown(&ids[3], Actor::cli("alice"), Resolution::Executed)
        .await
        .unwrap()
        .unwrap();
    store.next_housekeeping_due().await.unwrap();
    store.get_action(&ids[0]).await.unwrap();
    store.get_action_in(&ids[0], Some("proj")).await.unwrap();
    store
        .list_action_summaries(None, Some("proj"))
        .await
        .unwrap();
    store.action_audit(&ids[1]).await.unwrap();
    store
        .audit_export(None, Some("proj"), "t", handoff::store::Channel::Cli)
        .await
        .unwrap();
    store.events_page(0, 5).await.unwrap();
    store.events_tail(5).await.unwrap();
    store.events_for("action", &ids[1]).await.unwrap();
    store.last_event_seq().await.unwrap();
    store.purge_actions(t0 + 100_000).await.unwrap();

    let ran: BTreeSet<String> = seen
        .lock()
        .unwrap()
        .iter()
        .flat_map(|s| statements(s))
        .collect();
    let pool = raw_pool(&db.path).await;
    let mut checked = 0;
    let mut audit_read = false;
    let mut scans = Vec::new();
    for sql in &ran {
        let word = sql
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        if !["SELECT", "UPDATE", "DELETE", "INSERT", "WITH"].contains(&word.as_str()) {
            continue;
        }
        if !(sql.contains("actions") || sql.contains("events")) {
            continue;
        }
        let plan: Vec<(i64, i64, i64, String)> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
                .fetch_all(&pool)
                .await
                .unwrap_or_else(|e| panic!("EXPLAIN QUERY PLAN {sql}: {e}"));
        checked += 1;
        let lines: Vec<&str> = plan.iter().map(|(_, _, _, d)| d.as_str()).collect();
        if sql.contains("entity_id = $1 AND audit IS NOT NULL") {
            // One action's audit, read from the log (docs/design.md §4).
            audit_read = true;
            assert!(
                lines.iter().any(|l| l.contains("events_entity")),
                "the audit read uses events_entity: {lines:?}"
            );
        }
        if lines.iter().any(|l| full_scan(l))
            && !WHOLE_TABLE.iter().any(|(needle, _)| sql.contains(needle))
        {
            scans.push(format!("{sql}\n  => {lines:?}"));
        }
    }
    assert!(checked >= 20, "only {checked} statements checked: {ran:?}");
    assert!(audit_read, "the audit read ran: {ran:?}");
    assert!(scans.is_empty(), "full scans:\n{}", scans.join("\n\n"));
}

#[test]
fn a_full_scan_is_told_from_an_index_scan() {
    assert!(full_scan("SCAN actions"));
    assert!(full_scan("SCAN events"));
    assert!(!full_scan(
        "SCAN actions USING COVERING INDEX actions_project_status"
    ));
    assert!(!full_scan(
        "SEARCH actions USING INDEX actions_executing (lease_until<?)"
    ));
    assert!(!full_scan("SCAN action_approvals"));
    assert_eq!(
        statements("SAVEPOINT a; SELECT ';'; RELEASE a"),
        ["SAVEPOINT a", "SELECT ';'", "RELEASE a"]
    );
}
