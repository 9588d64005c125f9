//! A wake-up across connections on PostgreSQL (part of the `wake` section):
//! from `COMMIT` sent on one connection, its transaction having appended an
//! event, to `follow::listen` — LISTENing on a connection of its own — having
//! nudged its `Notify`. That is the path by which a write made through one
//! daemon (or the CLI) reaches another daemon's long polls, event streams
//! and waiters, minus the follower's own read of the log.
//!
//! The server is a throw-away one started the way the tests start theirs
//! (tests/common/postgres.rs: initdb in a temp dir, a Unix socket only,
//! fsync off; as `postgres` through runuser when run as root). The
//! listener's fallback poll is set to an hour, so every sample is a
//! notification, never the poll.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::postgres::PgPoolOptions;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::postgres::PgDb;
use crate::{Table, ms, pct};

pub async fn commit_to_nudge(quick: bool, t: &mut Table) {
    let n = if quick { 20 } else { 1000 };
    let db = PgDb::new().await;
    handoff::store::postgres::migrate(&db.url)
        .await
        .expect("apply migrations/postgres");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&db.url)
        .await
        .expect("connect");
    let nudge = Arc::new(Notify::new());
    let cancel = CancellationToken::new();
    let mut ready = Box::pin(nudge.notified());
    ready.as_mut().enable();
    let task = tokio::spawn(handoff::follow::listen::listen_every(
        pool,
        nudge.clone(),
        cancel.clone(),
        Duration::from_secs(3600),
    ));
    // Its first nudge says LISTEN is in place.
    tokio::time::timeout(Duration::from_secs(30), ready)
        .await
        .expect("the listener started");

    let mut writer = db.connect().await;
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let mut tx = writer.begin().await.expect("begin");
        sqlx::query(
            "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
             VALUES (1, 'question.answered', 'question', $1, 'bench', 'chat', 'bench', 'bench', '{}')",
        )
        .bind(format!("q{i}"))
        .execute(&mut *tx)
        .await
        .expect("append an event");
        let mut nudged = Box::pin(nudge.notified());
        nudged.as_mut().enable();
        let sent = Instant::now();
        // Why join: the nudge may come before COMMIT's reply does.
        let (committed, woke) = tokio::join!(tx.commit(), async {
            tokio::time::timeout(Duration::from_secs(30), nudged)
                .await
                .map(|()| Instant::now())
        });
        committed.expect("commit");
        let woke = woke.unwrap_or_else(|_| panic!("no nudge for event {i}"));
        lat.push(ms(woke - sent));
    }
    cancel.cancel();
    task.await.expect("the listener ended");
    lat.sort_by(f64::total_cmp);
    t.row(
        "wake",
        format!(
            "PostgreSQL: event committed on one connection → `follow::listen` nudged on another (LISTEN/NOTIFY, local server on a Unix socket, {n} commits), p50 / p99"
        ),
        format!("{:.2} / {:.2} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}
