//! Counting the database calls a store operation makes: every
//! statement the store sends to SQLite goes through sqlx's executor, which
//! reports each one as a `sqlx::query` tracing event (one per call, however
//! many statements its text holds). A layer installed for the whole test
//! binary counts them; tests take turns ([`TURN`]) so the counts are their
//! own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use handoff::store::Store;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

use super::TempDb;

/// The statements sqlx ran while counting was on, by their summary.
#[derive(Default)]
struct Calls {
    on: AtomicBool,
    seen: Mutex<Vec<String>>,
}

struct Counter(&'static Calls);

impl<S: tracing::Subscriber> Layer<S> for Counter {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" || !self.0.on.load(Ordering::SeqCst) {
            return;
        }
        let mut v = Summary(String::new());
        event.record(&mut v);
        self.0.seen.lock().unwrap().push(v.0);
    }
}

struct Summary(String);

impl tracing::field::Visit for Summary {
    fn record_str(&mut self, f: &tracing::field::Field, value: &str) {
        if f.name() == "summary" {
            self.0 = value.to_string();
        }
    }
    fn record_debug(&mut self, f: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if f.name() == "summary" {
            self.0 = format!("{value:?}");
        }
    }
}

fn calls() -> &'static Calls {
    static CALLS: OnceLock<&'static Calls> = OnceLock::new();
    CALLS.get_or_init(|| {
        let calls: &'static Calls = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Registry::default().with(Counter(calls)))
            .expect("the only subscriber of this test binary");
        calls
    })
}

/// Install the counting layer (idempotent). Call it before the first
/// store of a test opens, so no statement escapes the subscriber.
pub fn install() {
    calls();
}

/// One test at a time: the counter is process-wide.
pub static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The statements `f` makes the store run.
pub async fn counted<T>(f: impl Future<Output = T>) -> (T, Vec<String>) {
    let c = calls();
    c.seen.lock().unwrap().clear();
    c.on.store(true, Ordering::SeqCst);
    let out = f.await;
    c.on.store(false, Ordering::SeqCst);
    (out, std::mem::take(&mut *c.seen.lock().unwrap()))
}

/// A store whose writer already holds its connection: the first write of
/// a fresh store may open one (its setup pragmas are not the write's calls).
pub async fn warmed(db: &TempDb) -> Store {
    let store = db.open().await;
    warm(&store).await;
    store
}

/// Make `store`'s writer take its connection (see [`warmed`]), and let it
/// know the projects of the sessions the counted writes name (`s1`,
/// `sess-1`, in `proj`): a write naming a session this handle has not seen
/// reads the session's project once, before its one call.
pub async fn warm(store: &Store) {
    for (id, project) in [("warm-up", ""), ("s1", "proj"), ("sess-1", "proj")] {
        store
            .register_session(&handoff::store::sessions::NewSession {
                session_id: id.into(),
                agent: "warm-up".into(),
                project: project.into(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
}
