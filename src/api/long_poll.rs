//! Long polls, written once for every item route: reading `wait` and
//! `timeout` from the query (the same refusals everywhere), and waiting
//! until a condition holds on an item, the timeout passes or the daemon
//! shuts down.
//!
//! A wait is driven by the daemon's in-process waiters (woken when the
//! waiter follower applies an event about the item) and always re-reads the
//! store: a wake is a hint, the store is the truth. This module does not
//! know any item kind; the routes give it the read and the condition.

use std::time::Duration;

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::wait_timeout;
use crate::shared::Shared;

/// A waiter re-reads the store at least this often, even without a wake
/// (covers writes whose event the follower has not applied yet, and lazy
/// expiry that no event announces).
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// How long a long poll sleeps without a wake: [`RECHECK`], or the
/// fallback interval with the `no-recheck` test switch (`crate::fault`),
/// so a test can tell a wake by another process's write from a re-read.
fn recheck() -> Duration {
    if crate::fault::on("no-recheck") {
        // FAULT(no-recheck): no re-read of our own between wakes.
        crate::follow::watch::fallback()
    } else {
        RECHECK
    }
}

/// How a long poll ended.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WaitOutcome {
    /// What was waited for happened.
    Done,
    /// The timeout passed first.
    Timeout,
}

impl WaitOutcome {
    pub(crate) fn of(done: bool) -> Self {
        if done {
            WaitOutcome::Done
        } else {
            WaitOutcome::Timeout
        }
    }
}

/// What `?wait=…&timeout=…` asks of an item route: `None` without `wait`
/// (a `timeout` alone is refused), else the condition `waits` names for
/// the `wait` value and how long to wait. `hint` lists the accepted values
/// for the refusals (`wait=reply or wait=change`).
pub(crate) fn asked<C: Copy>(
    wait: Option<&str>,
    timeout: Option<&str>,
    waits: &[(&str, C)],
    hint: &str,
) -> ApiResult<Option<(C, Duration)>> {
    let Some(wait) = wait else {
        if timeout.is_some() {
            return Err(ApiError::invalid(format!("timeout needs {hint}")));
        }
        return Ok(None);
    };
    let Some(&(_, cond)) = waits.iter().find(|(name, _)| *name == wait) else {
        return Err(ApiError::invalid(format!("wait=`{wait}`: use {hint}")));
    };
    Ok(Some((cond, wait_timeout(timeout)?)))
}

/// Read an item with `read` until `done` holds for it; returns the last
/// read and whether `done` held. Wakes on the waiter key `key`
/// (`question:<id>`, `action:<id>`, …).
pub(crate) async fn watch<T, R, Fut>(
    s: &Shared,
    caller: &Caller,
    key: &str,
    timeout: Duration,
    read: R,
    done: impl Fn(&T) -> bool,
) -> ApiResult<(T, bool)>
where
    R: Fn() -> Fut,
    Fut: Future<Output = ApiResult<T>>,
{
    wait_until(s, caller, key, timeout, || {
        let next = read();
        let done = &done;
        async move {
            let v = next.await?;
            let d = done(&v);
            Ok((v, d))
        }
    })
    .await
}

/// Wait until `check` says done (`(value, true)`), the `timeout` passes, or
/// the daemon shuts down; returns the last value read and whether it was
/// done. Wakes on the waiter key `key`.
///
/// The caller's credential was checked when the request arrived; a poll
/// may outlive it (a token revoked, an Inbox session logged out while the
/// poll is open). So every round after the first checks it again before
/// `check` runs, and a credential that no longer holds ends the poll with
/// 401: nothing is read for, or marked seen by, a revoked caller. The
/// rounds come at least every [`RECHECK`], so a revocation ends an idle
/// poll within about a second too.
pub(crate) async fn wait_until<T, F, Fut>(
    s: &Shared,
    caller: &Caller,
    key: &str,
    timeout: Duration,
    mut check: F,
) -> ApiResult<(T, bool)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ApiResult<(T, bool)>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut first = true;
    loop {
        let notify = s.waiters.watch(key);
        // Take the notification *before* reading, so an event applied
        // between the read and the await still wakes us.
        let notified = notify.notified();
        if !std::mem::take(&mut first)
            && let Some(why) = caller.revoked(s).await
        {
            return Err(ApiError::unauthorized(why));
        }
        let (v, done) = check().await?;
        let now = tokio::time::Instant::now();
        if done || now >= deadline || s.shutdown.is_cancelled() {
            return Ok((v, done));
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline.min(now + recheck())) => {}
            _ = s.shutdown.cancelled() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_and_timeout_are_read_the_same_for_every_route() {
        let waits = [("reply", 1), ("change", 2)];
        let hint = "wait=reply or wait=change";
        let ask = |w, t| asked(w, t, &waits, hint);
        assert!(matches!(ask(None, None), Ok(None)));
        assert!(matches!(ask(Some("change"), None), Ok(Some((2, _)))));
        let (c, d) = ask(Some("reply"), Some("2s")).ok().flatten().unwrap();
        assert_eq!((c, d), (1, Duration::from_secs(2)));
        for (w, t, says) in [
            (None, Some("2s"), "timeout needs wait=reply or wait=change"),
            (
                Some("soon"),
                None,
                "wait=`soon`: use wait=reply or wait=change",
            ),
        ] {
            let e = ask(w, t).expect_err("refused");
            assert!(format!("{e:?}").contains(says), "{e:?}");
        }
        assert!(ask(Some("reply"), Some("later")).is_err());
    }
}
