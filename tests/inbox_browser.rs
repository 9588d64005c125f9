//! The web Inbox in a real headless Chromium, driven over WebDriver, against
//! a real `handoff serve` process that needs tokens (no `[http] open`): the
//! login link from `handoff inbox-link`, answering a question flagged by
//! `handoff ask`, approving an action proposed by `handoff propose` after
//! editing its arguments (and a refused edit shown inline). The store is
//! checked through the CLI, as the agent would see it. Saves a screenshot
//! to `target/inbox-screenshot.png`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them); without them the test fails with what to install.

mod common;

use common::daemon::Daemon;
use common::webdriver::Browser;
use common::{TempDb, json};
use serde_json::{Value, json};

fn cli_json(db: &TempDb, args: &[&str]) -> Value {
    let out = db.cli(args);
    assert!(
        out.status.success(),
        "handoff {args:?} failed: {}",
        common::stderr(&out)
    );
    json(&out)
}

/// `true` when the card `key` contains `needle` in its text.
const CARD_HAS: &str = "const c = document.querySelector(`article[data-key=\"${arguments[0]}\"]`);
                        return !!c && c.innerText.includes(arguments[1]);";

const CARD_GONE: &str = "return !document.querySelector(`article[data-key=\"${arguments[0]}\"]`);";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_in_chromium_answers_a_question_and_approves_an_edited_action() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\n").unwrap();
    let daemon = Daemon::start(&db.path, &cfg);
    let base = format!("http://{}", daemon.addr);

    // The agent side, through the CLI: a question (its title tries to be
    // HTML) and an action waiting for approval.
    let q = cli_json(
        &db,
        &[
            "--json",
            "ask",
            "<img src=x onerror=alert(1)> Which database?",
            "--detail",
            "for the launch",
            "--option",
            "postgres",
            "--option",
            "mysql",
            "--project",
            "web",
        ],
    );
    let qid = q["question"]["id"].as_str().unwrap().to_string();
    let a = cli_json(
        &db,
        &[
            "--json",
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "Send the launch mail",
            "--args",
            r#"{"to":"team@example.com","subject":"Launch"}"#,
            "--project",
            "web",
            "--ttl",
            "24h",
        ],
    );
    let aid = a["action"]["id"].as_str().unwrap().to_string();

    let link = cli_json(
        &db,
        &["--json", "inbox-link", "--url", &base, "--as", "alice"],
    );
    let url = link["inbox_link"]["url"].as_str().unwrap().to_string();

    // A phone-sized window.
    let b = Browser::start(375, 812).await;
    b.goto(&url).await;
    // Opening the link shows a button; pressing it logs in.
    b.click("#open-inbox").await;
    b.wait_for(
        "the login button to open the Inbox",
        "return location.pathname === '/'",
        json!([]),
    )
    .await;
    assert_eq!(
        b.url().await,
        format!("{base}/"),
        "the login link redirects to /"
    );
    let qcard = format!("q:{qid}");
    let acard = format!("a:{aid}");
    b.wait_for(
        "the question is listed",
        CARD_HAS,
        json!([qcard, "Which database?"]),
    )
    .await;
    b.wait_for(
        "the action is listed",
        CARD_HAS,
        json!([acard, "Send the launch mail"]),
    )
    .await;
    // The card says what happens if nobody decides, and when.
    b.wait_for(
        "the action's expiry sentence",
        CARD_HAS,
        json!([acard, "Expires at "]),
    )
    .await;

    // User text is text: the would-be tag shows literally, no element made.
    let title = b.text(&format!("article[data-key=\"{qcard}\"] h3")).await;
    assert!(title.starts_with("<img src=x"), "{title}");
    let imgs = b
        .exec(
            "return document.querySelectorAll('main img').length",
            json!([]),
        )
        .await;
    assert_eq!(imgs, 0);
    // Readable at 375 px: nothing wider than the screen.
    let fits = b
        .exec(
            "return document.documentElement.scrollWidth <= window.innerWidth",
            json!([]),
        )
        .await;
    assert_eq!(fits, true, "horizontal scroll at 375 px");

    // Answer the question in the page.
    let qsel = format!("article[data-key=\"{qcard}\"]");
    b.type_into(
        &format!("{qsel} textarea[data-draft=text]"),
        "postgres, version 16",
    )
    .await;
    b.click(&format!("{qsel} button[data-act=answer]")).await;
    b.wait_for(
        "the page says who answered where",
        CARD_HAS,
        json!([qcard, "answered in the Inbox by alice, not yet picked up"]),
    )
    .await;

    let left = b
        .exec(
            "return document.querySelector(`article[data-key=\"${arguments[0]}\"] textarea`).value",
            json!([qcard]),
        )
        .await;
    assert_eq!(left, "", "a sent answer leaves no draft behind");

    // The store changed: an Inbox reply by the session's name.
    let shown = cli_json(&db, &["--json", "show", &qid]);
    let reply = &shown["question"]["reply"];
    assert_eq!(reply["text"], "postgres, version 16", "{shown}");
    assert_eq!(reply["source"], "inbox");
    assert_eq!(reply["by"], "alice");
    assert_eq!(reply["seen_at"], Value::Null);

    // The agent side sees it, and the page follows live (SSE) that the
    // agent picked it up.
    let pending = cli_json(&db, &["--json", "pending", "--project", "web"]);
    let got = pending["replies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["question"]["id"] == qid.as_str())
        .unwrap_or_else(|| panic!("the agent does not see the answer: {pending}"));
    assert_eq!(got["question"]["reply"]["text"], "postgres, version 16");
    b.wait_for(
        "the page shows the pickup without a reload",
        CARD_HAS,
        json!([qcard, "picked up by the agent"]),
    )
    .await;

    // A bad edit (an unknown key) is refused inline; nothing changes.
    let asel = format!("article[data-key=\"{acard}\"]");
    b.click(&format!("{asel} button[data-act=edit]")).await;
    b.type_into(
        &format!("{asel} textarea[data-draft=args]"),
        r#"{"to":"team@example.com","subject":"Launch","bcc":"boss@example.com"}"#,
    )
    .await;
    b.click(&format!("{asel} button[data-act=approve-edited]"))
        .await;
    b.wait_for(
        "the refusal is shown next to the action",
        "const e = document.querySelector(`article[data-key=\"${arguments[0]}\"] .err`);
         return !!e && e.textContent.includes('bcc');",
        json!([acard]),
    )
    .await;
    let still = cli_json(&db, &["--json", "action", &aid])["action"].clone();
    assert_eq!(still["status"], "pending", "{still}");
    assert_eq!(still["effective_args"]["subject"], "Launch");
    assert!(still["effective_args"].get("bcc").is_none());

    // A tall phone-width window, scrolled to the top: the answered
    // question, the action and its inline refusal in one picture.
    b.set_window(375, 1400).await;
    b.exec("window.scrollTo(0, 0)", json!([])).await;
    let shot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/inbox-screenshot.png");
    b.screenshot(&shot).await;

    // A good edit: the subject changes, and the approval carries it.
    b.type_into(
        &format!("{asel} textarea[data-draft=args]"),
        r#"{"to":"team@example.com","subject":"Launch v2"}"#,
    )
    .await;
    b.click(&format!("{asel} button[data-act=approve-edited]"))
        .await;
    b.wait_for(
        "the approved action leaves the list",
        CARD_GONE,
        json!([acard]),
    )
    .await;
    let done = cli_json(&db, &["--json", "action", &aid])["action"].clone();
    assert_eq!(done["status"], "approved", "{done}");
    assert_eq!(done["effective_args"]["subject"], "Launch v2");
    assert_eq!(done["args"]["subject"], "Launch", "the proposal is kept");
    assert_eq!(done["decided_by"], "alice");
    drop(b);
    drop(daemon);
}

/// The `data-key` of the card whose text contains `arguments[0]`, or null.
const KEY_OF: &str = "const c = [...document.querySelectorAll('article')].find((a) => a.innerText.includes(arguments[0]));
                      return c ? c.dataset.key : null;";

/// In the Inbox: a multiple-choice AskUserQuestion card answered
/// with two ticks and words (the hook hands Claude Code the chat's answer
/// shape), and a standing grant revoked by a click (the CLI sees it gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_in_chromium_submits_a_multiple_choice_and_revokes_a_grant() {
    use common::hook::{finish, spawn_hook};
    use handoff::store::grants::{NewGrant, Scope};

    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\n").unwrap();
    let daemon = Daemon::start(&db.path, &cfg);
    let base = format!("http://{}", daemon.addr);

    // A live "for this session" grant, saved the way a tap saves it.
    let store = db.open().await;
    let a = store
        .propose(&common::new_action(
            "claude.Bash",
            r#"{"command":"cargo build --release"}"#,
        ))
        .await
        .unwrap()
        .action;
    let g = store
        .grant_create(
            &NewGrant {
                scope: Scope::Session,
                agent: "claude",
                session: "sess-1",
                project: "proj",
                tool: "Bash",
                pattern: "cargo build:*",
                action_id: &a.id,
                by: "bob",
                expires_at: None,
                path: "",
            },
            handoff::store::Channel::Chat,
        )
        .await
        .unwrap();
    store
        .approve(&a.id, handoff::store::actions::Actor::cli("bob"), None)
        .await
        .unwrap();
    assert!(store.grant_confirm(&g.id).await.unwrap());

    // Claude Code asks a multiple choice through the hook.
    let question = "Which checks should run before the release?";
    let ev = json!({
        "session_id": "s-multi", "cwd": "/home/dev/shop", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_m",
        "tool_input": {"questions": [{"question": question, "header": "Checks", "multiSelect": true,
            "options": [{"label": "Lint", "description": "clippy"}, {"label": "Unit", "description": "cargo test"},
                        {"label": "E2E", "description": "browser"}]}]}
    });
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &[]);

    let link = cli_json(
        &db,
        &["--json", "inbox-link", "--url", &base, "--as", "alice"],
    );
    let b = Browser::start(1000, 900).await;
    b.goto(link["inbox_link"]["url"].as_str().unwrap()).await;
    b.click("#open-inbox").await;
    b.wait_for(
        "the card is listed",
        "return !!document.querySelector('article.choice input[data-pick]')",
        json!([]),
    )
    .await;
    let key = b.exec(KEY_OF, json!([question])).await;
    let key = key.as_str().expect("the card's key").to_string();
    let sel = format!("article[data-key=\"{key}\"]");
    // Toggles, not buttons: two ticks and words, one Submit.
    b.click(&format!("{sel} input[data-pick=\"0\"]")).await;
    b.click(&format!("{sel} input[data-pick=\"2\"]")).await;
    b.type_into(&format!("{sel} input[data-draft=other]"), "and a smoke run")
        .await;
    b.click(&format!("{sel} button[data-act=submit]")).await;
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"]["answers"][question],
        "Lint, E2E, and a smoke run",
        "{out}"
    );
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    b.wait_for("the answered card leaves", CARD_GONE, json!([key]))
        .await;

    // The grant, as `handoff grants` shows it, revoked with a click.
    let gkey = format!("g:{}", g.id);
    b.wait_for(
        "the grant is listed with its rule and giver",
        CARD_HAS,
        json!([gkey, "Bash(cargo build:*)"]),
    )
    .await;
    let listed = b.text(&format!("article[data-key=\"{gkey}\"]")).await;
    assert!(
        listed.contains("granted by bob") && listed.contains("sess-1"),
        "{listed}"
    );
    b.click(&format!(
        "article[data-key=\"{gkey}\"] button[data-act=revoke-open]"
    ))
    .await;
    b.click(&format!(
        "article[data-key=\"{gkey}\"] button[data-act=revoke]"
    ))
    .await;
    b.wait_for("the revoked grant leaves", CARD_GONE, json!([gkey]))
        .await;
    let live = cli_json(&db, &["--json", "grants"]);
    assert_eq!(live["grants"], json!([]), "{live}");
    let all = cli_json(&db, &["--json", "grants", "--all"]);
    assert_eq!(all["grants"][0]["revoked_by"], "alice", "{all}");
    drop(b);
    drop(daemon);
}
