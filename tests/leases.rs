//! Leases (the jobs only one daemon on a database may do) and Telegram
//! update claims, on both engines: each store handle is a pool of its own,
//! as another daemon would have. The daemons using them: tests/daemons_share.rs.

mod common;

use std::sync::Arc;

use common::engine::Db;
use handoff::clock::ManualClock;
use handoff::store::Store;

/// `n` stores on one database, each its own pool, on one manual clock.
async fn stores(db: &Db, n: usize, at: i64) -> (Vec<Store>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(at));
    let mut all = Vec::new();
    for _ in 0..n {
        all.push(db.open_with_clock(clock.clone()).await);
    }
    (all, clock)
}

async fn one_of_eight_racing_daemons_takes_a_lease_and_only_it_renews(db: Db) {
    let (all, clock) = stores(&db, 8, 1_000_000).await;
    let takes = futures_util::future::join_all(all.iter().enumerate().map(|(i, s)| async move {
        s.lease_take("telegram.poll", &format!("d{i}"), 60_000)
            .await
    }))
    .await;
    let won: Vec<usize> = takes
        .iter()
        .enumerate()
        .filter(|(_, t)| t.as_ref().expect("take").is_some())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(won.len(), 1, "exactly one holder: {takes:?}");
    let w = won[0];
    let holders = all[0].lease_holders().await.unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0].holder, format!("d{w}"));
    assert_eq!(holders[0].expires_at, 1_060_000);

    // The holder renews; the time it took the role stays.
    clock.advance(30_000);
    let renewed = all[w]
        .lease_take("telegram.poll", &format!("d{w}"), 60_000)
        .await
        .unwrap();
    assert_eq!(renewed, Some(1_090_000));
    let h = &all[1].lease_holders().await.unwrap()[0];
    assert_eq!((h.taken_at, h.expires_at), (1_000_000, 1_090_000));
    // Nobody else takes a live lease.
    for (i, s) in all.iter().enumerate().filter(|(i, _)| *i != w) {
        assert_eq!(
            s.lease_take("telegram.poll", &format!("d{i}"), 60_000)
                .await
                .unwrap(),
            None,
            "d{i} must not take d{w}'s live lease"
        );
    }
    for s in &all {
        s.close().await;
    }
}

async fn a_lapsed_lease_moves_to_another_daemon_and_a_released_one_moves_at_once(db: Db) {
    let (all, clock) = stores(&db, 2, 5_000).await;
    let (a, b) = (&all[0], &all[1]);
    assert_eq!(a.lease_take("r", "a", 1_000).await.unwrap(), Some(6_000));
    clock.advance(999);
    assert_eq!(
        b.lease_take("r", "b", 1_000).await.unwrap(),
        None,
        "still live"
    );
    clock.advance(1);
    assert_eq!(
        b.lease_take("r", "b", 1_000).await.unwrap(),
        Some(7_000),
        "lapsed: b takes it"
    );
    assert_eq!(
        a.lease_take("r", "a", 1_000).await.unwrap(),
        None,
        "the old holder cannot renew what another took"
    );
    let h = &a.lease_holders().await.unwrap()[0];
    assert_eq!((h.holder.as_str(), h.taken_at), ("b", 6_000));

    assert!(!a.lease_release("r", "a").await.unwrap(), "a holds nothing");
    assert!(b.lease_release("r", "b").await.unwrap());
    assert_eq!(
        a.lease_take("r", "a", 1_000).await.unwrap(),
        Some(7_000),
        "released: taken at once, not after the lapse"
    );
    for s in &all {
        s.close().await;
    }
}

async fn each_update_is_taken_by_exactly_one_of_two_daemons(db: Db) {
    let a = db.open().await;
    let b = db.open().await;
    let race = |s: Store, who: &'static str| async move {
        let mut won = Vec::new();
        for id in 1..=60 {
            if s.chat_update_take(id, who, 60_000).await.expect("take") {
                won.push(id);
            }
        }
        won
    };
    let (wa, wb) = tokio::join!(
        tokio::spawn(race(a.clone(), "a")),
        tokio::spawn(race(b.clone(), "b"))
    );
    let (wa, wb) = (wa.unwrap(), wb.unwrap());
    let mut all: Vec<i64> = wa.iter().chain(wb.iter()).copied().collect();
    all.sort();
    assert_eq!(all, (1..=60).collect::<Vec<_>>(), "a: {wa:?} b: {wb:?}");
    // Forgetting keeps the fresh ones (a day has not passed).
    assert_eq!(a.forget_chat_updates().await.unwrap(), 0);
    assert!(!b.chat_update_take(1, "b", 60_000).await.unwrap());
}

/// A take left unfinished (its daemon died mid-update) is taken again once
/// stale, or at once from a taker known dead; a finished one never.
async fn an_unfinished_update_is_taken_again_a_finished_one_never(db: Db) {
    let (a, clock) = db.open_manual(1_000_000).await;
    let b = db.open().await;
    assert!(a.chat_update_take(1, "a", 3_000).await.unwrap());
    assert!(a.chat_update_take(2, "a", 3_000).await.unwrap());
    assert!(a.chat_update_take(3, "a", 3_000).await.unwrap());
    assert!(a.chat_update_done(1, "a").await.unwrap());
    clock.advance(2_999);
    assert!(
        !a.chat_update_take(2, "b", 3_000).await.unwrap(),
        "fresh: its taker may be at it"
    );
    clock.advance(1);
    assert!(
        a.chat_update_take(2, "b", 3_000).await.unwrap(),
        "stale and unfinished"
    );
    assert!(
        !a.chat_update_done(2, "a").await.unwrap(),
        "a no longer holds it"
    );
    assert!(a.chat_update_done(2, "b").await.unwrap());
    clock.advance(1_000_000);
    assert!(
        !a.chat_update_take(1, "b", 3_000).await.unwrap(),
        "finished: never again"
    );
    assert!(
        !a.chat_update_take(2, "c", 3_000).await.unwrap(),
        "finished: never again"
    );
    assert_eq!(b.chat_update_taker(1).await.unwrap(), None);
    assert_eq!(b.chat_update_taker(3).await.unwrap().as_deref(), Some("a"));
    assert!(
        !b.chat_update_take_from(3, "b", "x").await.unwrap(),
        "x never took it"
    );
    assert!(b.chat_update_take_from(3, "b", "a").await.unwrap());
    assert!(
        !b.chat_update_take_from(3, "c", "a").await.unwrap(),
        "taken from a once"
    );
    assert!(b.chat_update_done(3, "b").await.unwrap());
    assert!(
        !b.chat_update_take_from(3, "c", "b").await.unwrap(),
        "finished"
    );
}

both_engines!(
    one_of_eight_racing_daemons_takes_a_lease_and_only_it_renews,
    a_lapsed_lease_moves_to_another_daemon_and_a_released_one_moves_at_once,
    each_update_is_taken_by_exactly_one_of_two_daemons,
    an_unfinished_update_is_taken_again_a_finished_one_never
);
