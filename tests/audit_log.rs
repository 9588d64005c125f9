//! The event log is the audit (docs/design.md §4): a scripted history of
//! every transition kind reads back, entry for entry, as the old audit
//! table held it; the log refuses UPDATE, DELETE and TRUNCATE; a purge
//! keeps the purged actions' entries. Both engines.
//!
//! `audit_log_support/history.json` is what the old audit table held for
//! the script: written by running `history_reads_as_the_old_audit_table`
//! with `HANDOFF_WRITE_AUDIT_GOLDEN=1` on the code before the log became
//! the audit, and checked against it on both engines there too.

mod common;

use common::engine::{Db, Engine};
use common::new_action;
use handoff::config::Escalation;
use handoff::store::Store;
use handoff::store::actions::{Actor, OnExpire, Resolution, Verdict};
use serde_json::{Value, json};

const T0: i64 = 1_800_000_000_000;
const MIN: i64 = 60_000;
const GOLDEN: &str = "tests/audit_log_support/history.json";
const LOG_GOLDEN: &str = "tests/audit_log_support/log.json";

/// The script's actions by label, and the names to hide in what it reads
/// back (ids, recoverers' names: random per run).
struct History {
    labels: Vec<(&'static str, String)>,
    hidden: Vec<(String, String)>,
}

impl History {
    fn add(&mut self, label: &'static str, id: String) -> String {
        self.hidden.push((id.clone(), label.to_string()));
        self.labels.push((label, id.clone()));
        id
    }

    /// Every action's audit, in script order, with the random names hidden.
    async fn trails(&self, s: &Store) -> Value {
        let mut out = Vec::new();
        for (label, id) in &self.labels {
            let Ok(trail) = s.action_audit(id).await else {
                continue; // purged
            };
            for e in trail {
                out.push(json!({
                    "action": label, "at": e.at - T0, "actor": e.actor,
                    "event": e.event, "details": e.details,
                }));
            }
        }
        let mut text = serde_json::to_string(&out).unwrap();
        for (name, label) in &self.hidden {
            text = text.replace(name.as_str(), label);
        }
        serde_json::from_str(&text).unwrap()
    }
}

/// Patch and quorum, claim, execute.
async fn patched_quorum(s: &Store, h: &mut History) {
    let mut n = new_action("email.send", r#"{"to":"bob","password":"s3cr3t"}"#);
    n.approvals_required = 2;
    let id = h.add("quorum", s.propose(&n).await.unwrap().action.id);
    s.approve(&id, Actor::cli("alice"), Some(r#"{"to":"carol"}"#))
        .await
        .unwrap();
    s.approve(&id, Actor::cli("bob"), None).await.unwrap();
    s.claim(&id, "exec-1", 5_000).await.unwrap();
    s.complete(&id, "exec-1", true, json!({"token": "t0k", "ok": 1}), None)
        .await
        .unwrap();
}

/// An action that will lapse: approved and claimed with a short lease.
async fn claimed(s: &Store, h: &mut History, label: &'static str) -> String {
    let id = h.add(
        label,
        s.propose(&new_action(label, "{}")).await.unwrap().action.id,
    );
    s.approve(&id, Actor::cli("ann"), None).await.unwrap();
    s.claim(&id, "exec-2", 10).await.unwrap();
    id
}

/// Expiry, escalation, a refused attempt, a rejection, an unknown outcome
/// resolved by hand, two verifiers, a pending action, then a purge.
async fn script(db: &Db) -> (Store, History) {
    let (s, clock) = db.open_manual(T0).await;
    let mut h = History {
        labels: Vec::new(),
        hidden: Vec::new(),
    };
    patched_quorum(&s, &mut h).await;
    let mut n = new_action("expiring", "{}");
    n.ttl_ms = Some(10);
    h.add("expired", s.propose(&n).await.unwrap().action.id);
    let mut n = new_action("deploy", r#"{"a":1}"#);
    n.ttl_ms = Some(60 * MIN);
    n.on_expire = OnExpire::Reject;
    n.escalation = vec![Escalation {
        at: 10 * MIN,
        to: "#team".into(),
        chat: Some("team".into()),
        topic: None,
        slack: None,
        webhook: None,
    }];
    let esc = h.add("escalated", s.propose(&n).await.unwrap().action.id);
    let lost = claimed(&s, &mut h, "resolved").await;
    let verified = claimed(&s, &mut h, "verified").await;
    let unsure = claimed(&s, &mut h, "unsure").await;
    h.add(
        "pending",
        s.propose(&new_action("later", "{}"))
            .await
            .unwrap()
            .action
            .id,
    );
    clock.advance(10 * MIN);
    s.expire_due().await.unwrap();
    s.escalate_due().await.unwrap();
    s.audit_refused_attempt(&esc, Actor::cli("mallory"), "not an approver")
        .await
        .unwrap();
    s.reject(&esc, Actor::cli("carol"), "no").await.unwrap();
    let a = s.get_action(&lost).await.unwrap();
    s.lapse_to_unknown(&a).await.unwrap();
    s.resolve_unknown(&lost, Actor::cli("ann"), Resolution::Retry)
        .await
        .unwrap()
        .unwrap();
    s.claim(&lost, "exec-3", 5_000).await.unwrap();
    s.complete(&lost, "exec-3", false, json!(null), Some("boom"))
        .await
        .unwrap();
    for (id, verdict, who) in [
        (&verified, Ok(Verdict::Executed), "V1"),
        (&unsure, Err("no answer".to_string()), "V2"),
    ] {
        let a = s.get_action(id).await.unwrap();
        let me = s
            .take_for_verifier(&a, &["verify".to_string()])
            .await
            .unwrap()
            .unwrap();
        h.hidden.push((me.clone(), who.to_string()));
        let a = s.get_action(id).await.unwrap();
        s.record_verdict(&a, &me, &verdict).await.unwrap().unwrap();
    }
    s.resolve_unknown(&unsure, Actor::cli("bo"), Resolution::Executed)
        .await
        .unwrap()
        .unwrap();
    (s, h)
}

async fn history_reads_as_the_old_audit_table(db: Db) {
    let (s, h) = script(&db).await;
    let before = h.trails(&s).await;
    s.purge_actions(T0 + 20 * MIN).await.unwrap();
    let after = h.trails(&s).await;
    let got = json!({"before_purge": before, "after_purge": after});
    if std::env::var_os("HANDOFF_WRITE_AUDIT_GOLDEN").is_some() && db.engine == Engine::Sqlite {
        let text = serde_json::to_string_pretty(&got).unwrap();
        std::fs::write(GOLDEN, text + "\n").unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(GOLDEN).unwrap()).unwrap();
    for (part, n) in [("before_purge", 30), ("after_purge", 1)] {
        let w = want[part].as_array().unwrap();
        assert!(w.len() >= n, "{part}: the script wrote its history");
        let g = got[part].as_array().unwrap();
        for (i, (g, w)) in g.iter().zip(w).enumerate() {
            assert_eq!(g, w, "{part}: entry {i}");
        }
        assert_eq!(g.len(), w.len(), "{part}: as many entries");
    }
}

both_engines!(history_reads_as_the_old_audit_table);

/// The log the script writes, every action event as stored (type, actor,
/// channel, project, session, time, payload and audit text, byte for
/// byte), equals `audit_log_support/log.json`: written with
/// `HANDOFF_WRITE_LOG_GOLDEN=1` by the code whose transition triggers read
/// the `t_*` columns on the action row, before the statements appended
/// the events themselves (docs/design.md §4, §6).
async fn history_writes_the_same_log(db: Db) {
    let (_s, h) = script(&db).await;
    let rows = db
        .rows(
            "SELECT type, entity_id, actor, channel, project, session, CAST(at - 1800000000000 AS TEXT),
                    payload, COALESCE(audit, '-')
             FROM events WHERE entity_kind = 'action' ORDER BY seq",
        )
        .await;
    let mut text = serde_json::to_string(&rows).unwrap();
    for (name, label) in &h.hidden {
        text = text.replace(name.as_str(), label);
    }
    let got: Value = serde_json::from_str(&text).unwrap();
    if std::env::var_os("HANDOFF_WRITE_LOG_GOLDEN").is_some() && db.engine == Engine::Sqlite {
        let text = serde_json::to_string_pretty(&got).unwrap();
        std::fs::write(LOG_GOLDEN, text + "\n").unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(LOG_GOLDEN).unwrap()).unwrap();
    let (g, w) = (got.as_array().unwrap(), want.as_array().unwrap());
    assert!(w.len() >= 30, "the script wrote its history");
    for (i, (g, w)) in g.iter().zip(w).enumerate() {
        assert_eq!(g, w, "event {i}");
    }
    assert_eq!(g.len(), w.len(), "as many events");
}

both_engines!(history_writes_the_same_log);

/// The log refuses UPDATE and DELETE of its entries (and TRUNCATE on
/// PostgreSQL, which runs no DELETE trigger) with the engine's message.
async fn the_log_refuses_update_delete_and_truncate(db: Db) {
    let s = db.open().await;
    let a = s.propose(&new_action("k", "{}")).await.unwrap().action;
    s.reject(&a.id, Actor::cli("r"), "no").await.unwrap();
    let mut refused = vec![
        "UPDATE events SET audit = '{}' WHERE audit IS NOT NULL",
        "UPDATE events SET audit = NULL",
        "DELETE FROM events WHERE audit IS NOT NULL",
    ];
    if db.engine == Engine::Postgres {
        refused.push("TRUNCATE events");
    }
    for sql in refused {
        let err = db.exec(sql, &[]).await.unwrap_err();
        assert_eq!(err, "events are append-only", "{sql}");
    }
    let trail = s.action_audit(&a.id).await.unwrap();
    let names: Vec<&str> = trail.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["proposed", "rejected"]);
}

both_engines!(the_log_refuses_update_delete_and_truncate);

#[path = "audit_log_support/migration.rs"]
mod migration;
