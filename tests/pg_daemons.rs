//! Three real `handoff serve` processes on one PostgreSQL database: the
//! jobs only one may do are held by one daemon at a time and move when it
//! dies; a write through one daemon wakes a long poll held by another
//! (LISTEN/NOTIFY); 64 deciders spread over the three make exactly one
//! decision and one execution per action. And the CLI on PostgreSQL: a
//! wait ended by another process's commit through LISTEN/NOTIFY.
//!
//! Where a test shows a wake came through LISTEN/NOTIFY, the process
//! woken runs with every other way to notice the write turned off: the
//! fallback poll of the event log once an hour (`HANDOFF_WATCH_FALLBACK_MS`)
//! and the `no-recheck` test switch (src/fault.rs), without which a long
//! poll re-reads the store every second and a CLI wait every 250 ms. Only
//! a notification can then end the wait within the test's window.

mod common;

use std::path::Path;
use std::time::Duration;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::postgres::PgDb;
use common::wait_for;
use serde_json::{Value, json};

const ME: i64 = 111;

/// What a process that must notice other processes' writes only through
/// LISTEN/NOTIFY runs with: no fallback poll within an hour, and no
/// re-read of its own between wakes (see the module doc).
const NOTIFY_ONLY: [(&str, &str); 3] = [
    ("HANDOFF_WATCH_FALLBACK_MS", "3600000"),
    ("HANDOFF_FAULT", "no-recheck"),
    ("HANDOFF_TEST_FAULTS_OK", "1"),
];

/// How long a wait that only a notification can end is given: generous on
/// a loaded machine, and far inside the hour a fallback poll would take.
/// The wait's own timeout is longer still ([`WAIT_TIMEOUT`]): a wait ended
/// by its timeout reads once more, and that read would see the write.
const NOTIFIED_WITHIN: Duration = Duration::from_secs(30);

/// The timeout the waits under test are given (the API's longest).
const WAIT_TIMEOUT: &str = "300s";

/// The name daemon 1's sessions on the server carry (see [`settled`]).
const DAEMON_1: &str = "handoff-daemon-1";

/// Three daemons on `pg`, chat against `fake`, open on loopback; daemon 1
/// notices the others' writes only through LISTEN/NOTIFY ([`NOTIFY_ONLY`]),
/// and its sessions on the server are named [`DAEMON_1`].
fn three(dir: &Path, pg: &PgDb, fake: &FakeTelegram) -> Vec<Daemon> {
    let cfg = write_config(
        dir,
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        "\n[http]\nopen = true\n",
    );
    let lease = ("HANDOFF_LEASE_MS", "1500");
    (0..3)
        .map(|i| {
            let mut env = vec![lease];
            let mut url = pg.url.clone();
            if i == 1 {
                env.extend(NOTIFY_ONLY);
                url = named(&pg.url, DAEMON_1);
            }
            Daemon::start_with(Path::new(&url), &cfg, &env)
        })
        .collect()
}

/// `url` with its sessions named `app` on the server.
fn named(url: &str, app: &str) -> String {
    format!("{url}&application_name={app}")
}

/// The number of entities daemon `addr` has long polls (or streams)
/// waiting on, from its `/metrics`.
async fn waiters(addr: &str) -> u64 {
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix("handoff_waiters "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no handoff_waiters in {text}"))
}

async fn health(addr: &str) -> Value {
    reqwest::get(format!("http://{addr}/healthz"))
        .await
        .expect("healthz answers")
        .json()
        .await
        .expect("healthz JSON")
}

/// Which of `addrs` holds `role`, once exactly one does.
async fn holder_of(addrs: &[String], role: &'static str) -> usize {
    wait_for(30, role, || async move {
        let mut holding = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            if health(a).await["roles"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x == role))
            {
                holding.push(i);
            }
        }
        assert!(holding.len() < 2, "two daemons hold {role}: {holding:?}");
        holding.first().copied()
    })
    .await
}

async fn call(
    http: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let req = match method {
        "GET" => http.get(format!("http://{addr}{path}")),
        _ => http.post(format!("http://{addr}{path}")).json(&body),
    };
    let res = req.send().await.expect("daemon answers");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn three_daemons_share_one_database_and_each_job_runs_once() {
    let pg = PgDb::new().await;
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut daemons = three(dir.path(), &pg, &fake);
    let addrs: Vec<String> = daemons.iter().map(|d| d.addr.clone()).collect();
    let poller = holder_of(&addrs, "telegram.poll").await;
    let sender = holder_of(&addrs, "chat.send").await;
    let http = reqwest::Client::new();

    // A question flagged through daemon 0, long-polled on daemon 1,
    // answered through daemon 2: only the reply's notification can end
    // daemon 1's poll within its timeout.
    let (st, v) = call(
        &http,
        &addrs[0],
        "POST",
        "/v1/questions",
        json!({"project": "p", "title": "Ship v2?", "options": [{"label": "yes"}, {"label": "no"}]}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let id = v["question"]["id"].as_str().expect("id").to_string();
    let poll = {
        let (http, addr, id) = (http.clone(), addrs[1].clone(), id.clone());
        tokio::spawn(async move {
            call(
                &http,
                &addr,
                "GET",
                &format!("/v1/questions/{id}?wait=reply&timeout={WAIT_TIMEOUT}"),
                Value::Null,
            )
            .await
        })
    };
    // Pushed once, by the one sender.
    let msg = fake
        .until(30, "the question in chat", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Ship v2?"))
        })
        .await;
    // The poll waits on daemon 1, its first read over, before the reply
    // is written: a read after the reply would see it without a wake.
    wait_for(30, "daemon 1's long poll waiting", || async {
        (waiters(&addrs[1]).await > 0).then_some(())
    })
    .await;
    let pool = sqlx::PgPool::connect(&pg.url)
        .await
        .expect("a pool of the test's");
    settled(&pool, DAEMON_1, daemons[1].child.id()).await;
    let (st, v) = call(
        &http,
        &addrs[2],
        "POST",
        &format!("/v1/questions/{id}/reply"),
        json!({"text": "yes, after lunch", "by": "alice"}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let (st, v) = tokio::time::timeout(NOTIFIED_WITHIN, poll)
        .await
        .expect("daemon 1's long poll woken: only the reply's notification could wake it")
        .unwrap();
    assert!((200..300).contains(&st), "{st}: {v}");
    assert_eq!(v["outcome"], "done", "{v}");
    assert_eq!(v["question"]["reply"]["text"], "yes, after lunch", "{v}");
    fake.until(30, "the message to show the answer", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("after lunch"))
            .map(|_| ())
    })
    .await;
    assert_eq!(
        fake.messages(ME)
            .iter()
            .filter(|m| m.text.contains("Ship v2?"))
            .count(),
        1,
        "pushed once"
    );

    // 64 deciders over the three daemons: one decision; three executors:
    // one claim.
    let (st, v) = call(
        &http,
        &addrs[0],
        "POST",
        "/v1/actions",
        json!({"kind": "deploy", "summary": "v2 to prod"}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let action = v["action"]["id"].as_str().expect("action id").to_string();
    let approvals = futures_util::future::join_all((0..64).map(|i| {
        let (http, addr, action) = (http.clone(), addrs[i % 3].clone(), action.clone());
        async move {
            call(
                &http,
                &addr,
                "POST",
                &format!("/v1/actions/{action}/approve"),
                json!({"by": format!("approver{i}")}),
            )
            .await
        }
    }))
    .await;
    let outcomes: Vec<(u16, String)> = approvals
        .iter()
        .map(|(st, v)| (*st, v["outcome"].as_str().unwrap_or("?").to_string()))
        .collect();
    let won = outcomes.iter().filter(|(_, o)| o == "approved").count();
    assert_eq!(won, 1, "one decision: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|(st, o)| *st == 200 && (o == "approved" || o == "already_decided")),
        "{outcomes:?}"
    );
    let claims = futures_util::future::join_all(addrs.iter().map(|addr| {
        let (http, addr, action) = (http.clone(), addr.clone(), action.clone());
        async move {
            call(
                &http,
                &addr,
                "POST",
                &format!("/v1/actions/{action}/claim"),
                json!({"owner": "runner", "lease": "60s"}),
            )
            .await
        }
    }))
    .await;
    let statuses: Vec<u16> = claims.iter().map(|(st, _)| *st).collect();
    assert_eq!(
        statuses.iter().filter(|st| **st == 200).count(),
        1,
        "one execution: {statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|st| **st == 409).count(),
        2,
        "{statuses:?}"
    );
    let (_, audit) = call(
        &http,
        &addrs[1],
        "GET",
        &format!("/v1/actions/{action}/audit"),
        Value::Null,
    )
    .await;
    let text = audit.to_string();
    assert_eq!(text.matches("\"approved\"").count(), 1, "{text}");

    // The daemons holding the roles die: the others take them over and
    // answer taps; the survivors never poll at once.
    daemons[poller].kill9();
    if sender != poller {
        daemons[sender].kill9();
    }
    let left: Vec<String> = (0..3)
        .filter(|i| *i != poller && *i != sender)
        .map(|i| addrs[i].clone())
        .collect();
    holder_of(&left, "telegram.poll").await;
    holder_of(&left, "chat.send").await;
    let (st, v) = call(
        &http,
        &left[0],
        "POST",
        "/v1/questions",
        json!({"project": "p", "title": "Roll back?", "options": [{"label": "yes"}, {"label": "no"}]}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let rollback = v["question"]["id"].as_str().expect("id").to_string();
    let msg = fake
        .until(30, "the second question in chat", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Roll back?"))
        })
        .await;
    let (cb, update) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("no"));
    fake.until(30, "the tap answered", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
    // Handled and confirmed (a poll asked past it): no daemon takes the
    // tap again, so what the store holds now is all it will hold of it.
    fake.until(30, "the tap's update confirmed", |f| {
        f.confirmed(update).then_some(())
    })
    .await;
    let store = handoff::store::Store::open_postgres(
        &pg.url,
        std::sync::Arc::new(handoff::clock::SystemClock),
    )
    .await
    .expect("open the store");
    let history = store
        .question_replies(&rollback)
        .await
        .expect("read the reply history");
    assert_eq!(history.len(), 1, "the tap applied once: {history:?}");
    assert_eq!(
        (history[0].reply.as_deref(), history[0].source),
        (Some("no"), handoff::store::Channel::Chat),
        "{history:?}"
    );
    assert_eq!(fake.conflicts(), 0, "two daemons polled at once");
}

#[tokio::test]
async fn the_cli_works_on_a_postgres_database() {
    let pg = PgDb::new().await;
    let db = Path::new(&pg.url);
    let run = |args: &[&str]| {
        let out = common::cli_at(db, args);
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        out
    };
    // The first token, before any daemon (a non-loopback daemon needs one).
    let out = run(&[
        "--json", "token", "create", "--name", "ops", "--role", "admin",
    ]);
    assert!(common::json(&out).to_string().contains("hnd_"));
    let out = run(&[
        "--json",
        "ask",
        "Which region?",
        "--option",
        "eu",
        "--option",
        "us",
    ]);
    let id = common::json(&out)["question"]["id"]
        .as_str()
        .expect("question id")
        .to_string();
    run(&["reply", &id, "eu", "--by", "alice"]);
    let out = run(&["--json", "pending"]);
    let text = common::json(&out).to_string();
    assert!(text.contains("\"eu\"") && text.contains("alice"), "{text}");
    // The password never shows, even in an error.
    let at = pg.url.split_once('@').expect("a user in the URL").1;
    let secret = format!("postgres://nobody:hunter2@{at}");
    let out = common::cli_at(Path::new(&secret), &["pending"]);
    let err = common::stderr(&out);
    assert!(!out.status.success() && err.contains("nobody"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// A `handoff propose` waiting for its decision with no daemon (the CLI on
/// the server itself) is ended by an approval another process commits,
/// through LISTEN/NOTIFY. The CLI runs with [`NOTIFY_ONLY`], so neither its
/// own re-reads nor the fallback poll can end the wait; and the approval
/// comes only once the CLI is parked in its wait (see [`settled`]), so it
/// is that approval's notification, and nothing else, that wakes it.
#[tokio::test]
async fn a_cli_wait_on_postgres_is_ended_by_another_processs_commit_through_notify() {
    let pg = PgDb::new().await;
    let store = handoff::store::Store::open_postgres(
        &pg.url,
        std::sync::Arc::new(handoff::clock::SystemClock),
    )
    .await
    .expect("open the store");
    // Named, so the test can tell the CLI's sessions on the server.
    let app = "handoff-cli-wait";
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "ship it",
        ])
        .args(["--wait", "--timeout", WAIT_TIMEOUT])
        .env("HANDOFF_DB", named(&pg.url, app))
        .envs(NOTIFY_ONLY)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn handoff propose");
    let pid = child.id().expect("the CLI's pid");
    let id = wait_for(30, "the proposal", || {
        let store = store.clone();
        async move {
            let pending = store
                .list_actions(Some(handoff::store::actions::Status::Pending))
                .await
                .expect("list actions");
            pending.first().map(|a| a.id.clone())
        }
    })
    .await;
    let pool = sqlx::PgPool::connect(&pg.url)
        .await
        .expect("a pool of the test's");
    // Parked: LISTEN in place, and the read its first nudge starts over.
    settled(&pool, app, pid).await;
    let actor = handoff::store::actions::Actor {
        name: "carol",
        channel: handoff::store::Channel::Inbox,
    };
    store.approve(&id, actor, None).await.expect("approve");
    let out = tokio::time::timeout(NOTIFIED_WITHIN, child.wait_with_output())
        .await
        .expect("propose returned after the approval: only its notification could end the wait")
        .expect("propose ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("propose prints JSON");
    assert_eq!(v["action"]["status"], "approved", "{v}");
    assert_eq!(v["action"]["decided_by"], "carol", "{v}");
}

/// Wait until process `pid`, whose sessions on the server are named `app`,
/// has settled: its LISTEN session is in place and it ran a statement
/// since, none of its sessions runs one now, and it and its server
/// processes are all asleep, alike on two looks in a row, so nothing is in
/// flight between them. What it read last, it has taken; it now waits for
/// a nudge. Why: a read still under way when the write under test commits
/// sees it without any wake, and a notification that comes while a wait
/// is still reading is lost to it (with [`NOTIFY_ONLY`], for good).
async fn settled(pool: &sqlx::PgPool, app: &str, pid: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut last = None;
    loop {
        let now = quiet(pool, app, pid).await;
        if now.is_some() && now == last {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{app} never settled within 30 s; last look: {now:?}"
        );
        last = now;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The sessions of `app` (server pid, start of its last statement) if
/// process `pid` looks settled now (see [`settled`]), else None.
async fn quiet(pool: &sqlx::PgPool, app: &str, pid: u32) -> Option<Vec<(i32, f64)>> {
    if !asleep(pid) {
        return None;
    }
    let sessions: Vec<(i32, String, String, f64)> = sqlx::query_as(
        "SELECT pid, coalesce(state, ''), coalesce(query, ''),
                coalesce(extract(epoch FROM query_start), 0)::float8
         FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
    )
    .bind(app)
    .fetch_all(pool)
    .await
    .expect("read pg_stat_activity");
    let is_listen = |q: &str| q.starts_with("LISTEN") && q.contains("handoff_events");
    let listen = sessions
        .iter()
        .find(|(_, state, q, _)| is_listen(q) && state == "idle")?
        .3;
    let others = || sessions.iter().filter(|(_, _, q, _)| !is_listen(q));
    let read_since = others().any(|(_, _, _, at)| *at > listen);
    let none_running = others().all(|(_, state, _, _)| state == "idle");
    let servers_asleep = sessions.iter().all(|(p, _, _, _)| asleep(*p as u32));
    (read_since && none_running && servers_asleep && asleep(pid))
        .then(|| sessions.iter().map(|(p, _, _, at)| (*p, *at)).collect())
}

/// Whether every thread of process `pid` is asleep (state `S` in
/// `/proc/<pid>/task/*/stat`): none is running or waiting to run.
fn asleep(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|t| {
        std::fs::read_to_string(t.path().join("stat"))
            .ok()
            .and_then(|stat| {
                // `pid (comm) S …`: the state follows the last `)`.
                stat.rsplit_once(") ")
                    .map(|(_, rest)| rest.starts_with('S'))
            })
            .unwrap_or(false)
    })
}
