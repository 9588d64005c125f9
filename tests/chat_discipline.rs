//! Notification discipline through the real daemon and
//! the fake Bot API: a grace period per kind keeps prompts settled in time
//! out of chat (and survives a restart), a chat's quiet hours hold items
//! back and send the still-open ones as one digest after, and a message of
//! an action with an expiry says what happens then and when — and says so
//! again, without buttons, once it has happened. Assertions are on what the
//! fake Bot API received and what the store recorded, never on timing.

mod common;

use std::process::Child;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Msg};
use common::hook::{bash, finish, permission_request, spawn_hook};
use common::{json, wait_for};

const ME: i64 = 4242;
const NIGHT: i64 = 5151;

/// A database, the fake Bot API, and a daemon with one chat `me` (plus
/// `extra` config), and the config's path.
async fn setup(extra: &str) -> (TempDb, FakeTelegram, Daemon, String) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], extra);
    let d = Daemon::start(&db.path, &cfg);
    (db, fake, d, cfg.to_str().unwrap().to_string())
}

/// Propose an action through the CLI; its id.
fn propose(db: &TempDb, args: &[&str]) -> String {
    let mut a = vec!["--json", "propose"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    json(&out)["action"]["id"].as_str().unwrap().to_string()
}

fn short(id: &str) -> &str {
    &id[id.len() - 8..]
}

/// The message in `chat` showing the item `id`.
async fn message_of(fake: &FakeTelegram, chat: i64, id: &str) -> Msg {
    let s = short(id).to_string();
    fake.until(30, "the item's message", |f| {
        f.messages(chat).into_iter().find(|m| m.text.contains(&s))
    })
    .await
}

/// The status of the item's chat record in `chat` (None: no record).
async fn record(db: &TempDb, chat: i64, id: &str) -> Option<String> {
    let pool = common::raw_pool(&db.path).await;
    let s =
        sqlx::query_scalar("SELECT status FROM chat_messages WHERE item_id = ? AND chat_id = ?")
            .bind(id)
            .bind(chat)
            .fetch_optional(&pool)
            .await
            .unwrap();
    pool.close().await;
    s
}

/// Wait until the item's record in `chat` has `status`.
async fn until_record(db: &TempDb, chat: i64, id: &str, status: &str) {
    wait_for(
        30,
        &format!("the record of {id} to be {status}"),
        || async { (record(db, chat, id).await.as_deref() == Some(status)).then_some(()) },
    )
    .await;
}

/// The pending prompt whose summary contains `text`, once the hook proposed it.
async fn prompt(db: &TempDb, text: &str) -> handoff::store::actions::Action {
    let store = db.open().await;
    wait_for(30, "the hook's prompt", || async {
        store
            .list_actions(None)
            .await
            .unwrap()
            .into_iter()
            .find(|a| a.summary.contains(text))
    })
    .await
}

fn stop(hook: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hook.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

const GRACE: &str = "\n[[kinds]]\nmatch = \"claude.*\"\ngrace_secs = 2\n";

// Multi-threaded: hooks are awaited with a blocking wait while the fake
// Bot API (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grace_period_keeps_prompts_settled_in_time_out_of_chat() {
    let (db, fake, _d, cfg) = setup(GRACE).await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    // Answered at the terminal within the grace.
    let ev = permission_request("s-1", "Bash", bash("echo at-the-terminal"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let terminal = prompt(&db, "echo at-the-terminal").await;
    stop(&hook);
    let _ = finish(hook);
    // Approved through the CLI within the grace.
    let approved = propose(
        &db,
        &["--kind", "claude.Bash", "--summary", "echo approved"],
    );
    let out = db.cli(&["approve", &approved, "--as", "alice"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    // Left pending, and one of a kind without a grace.
    let pending = propose(&db, &["--kind", "claude.Bash", "--summary", "echo pending"]);
    let other = propose(&db, &["--kind", "deploy", "--summary", "ship it"]);

    message_of(&fake, ME, &other).await;
    let msg = message_of(&fake, ME, &pending).await;
    assert!(!msg.buttons().is_empty(), "pushed as itself: {}", msg.text);
    for id in [&terminal.id, &approved] {
        until_record(&db, ME, id, "skipped").await;
    }
    let sent = fake.sent_texts(ME).join("\n");
    for id in [&terminal.id, &approved] {
        assert!(!sent.contains(short(id)), "{id} reached chat: {sent}");
    }
    assert!(!sent.contains("at-the-terminal") && !sent.contains("echo approved"));
    // The Inbox showed the waiting one at once: it is pending like any other.
    let pending_list = json(&db.cli(&["--json", "actions"])).to_string();
    assert!(pending_list.contains(&pending), "{pending_list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_waiting_out_its_grace_survives_a_restart() {
    let (db, fake, mut d, cfg) = setup(GRACE).await;
    let id = propose(&db, &["--kind", "claude.Edit", "--summary", "edit a file"]);
    until_record(&db, ME, &id, "held").await;
    d.kill9();
    let _d = Daemon::start(&db.path, std::path::Path::new(&cfg));
    let msg = message_of(&fake, ME, &id).await;
    assert!(!msg.buttons().is_empty(), "{}", msg.text);
    until_record(&db, ME, &id, "sent").await;
}

/// `HH:MM:SS` of `ms` since the epoch, in UTC.
fn hms(ms: i64) -> String {
    let s = (ms / 1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_hold_items_back_and_send_the_open_ones_as_one_digest() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    // The daemon has no test clock: the quiet window is built around the
    // real time, ending a few seconds from now (the offset only shifts it).
    let end = now_ms() + 10_000;
    let extra = format!(
        "quiet_hours = \"{}-{}\"\nutc_offset = \"+01:30\"\n\n[[route]]\nproject = \"night\"\nchat = \"night\"\n\n[[route]]\nproject = \"day\"\nchat = \"me\"\n",
        hms(end - 60_000 + 5_400_000),
        hms(end + 5_400_000)
    );
    // Chats in order: `me` (no quiet hours), then `night`, whose entry the
    // quiet keys above end up in.
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[ME]), ("night", NIGHT, &[ME], &[ME])],
        &extra,
    );
    let _d = Daemon::start(&db.path, &cfg);
    let at = |p: &'static str, s: &'static str| {
        let db = &db;
        move || propose(db, &["--kind", "deploy", "--summary", s, "--project", p])
    };
    let n1 = at("night", "night one")();
    let n2 = at("night", "night two")();
    let decided = at("night", "night decided")();
    let out = db.cli(&["reject", &decided, "--as", "alice", "--reason", "no"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let d1 = at("day", "day one")();
    let d2 = at("day", "day two")();
    let created_before_end = now_ms() < end;
    assert!(
        created_before_end,
        "the test was too slow to create its items within the quiet window"
    );

    // The chat without quiet hours got its items at once.
    message_of(&fake, ME, &d1).await;
    message_of(&fake, ME, &d2).await;
    if now_ms() < end - 500 {
        assert!(
            fake.messages(NIGHT).is_empty(),
            "{:?}",
            fake.sent_texts(NIGHT)
        );
    }
    // Recorded as waiting, not sent (checked only while surely still quiet).
    for id in [&n1, &n2, &decided] {
        if now_ms() < end - 2_000 {
            assert_eq!(record(&db, NIGHT, id).await.as_deref(), Some("quiet"));
        }
    }

    // After the window: one digest with exactly the still-open ones.
    let digest = fake
        .until(30, "the digest after quiet hours", |f| {
            f.messages(NIGHT).into_iter().next()
        })
        .await;
    assert!(digest.text.contains("quiet hours"), "{}", digest.text);
    assert!(
        digest.text.contains(short(&n1)) && digest.text.contains(short(&n2)),
        "{}",
        digest.text
    );
    assert!(!digest.text.contains(short(&decided)), "{}", digest.text);
    until_record(&db, NIGHT, &n1, "digest").await;
    until_record(&db, NIGHT, &n2, "digest").await;
    until_record(&db, NIGHT, &decided, "skipped").await;
    assert_eq!(
        fake.messages(NIGHT).len(),
        1,
        "{:?}",
        fake.sent_texts(NIGHT)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_states_its_deadline_and_outcome_and_says_when_it_came() {
    let extra = "\n[[kinds]]\nmatch = \"claude.*\"\ntimeout_secs = 5\n";
    let (db, fake, d, cfg) = setup(extra).await;
    let o = db.cli(&[
        "--json", "token", "create", "--name", "alice", "--role", "human",
    ]);
    let token = json(&o)["secret"].as_str().unwrap().to_string();
    // A permission prompt with the [[kinds]] timeout (no --timeout given).
    let ev = permission_request("s-1", "Bash", bash("rm -rf build"));
    let hook = spawn_hook(
        &db,
        &ev.to_string(),
        &[],
        &[("HANDOFF_CONFIG", cfg.as_str())],
    );
    let a = prompt(&db, "rm -rf build").await;
    assert_eq!(
        a.expires_at.unwrap() - a.created_at,
        5_000,
        "the hook waits the kind's timeout_secs"
    );
    // The Inbox card says what the message says (the API gives it the
    // sentence while the prompt is pending).
    let shown: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "http://{}/v1/actions/{}",
            d.addr.trim_start_matches("http://"),
            a.id
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shown = shown.get("action").cloned().unwrap_or(shown);
    let note = shown["expiry_note"].as_str().unwrap_or_default();
    assert!(note.starts_with("Denied automatically at "), "{shown}");
    // Another action that expires on its own, and one rejected at expiry.
    let plain = propose(
        &db,
        &["--kind", "deploy", "--summary", "ship", "--ttl", "5s"],
    );
    let rejecting = propose(
        &db,
        &[
            "--kind",
            "refund",
            "--summary",
            "refund",
            "--ttl",
            "5s",
            "--on-expire",
            "reject",
        ],
    );
    // As first sent (later edits are checked below): the deadline, the
    // outcome, and buttons.
    for (id, words) in [
        (&a.id, "Denied automatically at "),
        (&plain, "Expires at "),
        (&rejecting, "Rejected automatically at "),
    ] {
        let s = short(id).to_string();
        let sent = fake
            .until(30, "the item's message", |f| {
                f.calls("sendMessage")
                    .into_iter()
                    .find(|c| c.body["text"].as_str().is_some_and(|t| t.contains(&s)))
            })
            .await;
        let text = sent.body["text"].as_str().unwrap();
        assert!(
            text.contains(words) && text.contains(" UTC"),
            "{words}: {text}"
        );
        let keyboard = &sent.body["reply_markup"]["inline_keyboard"];
        assert!(
            keyboard.as_array().is_some_and(|k| !k.is_empty()),
            "{}",
            sent.body
        );
    }

    // Nobody answers: the hook denies (fail closed) …
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["behavior"], "deny",
        "{out}"
    );
    // … and every message says what happened, with no buttons left.
    for (id, words) in [
        (&a.id, "Denied automatically: nobody answered"),
        (&plain, "Expired: nobody decided in time"),
        (&rejecting, "Rejected automatically: nobody decided"),
    ] {
        let m = message_of(&fake, ME, id).await;
        let edited = fake
            .until(30, words, |f| {
                f.message(ME, m.message_id)
                    .filter(|m| m.text.contains(words))
            })
            .await;
        assert!(edited.buttons().is_empty(), "{:?}", edited.buttons());
        assert!(!edited.text.contains("if nobody"), "{}", edited.text);
    }
}

#[test]
fn a_bad_discipline_setting_stops_serve_with_one_line_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, key) in [
        (
            "[[telegram.chats]]\nname = \"a\"\nchat_id = 1\nquiet_hours = \"22:00 to 07:00\"\n",
            "quiet_hours",
        ),
        (
            "[[kinds]]\nmatch = \"claude.*\"\ngrace_secs = 0\ntimeout_secs = 0\n",
            "timeout_secs",
        ),
        ("[[kinds]]\nmatch = \"claude.*\"\ngrace = 5\n", "grace"),
    ] {
        let cfg = dir.path().join("bad.toml");
        std::fs::write(&cfg, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args([
                "serve",
                "--config",
                cfg.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .env("HANDOFF_DB", dir.path().join("h.db"))
            .env_remove("HANDOFF_TELEGRAM_TOKEN")
            .output()
            .unwrap();
        let err = common::stderr(&out);
        assert!(!out.status.success(), "{text}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(key), "{key}: {err}");
    }
}

#[tokio::test]
async fn a_given_timeout_wins_over_the_kinds_one_and_still_denies() {
    let db = TempDb::new();
    db.open().await.close().await;
    let cfg = db.dir.path().join("kinds.toml");
    std::fs::write(
        &cfg,
        "[[kinds]]\nmatch = \"claude.*\"\ntimeout_secs = 600\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    for (cmd, args, env) in [
        (
            "echo flag",
            vec!["--timeout", "1s"],
            vec![("HANDOFF_CONFIG", cfg)],
        ),
        (
            "echo env",
            vec![],
            vec![("HANDOFF_CONFIG", cfg), ("HANDOFF_HOOK_TIMEOUT", "1s")],
        ),
    ] {
        let ev = permission_request("s-1", "Bash", bash(cmd));
        let (code, out, err) = finish(spawn_hook(&db, &ev.to_string(), &args, &env));
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out["hookSpecificOutput"]["decision"]["behavior"], "deny",
            "{out}"
        );
        let a = prompt(&db, cmd).await;
        assert_eq!(a.expires_at.unwrap() - a.created_at, 1_000, "{cmd}");
    }
}
