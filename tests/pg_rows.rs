//! The same statements on SQLite and PostgreSQL give the same
//! rows: questions and the ledger written through their t_* columns and
//! triggers (an action's statements append their own entries, compared
//! byte for byte between the engines by `tests/audit_log.rs`), compared row by row (audit, approvals, history, events with
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
