//! The Inbox's Sessions page in a real headless Chromium at 375 px wide,
//! against a real `handoff serve`: a registered session shows as working;
//! when its agent asks (`handoff ask --wait` as a real process) it turns
//! to waiting on a question, its question one tap away; answered in the
//! page, the agent's `ask` returns and the session is working again — all
//! live over the event stream, without a reload.
//!
//! Needs Debian's `chromium` and `chromium-driver` (as `inbox_browser`).

mod common;

use std::process::{Command, Stdio};

use common::daemon::Daemon;
use common::webdriver::Browser;
use common::{TempDb, json};
use serde_json::json;

/// `true` when the session card `key` shows state `arguments[1]`.
const STATE_IS: &str = "const c = document.querySelector(`article[data-key=\"${arguments[0]}\"]`);
                        return !!c && c.dataset.state === arguments[1] && !c.closest('[hidden]');";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_page_follows_a_session_from_working_to_waiting_and_back() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\n").unwrap();
    let daemon = Daemon::start(&db.path, &cfg);
    let base = format!("http://{}", daemon.addr);

    // Two sessions in two projects, registered as their agents would.
    for (id, agent, project) in [("s-web-1", "claude", "web"), ("s-api-1", "codex", "api")] {
        let out = db.cli(&[
            "session",
            "register",
            "--session",
            id,
            "--agent",
            agent,
            "--project",
            project,
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    let link = json(&db.cli(&["--json", "inbox-link", "--url", &base, "--as", "alice"]));
    let b = Browser::start(375, 812).await;
    b.goto(link["inbox_link"]["url"].as_str().unwrap()).await;
    b.click("#open-inbox").await;
    b.wait_for("the Inbox", "return location.pathname === '/'", json!([]))
        .await;
    b.click("#tab-sessions").await;
    b.wait_for(
        "the web session working",
        STATE_IS,
        json!(["s:s-web-1", "working"]),
    )
    .await;
    b.wait_for(
        "the api session working",
        STATE_IS,
        json!(["s:s-api-1", "working"]),
    )
    .await;
    // Grouped by project, with the host the CLI registered it from.
    let groups = b
        .exec(
            "return [...document.querySelectorAll('#fleet .group')].map((g) => g.dataset.project)",
            json!([]),
        )
        .await;
    assert_eq!(groups, json!(["api", "web"]));
    let card = b
        .text("article[data-key=\"s:s-web-1\"]")
        .await
        .to_lowercase();
    assert!(
        card.contains("working") && card.contains("claude"),
        "{card}"
    );
    assert!(card.contains("on "), "the host is shown: {card}");
    // A page that reloaded would lose this.
    b.exec("window.stayed = true", json!([])).await;

    // The agent asks, as a real process that waits for the answer.
    let ask = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "ask",
            "Ship the migration tonight?",
            "--project",
            "web",
            "--wait",
            "--timeout",
            "60s",
        ])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_SESSION", "s-web-1")
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run handoff ask");
    b.wait_for(
        "the session waiting on its question, live",
        STATE_IS,
        json!(["s:s-web-1", "waiting_question"]),
    )
    .await;
    let card = b
        .text("article[data-key=\"s:s-web-1\"]")
        .await
        .to_lowercase();
    assert!(
        card.contains("waiting on a question") && card.contains("ship the migration tonight?"),
        "{card}"
    );
    let other = b
        .text("article[data-key=\"s:s-api-1\"]")
        .await
        .to_lowercase();
    assert!(other.contains("working"), "the other session: {other}");
    // Readable at 375 px: nothing wider than the screen.
    let fits = b
        .exec(
            "return document.documentElement.scrollWidth <= window.innerWidth",
            json!([]),
        )
        .await;
    assert_eq!(fits, true, "horizontal scroll at 375 px");
    let shot =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sessions-screenshot.png");
    b.screenshot(&shot).await;

    // One tap to the question, answered there.
    b.click("article[data-key=\"s:s-web-1\"] a.item").await;
    b.wait_for(
        "the question's card in view",
        "const c = [...document.querySelectorAll('article.question')].find((a) => a.innerText.includes('Ship the migration'));
         return !!c && !c.closest('[hidden]');",
        json!([]),
    )
    .await;
    let qsel = "article.question";
    b.type_into(
        &format!("{qsel} textarea[data-draft=text]"),
        "yes, after 22:00",
    )
    .await;
    b.click(&format!("{qsel} button[data-act=answer]")).await;
    let out = tokio::task::spawn_blocking(move || ask.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let got = json(&out);
    assert_eq!(
        got["question"]["reply"]["text"], "yes, after 22:00",
        "{got}"
    );

    // Back on the Sessions page: working again, and the page never reloaded.
    b.click("#tab-sessions").await;
    b.wait_for(
        "the session working again",
        STATE_IS,
        json!(["s:s-web-1", "working"]),
    )
    .await;
    let stayed = b.exec("return window.stayed === true", json!([])).await;
    assert_eq!(stayed, true, "the page reloaded");
    drop(b);
    drop(daemon);
}
