//! A forum topic per project or session, through the real
//! daemon and the fake Bot API: each project's first item creates its topic
//! with createForumTopic, every item of that project is sent with its
//! `message_thread_id`, and a restarted daemon reuses the topics it
//! remembered instead of creating twins.

mod common;

use std::collections::{HashMap, HashSet};

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use handoff::store::Store;
use handoff::store::questions::NewQuestion;

const ME: i64 = 111;
const GROUP: i64 = -1001234;

async fn ask(store: &Store, project: &str, session: &str, title: &str) {
    store
        .flag(&NewQuestion {
            project: project.into(),
            agent: "agent-1".into(),
            session: session.into(),
            title: title.into(),
            ..Default::default()
        })
        .await
        .expect("flag");
}

/// Title → the thread its message went to, once `n` messages are in the group.
async fn threads(fake: &FakeTelegram, n: usize) -> HashMap<String, Option<i64>> {
    fake.until(30, "the messages in the group", |f| {
        let msgs = f.messages(GROUP);
        (msgs.len() >= n).then_some(msgs)
    })
    .await
    .into_iter()
    .map(|m| {
        let title = [
            "shop 1", "shop 2", "shop 3", "blog 1", "blog 2", "s-a 1", "s-b 1", "s-a 2",
        ]
        .into_iter()
        .map(|t| format!("{t}?"))
        .find(|t| m.text.contains(t.as_str()))
        .unwrap_or_default();
        (title, m.thread_id)
    })
    .collect()
}

fn topic_names(fake: &FakeTelegram) -> Vec<String> {
    fake.calls("createForumTopic")
        .iter()
        .map(|c| c.body["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn two_projects_get_two_topics_created_once_across_a_restart() {
    let db = TempDb::new();
    let store = db.open().await;
    let fake = FakeTelegram::start().await;
    // `extra` lands inside the last [[telegram.chats]] table.
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("team", GROUP, &[ME], &[ME])],
        "topics = \"project\"\n",
    );
    ask(&store, "shop", "s-1", "shop 1?").await;
    ask(&store, "shop", "s-2", "shop 2?").await;
    ask(&store, "blog", "s-3", "blog 1?").await;
    let mut d = Daemon::start(&db.path, &cfg);
    let first = threads(&fake, 3).await;
    let mut names = topic_names(&fake);
    names.sort();
    assert_eq!(names, ["blog", "shop"], "one topic per project");
    let (shop, blog) = (first["shop 1?"], first["blog 1?"]);
    assert!(
        shop.is_some() && blog.is_some() && shop != blog,
        "{first:?}"
    );
    assert_eq!(first["shop 2?"], shop, "the same project, the same topic");
    let created: HashSet<Option<i64>> = fake
        .calls("createForumTopic")
        .iter()
        .map(|c| c.body["chat_id"].as_i64())
        .collect();
    assert_eq!(created, HashSet::from([Some(GROUP)]));

    // Restarted: new items of both projects go to the topics remembered.
    assert!(d.terminate().success());
    ask(&store, "shop", "s-1", "shop 3?").await;
    ask(&store, "blog", "s-3", "blog 2?").await;
    let _d = Daemon::start(&db.path, &cfg);
    let after = threads(&fake, 5).await;
    assert_eq!(after["shop 3?"], shop, "{after:?}");
    assert_eq!(after["blog 2?"], blog, "{after:?}");
    assert_eq!(
        fake.calls("createForumTopic").len(),
        2,
        "no topic created twice: {:?}",
        topic_names(&fake)
    );
}

#[tokio::test]
async fn session_topics_split_one_project_by_session() {
    let db = TempDb::new();
    let store = db.open().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("team", GROUP, &[ME], &[ME])],
        "topics = \"session\"\n",
    );
    ask(&store, "shop", "s-a", "s-a 1?").await;
    ask(&store, "shop", "s-b", "s-b 1?").await;
    ask(&store, "shop", "s-a", "s-a 2?").await;
    let _d = Daemon::start(&db.path, &cfg);
    let t = threads(&fake, 3).await;
    let mut names = topic_names(&fake);
    names.sort();
    assert_eq!(names, ["shop · s-a", "shop · s-b"]);
    assert_eq!(t["s-a 1?"], t["s-a 2?"]);
    assert_ne!(t["s-a 1?"], t["s-b 1?"]);
    assert!(t.values().all(Option::is_some), "{t:?}");
}

/// `topics` needs a group, and cannot be mixed with a fixed `topic`.
#[test]
fn a_topics_setting_that_cannot_work_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (chat, want) in [
        (
            "chat_id = 5\ntopics = \"project\"\n",
            "needs a forum-enabled group (a negative chat_id)",
        ),
        (
            "chat_id = -5\ntopic = 3\ntopics = \"session\"\n",
            "sets both `topic`",
        ),
        (
            "chat_id = -5\ntopics = \"thread\"\n",
            "unknown variant `thread`",
        ),
    ] {
        let cfg = dir.path().join("handoff.toml");
        std::fs::write(&cfg, format!("[[telegram.chats]]\nname = \"team\"\n{chat}")).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(["status", "--config", cfg.to_str().unwrap()])
            .env("HANDOFF_DB", dir.path().join("none.db"))
            .output()
            .unwrap();
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{chat}: {err}");
    }
}
