//! The daemon and the Telegram bridge on actions and blocked rows: approvers
//! in a group chat, quorum, double taps, strangers, `propose --exec`, and
//! row answers / handled marks.

mod common;

use std::process::{Command, Stdio};

use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Msg};
use common::{TempDb, json};

const TEAM: i64 = -100_500;
const ALICE: i64 = 1;
const BOB: i64 = 2;
const CAROL: i64 = 3; // may answer, may not approve

async fn setup() -> (TempDb, FakeTelegram, Daemon) {
    let (db, fake, _cfg, d) = setup_with_config().await;
    (db, fake, d)
}

/// [`setup`], also giving the config file (to start another daemon on it).
async fn setup_with_config() -> (TempDb, FakeTelegram, std::path::PathBuf, Daemon) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("ops", TEAM, &[ALICE, BOB, CAROL], &[ALICE, BOB])],
        "",
    );
    let d = Daemon::start(&db.path, &cfg);
    (db, fake, cfg, d)
}

fn propose(db: &TempDb, args: &[&str]) -> String {
    let mut a = vec!["--json", "propose"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v = json(&out);
    v["action"]["id"].as_str().expect("action id").to_string()
}

async fn message_of(fake: &FakeTelegram, id: &str) -> Msg {
    let short = id[id.len() - 8..].to_string();
    fake.until(30, "the item's message", |f| {
        f.messages(TEAM)
            .into_iter()
            .find(|m| m.text.contains(&short))
    })
    .await
}

fn action(db: &TempDb, id: &str) -> serde_json::Value {
    let v = json(&db.cli(&["--json", "action", id]));
    if v.get("action").is_some() {
        v["action"].clone()
    } else {
        v
    }
}

#[tokio::test]
async fn quorum_strangers_and_double_taps_in_a_group() {
    let (db, fake, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "deploy",
            "--summary",
            "Deploy v1.2",
            "--args",
            r#"{"version":"1.2","api_token":"s3cret"}"#,
            "--approvals",
            "2",
        ],
    );
    let msg = message_of(&fake, &id).await;
    assert!(
        msg.text.contains("deploy") && msg.text.contains("1.2"),
        "{}",
        msg.text
    );
    assert!(
        !msg.text.contains("s3cret"),
        "secrets are redacted in chat: {}",
        msg.text
    );
    let approve = msg.button("Approve");

    fake.tap(TEAM, CAROL, msg.message_id, &approve);
    fake.until(30, "carol refused", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("not allowed to decide"))
    })
    .await;
    fake.tap(TEAM, ALICE, msg.message_id, &approve);
    fake.tap(TEAM, ALICE, msg.message_id, &approve);
    fake.until(30, "alice's double tap told", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("already approved"))
    })
    .await;
    assert!(
        fake.toasts().iter().any(|t| t.contains("1 of 2")),
        "{:?}",
        fake.toasts()
    );
    assert_eq!(
        action(&db, &id)["status"],
        "pending",
        "one approver is not a quorum of 2"
    );
    fake.until(30, "progress shown", |f| {
        f.message(TEAM, msg.message_id)
            .filter(|m| m.text.contains("1 of 2"))
            .map(|_| ())
    })
    .await;

    fake.tap(TEAM, BOB, msg.message_id, &approve);
    fake.until(30, "bob completes the quorum", |f| {
        f.toasts().into_iter().find(|t| t.contains("Approved ✅"))
    })
    .await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved");
    assert_eq!(a["approvals"], 2);
    fake.until(30, "buttons removed and who shown", |f| {
        f.message(TEAM, msg.message_id)
            .filter(|m| m.buttons().is_empty() && m.text.contains("Approved by"))
            .map(|_| ())
    })
    .await;
    // Carol's refused tap is in the action's audit, and counted nothing.
    let audit = json(&db.cli(&["--json", "audit", &id])).to_string();
    assert!(
        audit.contains("refused_attempt") && audit.contains("@user3"),
        "{audit}"
    );
}

#[tokio::test]
async fn two_approvers_at_once_give_one_decision_and_both_are_told() {
    let (db, fake, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "email.send",
            "--summary",
            "Send the invoice",
            "--args",
            r#"{"to":"a@b.c"}"#,
        ],
    );
    let msg = message_of(&fake, &id).await;
    let approve = msg.button("Approve");
    let reject = msg.button("Reject");
    fake.tap(TEAM, ALICE, msg.message_id, &approve);
    fake.tap(TEAM, BOB, msg.message_id, &reject);
    let toasts = fake
        .until(30, "both told", |f| {
            let t = f.toasts();
            (t.len() >= 2).then_some(t)
        })
        .await;
    assert!(
        toasts.iter().any(|t| t.contains("Approved ✅")),
        "{toasts:?}"
    );
    assert!(
        toasts
            .iter()
            .any(|t| t.contains("Already approved by @user1")),
        "{toasts:?}"
    );
    let audit = json(&db.cli(&["--json", "audit", &id])).to_string();
    assert_eq!(audit.matches("\"approved\"").count(), 1, "{audit}");
    assert!(!audit.contains("\"rejected\""), "{audit}");
}

#[tokio::test]
async fn an_action_approved_in_chat_runs_once_and_the_message_shows_the_result() {
    let (db, fake, _d) = setup().await;
    let side = db.dir.path().join("side-effects.txt");
    let script = format!("echo ran >> '{}'; echo sent-ok", side.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "Mail the report",
            "--args",
            r#"{"to":"x@y.z"}"#,
            "--timeout",
            "60s",
            "--exec",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .env("HANDOFF_DB", &db.path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let msg = fake
        .until(30, "the action's message", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.contains("Mail the report"))
        })
        .await;
    let approve = msg.button("Approve");
    fake.tap(TEAM, ALICE, msg.message_id, &approve);
    fake.tap(TEAM, BOB, msg.message_id, &approve); // a racing second approver
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        "ran\n",
        "executed exactly once"
    );
    fake.until(30, "the message ends with the result", |f| {
        f.message(TEAM, msg.message_id)
            .filter(|m| m.text.contains("Executed") && m.text.contains("sent-ok"))
            .map(|_| ())
    })
    .await;
}

#[tokio::test]
async fn a_blocked_row_takes_a_chat_answer_and_a_handled_mark() {
    let (db, fake, _d) = setup().await;
    let rows = r#"[{"label":"dns","status":"blocked","next_step":"Create the CNAME for api.example.com","owner":"task"}]"#;
    let out = db.cli(&[
        "--json", "board", "upsert", "infra", "Launch", "--rows", rows,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let msg = fake
        .until(30, "the row's message", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.contains("Create the CNAME"))
        })
        .await;
    assert!(
        msg.text.contains("Launch") && msg.text.contains("dns"),
        "{}",
        msg.text
    );

    common::until_recorded(&db, TEAM, msg.message_id).await;
    fake.send_text(TEAM, CAROL, "done, TTL 300", Some(msg.message_id));
    fake.until(30, "the answer recorded", |f| {
        f.sent_texts(TEAM)
            .into_iter()
            .find(|t| t.starts_with("Recorded"))
    })
    .await;
    let msg = fake.message(TEAM, msg.message_id).unwrap();
    fake.tap(TEAM, CAROL, msg.message_id, &msg.button("Mark handled"));
    fake.until(30, "handled toast", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("Marked handled"))
    })
    .await;

    let v = json(&db.cli(&[
        "--json",
        "board",
        "get",
        "Launch",
        "--project",
        "infra",
        "--full",
    ]))
    .to_string();
    assert!(v.contains("done, TTL 300") && v.contains("\"chat\""), "{v}");
    assert!(
        v.contains("\"blocked\""),
        "handled keeps the row blocked until an outcome: {v}"
    );
    assert!(v.contains("@user3"), "{v}");
}

#[tokio::test]
async fn the_edit_prompt_takes_a_patch_from_an_approver_only() {
    let (db, fake, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "email.send",
            "--summary",
            "Mail the report",
            "--args",
            r#"{"to":"a@example.com"}"#,
        ],
    );
    let msg = message_of(&fake, &id).await;
    let short = id[id.len() - 8..].to_string();
    fake.tap(TEAM, ALICE, msg.message_id, &msg.button("Edit"));
    let prompt = fake
        .until(30, "the edit prompt", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.starts_with(&format!("✏️ Edit #{short}")))
        })
        .await;
    // Carol may answer questions here but not decide actions.
    let said = fake
        .reply_to_prompt(TEAM, CAROL, prompt.message_id, "to: c@example.com")
        .await;
    assert_eq!(said, "Sorry, you're not allowed to decide actions here.");
    assert_eq!(action(&db, &id)["status"], "pending");
    let said = fake
        .reply_to_prompt(TEAM, ALICE, prompt.message_id, "to: b@example.com")
        .await;
    assert!(!said.starts_with("Not applied"), "{said}");
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved", "{a}");
    assert_eq!(a["effective_args"]["to"], "b@example.com", "{a}");
}

#[tokio::test]
async fn a_blocked_row_takes_an_answer_through_its_button_or_a_decline() {
    let (db, fake, _d) = setup().await;
    let rows = r#"[{"label":"dns","status":"blocked","next_step":"Create the CNAME","owner":"task"},{"label":"tls","status":"blocked","next_step":"Upload the certificate","owner":"task"}]"#;
    let out = db.cli(&[
        "--json", "board", "upsert", "infra", "Launch", "--rows", rows,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let row_msg = |text: &'static str| {
        let fake = &fake;
        async move {
            fake.until(30, "the row's message", |f| {
                f.messages(TEAM).into_iter().find(|m| m.text.contains(text))
            })
            .await
        }
    };
    let dns = row_msg("Create the CNAME").await;
    fake.tap(TEAM, CAROL, dns.message_id, &dns.button("Answer"));
    let prompt = fake
        .until(30, "the answer prompt", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.starts_with("💬 Answer #"))
        })
        .await;
    let said = fake
        .reply_to_prompt(TEAM, CAROL, prompt.message_id, "CNAME created")
        .await;
    assert!(said.starts_with("Recorded for #"), "{said}");

    // /answer finds a row by its short id too: this one already has an
    // answer waiting, and says so.
    let v = json(&out);
    let row = v["board"]["rows"][0]["id"].as_str().unwrap();
    fake.send_text(
        TEAM,
        CAROL,
        &format!("/answer {} TTL is 300", &row[row.len() - 8..]),
        None,
    );
    fake.until(30, "the row's refusal", |f| {
        f.sent_texts(TEAM)
            .into_iter()
            .find(|t| t.starts_with("An answer is already waiting for the agent"))
    })
    .await;

    let tls = row_msg("Upload the certificate").await;
    fake.tap(TEAM, CAROL, tls.message_id, &tls.button("Decline"));
    fake.until(30, "the decline toast", |f| {
        f.toasts().into_iter().find(|t| t == "Declined.")
    })
    .await;

    let v = json(&db.cli(&[
        "--json",
        "board",
        "get",
        "Launch",
        "--project",
        "infra",
        "--full",
    ]));
    let text = v.to_string();
    assert!(text.contains("CNAME created"), "{text}");
    assert!(text.contains("declined in Telegram"), "{text}");
}

#[tokio::test]
async fn an_approve_button_drawn_before_a_patch_approves_nothing() {
    let (db, fake, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "email.send",
            "--summary",
            "Mail the report",
            "--args",
            r#"{"to":"a@example.com"}"#,
            "--approvals",
            "2",
        ],
    );
    let msg = message_of(&fake, &id).await;
    let old = msg.button("Approve");
    let out = db.cli(&[
        "approve",
        &id,
        "--patch",
        r#"{"to":"b@example.com"}"#,
        "--as",
        "alice",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    fake.tap(TEAM, BOB, msg.message_id, &old);
    fake.until(30, "the stale refusal", |f| {
        f.toasts().into_iter().find(|t| {
            t == "The arguments changed since this message was drawn — see the updated message."
        })
    })
    .await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "pending", "Bob never saw b@example.com: {a}");
    assert_eq!(a["approvals"], 1, "{a}");
}

#[tokio::test]
async fn an_unknown_outcome_is_settled_from_its_buttons() {
    let (db, fake, _d) = setup().await;
    let store = db.open().await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        let id = propose(
            &db,
            &[
                "--kind",
                "deploy",
                "--summary",
                &format!("Deploy {n}"),
                "--args",
                &format!(r#"{{"n":{n}}}"#),
            ],
        );
        let out = db.cli(&["approve", &id, "--as", "alice"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        // An executor claims it and dies: its 1 ms lease lapses.
        store.claim(&id, "exec-1", 1).await.unwrap();
        ids.push(id);
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let out = db.cli(&["recover", "--no-run"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    for (id, (button, toast, status)) in ids.iter().zip([
        ("Mark executed", "Marked executed.", "executed"),
        ("Mark failed", "Marked failed.", "failed"),
        (
            "Retry",
            "Approved for one more run (at-least-once, your call).",
            "approved",
        ),
    ]) {
        assert_eq!(action(&db, id)["status"], "unknown");
        let msg = fake
            .until(30, "the unknown outcome's buttons", |f| {
                let m = f.message(TEAM, message_of_sync(f, id)?)?;
                m.buttons()
                    .iter()
                    .any(|b| b.0.contains(button))
                    .then_some(m)
            })
            .await;
        fake.tap(TEAM, BOB, msg.message_id, &msg.button(button));
        fake.until(30, "the toast", |f| {
            f.toasts().into_iter().find(|t| t == toast)
        })
        .await;
        assert_eq!(action(&db, id)["status"], status, "{button}");
    }
}

/// The message id of item `id`'s message in the team chat, if sent.
fn message_of_sync(fake: &FakeTelegram, id: &str) -> Option<i64> {
    let short = &id[id.len() - 8..];
    fake.messages(TEAM)
        .into_iter()
        .find(|m| m.text.contains(short))
        .map(|m| m.message_id)
}

/// Propose `script` with `--exec` from a process that is then killed before
/// anyone approves: the approved action is stranded.
async fn stranded(db: &TempDb, fake: &FakeTelegram, summary: &str, script: &str) -> (String, Msg) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "propose",
            "--kind",
            "email.send",
            "--summary",
            summary,
            "--args",
            r#"{"to":"x@y.z"}"#,
            "--exec",
            "--",
            "sh",
            "-c",
            script,
        ])
        .env("HANDOFF_DB", &db.path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let msg = fake
        .until(30, "the action's message", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.contains(summary))
        })
        .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let listed = json(&db.cli(&["--json", "actions"]));
    let id = listed["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["summary"] == summary))
        .and_then(|a| a["id"].as_str())
        .expect("the action is listed")
        .to_string();
    common::until_recorded(db, TEAM, msg.message_id).await;
    fake.tap(TEAM, ALICE, msg.message_id, &msg.button("Approve"));
    let drawn = fake
        .until(30, "the approved message offers a run", |f| {
            f.message(TEAM, msg.message_id)
                .filter(|m| m.buttons().iter().any(|(t, _)| t.contains("Run now")))
        })
        .await;
    assert!(drawn.text.contains("handoff recover"), "{}", drawn.text);
    assert_eq!(action(db, &id)["status"], "approved");
    (id, drawn)
}

#[tokio::test]
async fn a_stranded_exec_action_runs_once_from_chat() {
    let (db, fake, _d) = setup().await;
    let side = db.dir.path().join("side-effects.txt");
    let script = format!("echo ran >> '{}'; echo sent-ok", side.display());
    let (id, msg) = stranded(&db, &fake, "Mail the stranded report", &script).await;

    // Carol may answer but not decide: her tap runs nothing.
    let run = msg.button("Run now");
    fake.tap(TEAM, CAROL, msg.message_id, &run);
    fake.until(30, "Carol refused", |f| {
        f.toasts().into_iter().find(|t| t.contains("not allowed"))
    })
    .await;
    // Alice double-taps and Bob taps too: one run.
    fake.tap(TEAM, ALICE, msg.message_id, &run);
    fake.tap(TEAM, ALICE, msg.message_id, &run);
    fake.tap(TEAM, BOB, msg.message_id, &run);
    fake.until(30, "the message ends with the result", |f| {
        f.message(TEAM, msg.message_id)
            .filter(|m| {
                m.text.contains("Executed") && m.text.contains("sent-ok") && m.buttons().is_empty()
            })
            .map(|_| ())
    })
    .await;
    assert_eq!(action(&db, &id)["status"], "executed");
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        "ran\n",
        "executed exactly once"
    );
}

#[tokio::test]
async fn a_stranded_exec_action_can_be_settled_without_running_it() {
    let (db, fake, _d) = setup().await;
    let side = db.dir.path().join("never.txt");
    let script = format!("echo ran >> '{}'", side.display());
    let (id, msg) = stranded(&db, &fake, "Mail nobody", &script).await;
    fake.tap(TEAM, BOB, msg.message_id, &msg.button("Won't run"));
    fake.until(30, "the message says it failed, without buttons", |f| {
        f.message(TEAM, msg.message_id)
            .filter(|m| {
                m.text.contains("Failed")
                    && m.text.contains("will not run")
                    && m.buttons().is_empty()
            })
            .map(|_| ())
    })
    .await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "failed");
    assert!(!side.exists(), "nothing ran");
    let audit = common::stdout(&db.cli(&["audit", &id]));
    assert!(
        audit.contains("chat:"),
        "the claim names the approver: {audit}"
    );
}

/// A Run now tap's run holds a short lease, renewed while the command
/// runs: when the daemon running it dies, the action is brought to a
/// person as `unknown` within seconds (by the next daemon's recovery),
/// not after a minute of showing "executing" — and a `propose` that
/// follows the run ends with it instead of waiting that minute out.
#[tokio::test]
async fn a_run_tap_whose_daemon_dies_mid_run_is_unknown_within_seconds() {
    let (db, fake, cfg, mut d) = setup_with_config().await;
    let side = db.dir.path().join("late.txt");
    let script = format!("sleep 30; echo ran >> '{}'", side.display());
    let (id, msg) = stranded(&db, &fake, "Mail it slowly", &script).await;
    fake.tap(TEAM, ALICE, msg.message_id, &msg.button("Run now"));
    let claimed = fake
        .until(30, "the tap's run holds the claim", |_| {
            let events = json(&db.cli(&["--json", "events", "--tail", "50"]));
            events["events"].as_array().and_then(|all| {
                all.iter()
                    .find(|e| e["type"] == "action.claimed" && e["entity_id"] == id.as_str())
                    .cloned()
            })
        })
        .await;
    let at = chrono::DateTime::parse_from_rfc3339(claimed["at"].as_str().unwrap()).unwrap();
    let until =
        chrono::DateTime::parse_from_rfc3339(claimed["payload"]["lease_until"].as_str().unwrap())
            .unwrap();
    let lease = (until - at).num_milliseconds();
    assert!(
        (1_000..=10_000).contains(&lease),
        "a tap's run leases {lease} ms at a time: {claimed}"
    );
    d.kill9();
    let _next = Daemon::start(&db.path, &cfg);
    let unknown = fake
        .until(30, "recovery brings the action to a person", |_| {
            let a = action(&db, &id);
            (a["status"] == "unknown").then_some(a)
        })
        .await;
    assert_eq!(unknown["status"], "unknown", "{unknown}");
}
