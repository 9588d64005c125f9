//! Each agent gets only its own replies: `pending`
//! and `board pending` default to the caller's `$HANDOFF_SESSION` (else
//! `$HANDOFF_PROJECT`), and `--all` widens explicitly. Two agents, the real
//! binary, one database.

mod common;

use std::process::{Command, Output};

use common::{TempDb, json, stderr};

/// Run the binary as an agent with `HANDOFF_SESSION` / `HANDOFF_PROJECT`.
fn agent(db: &TempDb, session: Option<&str>, project: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(args)
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_SESSION")
        .env_remove("HANDOFF_PROJECT");
    if let Some(s) = session {
        c.env("HANDOFF_SESSION", s);
    }
    if let Some(p) = project {
        c.env("HANDOFF_PROJECT", p);
    }
    let out = c.output().expect("run handoff");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

fn titles(out: &Output) -> Vec<String> {
    let v = json(out);
    let mut t: Vec<String> = v["replies"]
        .as_array()
        .expect("a list of deliveries")
        .iter()
        .map(|d| d["question"]["title"].as_str().unwrap().to_string())
        .collect();
    t.sort();
    t
}

#[tokio::test]
async fn two_agents_each_pick_up_only_their_own_replies() {
    let db = TempDb::new();
    let mut ids = Vec::new();
    for (session, title) in [("sess-a", "A's question"), ("sess-b", "B's question")] {
        let out = agent(&db, Some(session), Some("proj"), &["--json", "ask", title]);
        ids.push(json(&out)["question"]["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        let out = db.cli(&["reply", id, "go ahead", "--by", "alice"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }

    // A picks up first, with --new: only its own reply.
    let a = agent(
        &db,
        Some("sess-a"),
        Some("proj"),
        &["--json", "pending", "--new"],
    );
    assert_eq!(titles(&a), ["A's question"]);
    // B's reply is still new for B.
    let b = agent(
        &db,
        Some("sess-b"),
        Some("proj"),
        &["--json", "pending", "--new"],
    );
    assert_eq!(titles(&b), ["B's question"]);
    // A supervisor widens explicitly and sees both (delivered before).
    let all = agent(
        &db,
        Some("sess-a"),
        Some("proj"),
        &["--json", "pending", "--all"],
    );
    assert_eq!(titles(&all), ["A's question", "B's question"]);
    // Without a session, the project scopes it.
    let other = agent(&db, None, Some("elsewhere"), &["--json", "pending"]);
    assert!(titles(&other).is_empty());
}

#[tokio::test]
async fn board_pending_defaults_to_the_callers_session() {
    let db = TempDb::new();
    for session in ["sess-a", "sess-b"] {
        let rows = r#"[{"label":"dns","status":"blocked","next_step":"point it"}]"#;
        agent(
            &db,
            Some(session),
            Some("proj"),
            &[
                "board",
                "upsert",
                "proj",
                &format!("Launch {session}"),
                "--rows",
                rows,
                "--session",
                session,
            ],
        );
        let out = db.cli(&[
            "board",
            "annotate",
            &format!("Launch {session}"),
            "dns",
            "done",
            "--project",
            "proj",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let a = agent(&db, Some("sess-a"), None, &["--json", "board", "pending"]);
    let rows = json(&a);
    let boards: Vec<&str> = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["board_title"].as_str().unwrap())
        .collect();
    assert_eq!(boards, ["Launch sess-a"], "{rows}");
    let all = agent(
        &db,
        Some("sess-a"),
        None,
        &["--json", "board", "pending", "--all", "--peek"],
    );
    assert_eq!(json(&all)["rows"].as_array().unwrap().len(), 2);
}
