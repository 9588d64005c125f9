//! The same statements on SQLite and PostgreSQL give the same
//! rows: actions, questions and the ledger written through their t_* columns
//! and triggers, compared row by row (audit, approvals, history, events with
//! their payloads, counters) between a store-made SQLite file and a
//! PostgreSQL database on a throw-away server.

mod common;

use common::engines::{Both, V};

const EVENTS: &str = "SELECT CAST(seq AS TEXT), CAST(at AS TEXT), type, entity_kind, entity_id,
    actor, channel, project, session, payload FROM events ORDER BY seq";

/// Events on both engines, the same, each payload a JSON object; returns
/// (type, parsed payload) per event.
async fn same_events(both: &Both) -> Vec<(String, serde_json::Value)> {
    both.same(EVENTS)
        .await
        .into_iter()
        .map(|r| {
            let payload = r[9].clone().expect("payload");
            let parsed: serde_json::Value = serde_json::from_str(&payload)
                .unwrap_or_else(|e| panic!("payload {payload} is not JSON: {e}"));
            assert!(parsed.is_object(), "payload {payload} is not an object");
            (r[2].clone().expect("type"), parsed)
        })
        .collect()
}

const APPROVE: &str = "UPDATE actions SET approvals = approvals + 1,
        status = CASE WHEN approvals + 1 >= approvals_required THEN 'approved' ELSE 'pending' END,
        decided_by = CASE WHEN approvals + 1 >= approvals_required THEN $3 ELSE decided_by END,
        patch = COALESCE($7, patch), effective_args = COALESCE($8, effective_args),
        updated_at = $2, t_seq = t_seq + 1,
        t_event = CASE WHEN approvals + 1 >= approvals_required THEN 'approved' ELSE 'approval_added' END,
        t_actor = $3, t_channel = $4, t_patched = $5, t_details = $6
    WHERE id = $1 AND status = 'pending'
      AND NOT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = $1 AND approver = $3)";

/// An action's proposal, approvals (one with a patch), claim, lease
/// extension, execution, a rejection and a purge: the same statements give
/// the same actions, audit, approvals, events and counters on both engines.
#[tokio::test]
async fn action_transitions_write_the_same_rows_on_both_engines() {
    let both = Both::new().await;
    let propose = "INSERT INTO actions (id, kind, summary, args, fingerprint, dedup_key, status,
            expires_at, on_expire, approvals_required, effective_args, redact_keys, proposer,
            project, session, created_at, updated_at, t_event, t_actor, t_channel, t_details)
        VALUES ($1, $2, $3, $4, 'fp', $5, 'pending', $6, 'expire', $7, $4, '[]', $8, $9, 's1',
                $10, $10, $11, $8, 'agent', $12)";
    use V::*;
    both.ok(
        propose,
        &[
            T("a1"),
            T("deploy"),
            T("Deploy \"web\" é\n\tnow"),
            T(r#"{"env":"prod"}"#),
            T("k1"),
            NullI,
            I(2),
            T("agent-1"),
            T("proj"),
            I(1000),
            T("proposed"),
            T(r#"{"approvals_required":2,"args":{"env":"prod"},"proposer":"agent-1"}"#),
        ],
    )
    .await;
    // A second live action with the same key in the same project: refused.
    both.fails(
        propose,
        &[
            T("a1b"),
            T("deploy"),
            T("again"),
            T("{}"),
            T("k1"),
            NullI,
            I(1),
            T("agent-1"),
            T("proj"),
            I(1001),
            T("proposed"),
            T("{}"),
        ],
    )
    .await;
    // Another project's action, proposed without a logged event.
    both.ok(
        propose,
        &[
            T("a2"),
            T("drop"),
            T("Drop table"),
            T("{}"),
            T("k1"),
            I(5000),
            I(1),
            T("agent-2"),
            T("other"),
            I(1100),
            NullT,
            NullT,
        ],
    )
    .await;
    both.ok(
        APPROVE,
        &[
            T("a1"),
            I(2000),
            T("ann"),
            T("chat"),
            NullT,
            T(r#"{"approvals":1,"approver":"ann","required":2}"#),
            NullT,
            NullT,
        ],
    )
    .await;
    // The same approver again: the guard refuses it (nothing changes)...
    both.ok(
        APPROVE,
        &[
            T("a1"),
            I(2100),
            T("ann"),
            T("inbox"),
            NullT,
            T("{}"),
            NullT,
            NullT,
        ],
    )
    .await;
    // ...and without the guard, the approvals row's UNIQUE refuses it.
    both.fails(
        "UPDATE actions SET approvals = approvals + 1, t_seq = t_seq + 1, t_actor = 'ann',
             t_event = 'approval_added', t_channel = 'cli', t_details = '{}' WHERE id = 'a1'",
        &[],
    )
    .await;
    // The second approval carries a patch: its own audit row and event first.
    both.ok(
        APPROVE,
        &[
            T("a1"),
            I(3000),
            T("bob"),
            T("inbox"),
            T(r#"{"patch":{"env":"staging"}}"#),
            T(r#"{"approvals":2,"approver":"bob","required":2}"#),
            T(r#"{"env":"staging"}"#),
            T(r#"{"env":"staging"}"#),
        ],
    )
    .await;
    both.ok(
        "UPDATE actions SET status = 'executing', owner = $2, lease_until = $3,
             attempts = attempts + 1, updated_at = $4, t_seq = t_seq + 1, t_event = 'claimed',
             t_actor = $2, t_channel = 'daemon', t_patched = NULL, t_details = $5
         WHERE id = $1 AND status = 'approved'",
        &[
            T("a1"),
            T("w1"),
            I(9000),
            I(4000),
            T(r#"{"attempt":1,"lease_until":9000,"owner":"w1"}"#),
        ],
    )
    .await;
    // A lease extension does not bump t_seq: nothing is logged.
    both.ok(
        "UPDATE actions SET lease_until = $2 WHERE id = $1",
        &[T("a1"), I(12000)],
    )
    .await;
    both.ok(
        "UPDATE actions SET status = 'executed', result = $2, updated_at = $3, t_seq = t_seq + 1,
             t_event = 'executed', t_actor = 'w1', t_channel = 'daemon', t_details = $4
         WHERE id = $1 AND status = 'executing'",
        &[
            T("a1"),
            T(r#"{"ok":true}"#),
            I(5000),
            T(r#"{"error":null,"owner":"w1","result":{"ok":true}}"#),
        ],
    )
    .await;
    both.ok(
        "UPDATE actions SET status = 'rejected', reason = $2, updated_at = $3, t_seq = t_seq + 1,
             t_event = 'rejected', t_actor = 'ann', t_channel = 'cli', t_details = $4 WHERE id = $1",
        &[T("a2"), T("no"), I(6000), T(r#"{"reason":"no","rejecter":"ann"}"#)],
    )
    .await;

    // The log is the audit: its entries never go, not even in a purge of
    // a settled action, which deletes the row and its approvals only.
    let refused = both
        .exec("DELETE FROM events WHERE entity_id = 'a2'", &[])
        .await;
    assert_eq!(refused, Err("events are append-only".to_string()));
    both.ok(
        "INSERT INTO action_purge_guard (action_id) VALUES ('a1')",
        &[],
    )
    .await;
    both.ok("DELETE FROM action_approvals WHERE action_id = 'a1'", &[])
        .await;
    both.ok("DELETE FROM actions WHERE id = 'a1'", &[]).await;
    both.ok("DELETE FROM action_purge_guard", &[]).await;

    let audit = both
        .same(
            "SELECT CAST(seq AS TEXT), action_id, CAST(at AS TEXT), actor, event, details
               FROM action_audit ORDER BY seq",
        )
        .await;
    let of = |id: &str| audit.iter().filter(|r| r[1].as_deref() == Some(id)).count();
    assert!(of("a1") >= 3, "a1's entries outlive its purge: {audit:?}");
    assert_eq!(
        audit.last().map(|r| (r[1].clone(), r[4].clone())),
        Some((Some("a2".into()), Some("rejected".into()))),
        "{audit:?}"
    );
    let (lite, pg) = both.rows("SELECT action_id FROM action_approvals").await;
    assert_eq!((lite.len(), pg.len()), (0, 0), "a1's approvals purged");
    both.same(
        "SELECT id, status, CAST(approvals AS TEXT), decided_by, patch, effective_args,
                  CAST(t_seq AS TEXT), t_event, t_details, CAST(updated_at AS TEXT)
               FROM actions ORDER BY id",
    )
    .await;
    let counts = both
        .same(
            "SELECT project, status, CAST(COUNT(*) AS TEXT) FROM actions
             GROUP BY project, status ORDER BY project, status",
        )
        .await;
    assert_eq!(counts.len(), 1, "only a2 (rejected) is counted: {counts:?}");

    let events = same_events(&both).await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        [
            "action.proposed",
            "action.approval_added",
            "action.patched",
            "action.approved",
            "action.claimed",
            "action.executed",
            "action.rejected"
        ]
    );
    assert_eq!(
        events[3].1,
        serde_json::json!({"approvals": 2, "approver": "bob", "required": 2,
            "status": "approved", "kind": "deploy", "summary": "Deploy \"web\" é\n\tnow"})
    );
}

/// A question's flag, reply, pickup, snooze and clear: the same history rows
/// and events on both engines.
#[tokio::test]
async fn question_transitions_write_the_same_rows_on_both_engines() {
    let both = Both::new().await;
    use V::*;
    both.ok(
        "INSERT INTO questions (id, project, agent, session, key, title, options, created_at,
             updated_at, t_at, t_event, t_actor, t_channel, t_payload)
         VALUES ($1, 'proj', 'agent-1', 's1', 'k', $2, $3, $4, $4, $4, 'question.flagged',
                 'agent-1', 'agent', $5)",
        &[
            T("q1"),
            T("Which db?"),
            T(r#"[{"label":"pg"}]"#),
            I(10),
            T(r#"{"title":"Which db?"}"#),
        ],
    )
    .await;
    let reply = "UPDATE questions SET reply = $2, reply_context = $3, reply_kind = 'answer',
            reply_source = $4, replied_by = $5, replied_at = $6, reply_seq = reply_seq + 1,
            updated_at = $6, t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
            t_history = 'reply', t_by = $5, t_actor = $5, t_channel = $4, t_payload = $7
        WHERE id = $1 AND status = 'open'";
    both.ok(
        reply,
        &[
            T("q1"),
            T("pg"),
            T("ctx"),
            T("chat"),
            T("ann"),
            I(20),
            T(r#"{"reply":"pg"}"#),
        ],
    )
    .await;
    both.ok(
        "UPDATE questions SET reply_seen_at = $2, t_seq = t_seq + 1, t_at = $2,
             t_event = 'question.picked_up', t_history = NULL, t_by = NULL, t_actor = 'agent-1',
             t_channel = 'agent', t_payload = '{}' WHERE id = $1",
        &[T("q1"), I(30)],
    )
    .await;
    // No t_seq bump: nothing logged.
    both.ok(
        "UPDATE questions SET snoozed_until = 99 WHERE id = 'q1'",
        &[],
    )
    .await;
    both.ok(
        "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
             reply_source = NULL, replied_by = NULL, replied_at = NULL, reply_seq = reply_seq + 1,
             t_seq = t_seq + 1, t_at = $2, t_event = 'question.cleared', t_history = 'clear',
             t_by = '', t_actor = 'ann', t_channel = 'inbox', t_payload = '{}' WHERE id = $1",
        &[T("q1"), I(40)],
    )
    .await;
    both.ok(
        reply,
        &[
            T("q1"),
            T("sqlite"),
            NullT,
            T("inbox"),
            T("bob"),
            I(50),
            T("{}"),
        ],
    )
    .await;

    let history = both
        .same(
            "SELECT CAST(seq AS TEXT), question_id, CAST(reply_seq AS TEXT), action, reply,
                      reply_context, kind, source, \"by\", CAST(revision AS TEXT), CAST(at AS TEXT)
               FROM question_replies ORDER BY seq",
        )
        .await;
    assert_eq!(history.len(), 3, "reply, clear, reply: {history:?}");
    let events = same_events(&both).await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        [
            "question.flagged",
            "question.answered",
            "question.picked_up",
            "question.cleared",
            "question.answered"
        ]
    );
}

/// Ledger rows: started, a replay (nothing), completed, a second outcome
/// (nothing), an unregistered session (refused with the same message): the
/// same rows and `ledger.*` events on both engines.
#[tokio::test]
async fn ledger_writes_the_same_rows_on_both_engines() {
    let both = Both::new().await;
    use V::*;
    both.ok(
        "INSERT INTO agent_sessions (session_id, agent, project, created_at, updated_at)
         VALUES ('s1', 'claude', 'proj', 1, 1)",
        &[],
    )
    .await;
    let write = "INSERT INTO execution_ledger (event_id, session_id, tool, payload, payload_hash,
            status, result, result_hash, replay_safe, at)
        VALUES ($1, $2, $3, '{}', 'h', $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING";
    both.ok(
        write,
        &[
            T("e\"1"),
            T("s1"),
            T("Bash"),
            T("started"),
            NullT,
            NullT,
            I(1),
            I(10),
        ],
    )
    .await;
    both.ok(
        write,
        &[
            T("e\"1"),
            T("s1"),
            T("Bash"),
            T("started"),
            NullT,
            NullT,
            I(1),
            I(11),
        ],
    )
    .await;
    both.ok(
        write,
        &[
            T("e\"1"),
            T("s1"),
            T("Bash"),
            T("completed"),
            T("{}"),
            T("r"),
            I(0),
            I(20),
        ],
    )
    .await;
    both.ok(
        write,
        &[
            T("e\"1"),
            T("s1"),
            T("Bash"),
            T("failed"),
            T("{}"),
            T("r"),
            I(0),
            I(21),
        ],
    )
    .await;
    let refused = both
        .exec(
            write,
            &[
                T("e2"),
                T("ghost"),
                T("Bash"),
                T("started"),
                NullT,
                NullT,
                I(0),
                I(30),
            ],
        )
        .await;
    assert_eq!(
        refused,
        Err("the ledger belongs to a registered session".to_string())
    );

    let rows = both
        .same("SELECT CAST(seq AS TEXT), event_id, session_id, status, result,
                      CAST(replay_safe AS TEXT), CAST(at AS TEXT) FROM execution_ledger ORDER BY seq")
        .await;
    assert_eq!(rows.len(), 2, "started and completed: {rows:?}");
    let events = same_events(&both).await;
    assert_eq!(
        events,
        [
            (
                "ledger.started".to_string(),
                serde_json::json!(
                {"event_id": "e\"1", "ledger_seq": 1, "replay_safe": true, "tool": "Bash"})
            ),
            (
                "ledger.completed".to_string(),
                serde_json::json!(
                {"event_id": "e\"1", "ledger_seq": 3, "replay_safe": false, "tool": "Bash"})
            ),
        ]
    );
    both.same("SELECT project FROM events").await;
}
