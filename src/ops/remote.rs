//! The remote implementation of [`super::Ops`]: an HTTP client (reqwest
//! with rustls) for a daemon's `/v1` API, selected by `HANDOFF_URL` (and
//! `HANDOFF_TOKEN`, sent as `Authorization: Bearer`).
//!
//! Every primitive maps to one route (waits loop over bounded long polls).
//! The API's error body `{reason, message, detail}` comes back here as a
//! [`Failure`]; a `detail` that is the store's own refusal is turned back
//! into the typed refusal the local backend would return, everything else
//! into the same [`Error`] variants (404 → `NotFound`, 409 → `Refused`,
//! 401/403 → `Denied`, 422 → `Invalid`, 503 → `Busy`). The primitives
//! themselves are in `questions`, `boards`, `actions` and `sessions`: one
//! `Run` impl each, by area, as in `super::backend`.
//!
//! What a remote caller cannot do (the daemon would run it or it touches
//! the host's files) is refused with an `Invalid` that says so: exec and
//! tmux wake targets, verifier commands, chat-door writes.

mod actions;
mod boards;
mod questions;
mod sessions;

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::Error;

/// Time allowed for an ordinary request when `HANDOFF_TIMEOUT` is not set
/// (long polls get their wait on top).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read (and every long poll of a wait) keeps retrying a daemon
/// that cannot be reached or answers 503, e.g. while it restarts.
const RETRY_WINDOW: Duration = Duration::from_secs(30);

/// Longest single long poll the API accepts; longer waits loop.
pub(super) const MAX_POLL: Duration = Duration::from_secs(300);

/// Operations against a daemon's HTTP API.
#[derive(Clone)]
pub struct Remote {
    base: Url,
    token: Option<String>,
    http: reqwest::Client,
    /// Time allowed for one request (`HANDOFF_TIMEOUT`).
    timeout: Duration,
    /// The daemon has answered this client before: a later failure to
    /// reach it is a restart worth waiting out, not a wrong address.
    reached: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Over the local daemon's socket: no retries (the caller falls back
    /// to the file), and `true` once a call got no answer.
    socket: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("Remote")
            .field("base", &self.base.as_str())
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

/// A refused or failed request: the API's error body (or a transport failure).
#[derive(Debug)]
pub(super) struct Failure {
    /// HTTP status; 0 when no answer came.
    pub status: u16,
    /// `reason` from the error body (`stale`, `not_found`, …), or ours when
    /// no answer came (`unreachable`, `timeout`, `internal`).
    pub reason: String,
    /// What went wrong and what to do, for people.
    pub message: String,
    /// The refusal's data, if any.
    pub detail: Option<Value>,
}

impl Failure {
    /// The `detail` as the typed refusal `T`, if it is one.
    pub fn detail_as<T: DeserializeOwned>(&self) -> Option<T> {
        self.detail
            .as_ref()
            .and_then(|d| serde_json::from_value(d.clone()).ok())
    }

    fn local(reason: &str, message: String) -> Failure {
        Failure {
            status: 0,
            reason: reason.into(),
            message,
            detail: None,
        }
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Self {
        let Failure {
            status,
            reason,
            message,
            detail,
        } = f;
        match status {
            401 | 403 => Error::Denied { reason, message },
            404 => Error::NotFound { message },
            409 if reason == "ambiguous" => Error::Ambiguous { message },
            409 => Error::Refused {
                reason,
                message,
                detail: detail.unwrap_or(Value::Null),
            },
            400 | 413 | 415 | 422 => Error::Invalid { message },
            503 => Error::Busy { message },
            _ => Error::Internal { message },
        }
    }
}

/// One request to the API, as [`Remote::call`] takes it.
pub(super) struct Request<'a> {
    pub method: Method,
    /// The route below `/v1`, one segment each (encoded when sent).
    pub segments: &'a [&'a str],
    pub query: &'a [(&'a str, String)],
    pub body: Option<Value>,
    /// How long the server may hold it (a long poll).
    pub wait: Option<Duration>,
}

/// A request result: the decoded body, or the failure.
pub(super) type Answer<T> = std::result::Result<T, Failure>;

impl Remote {
    /// A client for the daemon at `url` (`http://host:port`), sending
    /// `token` as a bearer token when given (an `[http] open = true`
    /// loopback daemon needs none).
    pub fn new(url: &str, token: Option<String>) -> Result<Remote, Error> {
        let bad = |why: String| {
            Error::invalid(format!(
                "HANDOFF_URL `{url}` {why}: set it to the daemon's address, e.g. http://127.0.0.1:8642"
            ))
        };
        let mut base = Url::parse(url.trim()).map_err(|e| bad(format!("is not a URL ({e})")))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(bad("is not an http(s) URL".into()));
        }
        if !base.path().ends_with('/') {
            let p = format!("{}/", base.path());
            base.set_path(&p);
        }
        let token = token
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let timeout = match std::env::var("HANDOFF_TIMEOUT") {
            Ok(t) if !t.trim().is_empty() => {
                let ms = crate::clock::parse_duration_ms(t.trim())
                    .ok()
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "HANDOFF_TIMEOUT `{t}` is not a duration: set it to e.g. 10s or 2m"
                        ))
                    })?;
                Duration::from_millis(ms as u64)
            }
            _ => DEFAULT_TIMEOUT,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| Error::Internal {
                message: format!("cannot set up the HTTP client: {e}"),
            })?;
        Ok(Remote {
            base,
            token,
            http,
            timeout,
            reached: Default::default(),
            socket: None,
        })
    }

    /// A client for the local daemon's owner-only socket at `path` (no
    /// token: the socket admits only this user).
    pub(super) fn over_socket(path: &std::path::Path) -> Result<Remote, Error> {
        let mut r = Remote::new("http://localhost", None)?;
        r.http = reqwest::Client::builder()
            .unix_socket(path)
            .build()
            .map_err(|e| Error::Internal {
                message: format!("cannot set up the socket client: {e}"),
            })?;
        r.socket = Some(Default::default());
        Ok(r)
    }

    /// The database fingerprint `/healthz` reports, or `None` without a
    /// healthy answer.
    pub(super) async fn health(&self) -> Option<String> {
        let mut u = self.base.clone();
        u.set_path("/healthz");
        let resp = self.http.get(u).send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let v: Value = resp.json().await.ok()?;
        v.get("database")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// Whether this client talks to the local daemon's socket.
    pub(super) fn is_socket(&self) -> bool {
        self.socket.is_some()
    }

    /// Over the socket: the daemon answers again (after [`Remote::lost`]).
    pub(super) fn answered_again(&self) {
        if let Some(lost) = &self.socket {
            lost.store(false, Ordering::Relaxed);
        }
    }

    /// Over the socket, whether a call got no answer from the daemon.
    pub(super) fn lost(&self) -> bool {
        self.socket
            .as_ref()
            .is_some_and(|l| l.load(Ordering::Relaxed))
    }

    /// The daemon's base URL.
    pub fn url(&self) -> &Url {
        &self.base
    }

    /// `base/v1/<segments…>`, each segment percent-encoded.
    fn route(&self, segments: &[&str]) -> Url {
        let mut u = self.base.clone();
        if let Ok(mut p) = u.path_segments_mut() {
            p.pop_if_empty().push("v1").extend(segments);
        }
        u
    }

    /// One request; `wait` is how long the server may hold it (long polls).
    pub(super) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<Value>,
        wait: Option<Duration>,
    ) -> Answer<T> {
        let r = Request {
            method,
            segments,
            query,
            body,
            wait,
        };
        Ok(self.call_paged(&r).await?.0)
    }

    /// Every item of a paged list route, following `X-Next-Cursor` from
    /// page to page.
    pub(super) async fn get_all<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Answer<Vec<T>> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut q = query.to_vec();
            q.push(("limit", "500".to_string()));
            if let Some(a) = after.take() {
                q.push(("after", a));
            }
            let page = Request {
                method: Method::GET,
                segments,
                query: &q,
                body: None,
                wait: None,
            };
            let (items, next): (Vec<T>, _) = self.call_paged(&page).await?;
            all.extend(items);
            match next {
                Some(n) => after = Some(n),
                None => return Ok(all),
            }
        }
    }

    /// [`Remote::call`], also returning the next page's cursor, if any.
    /// A long poll (each round of a wait), or a read (`GET`) to a daemon
    /// that answered this client before, is retried ([`Remote::retrying`]),
    /// so a restart of the daemon does not end a wait; a first call to a
    /// daemon that is not there fails at once (a wrong address), and a
    /// write is sent once (a retry could apply it twice).
    async fn call_paged<T: DeserializeOwned>(
        &self,
        r: &Request<'_>,
    ) -> Answer<(T, Option<String>)> {
        let may = || {
            r.method == Method::GET && (r.wait.is_some() || self.reached.load(Ordering::Relaxed))
        };
        self.retrying(may, || self.call_once(r)).await
    }

    /// `attempt` until it does not find the daemon unreachable or busy
    /// (503), with growing pauses for up to [`RETRY_WINDOW`], while `may`
    /// says a retry is safe (asked after each failure). Never over the
    /// local daemon's socket: its caller falls back to the file instead.
    pub(super) async fn retrying<T, F>(
        &self,
        may: impl Fn() -> bool,
        attempt: impl Fn() -> F,
    ) -> Answer<T>
    where
        F: Future<Output = Answer<T>>,
    {
        let give_up = tokio::time::Instant::now() + RETRY_WINDOW;
        let mut pause = Duration::from_millis(100);
        loop {
            match attempt().await {
                Err(f)
                    if self.socket.is_none()
                        && (f.reason == "unreachable" || f.status == 503)
                        && may()
                        && tokio::time::Instant::now() + pause < give_up =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }

    /// One request, no retry.
    pub(super) async fn call_once<T: DeserializeOwned>(
        &self,
        r: &Request<'_>,
    ) -> Answer<(T, Option<String>)> {
        let url = self.route(r.segments);
        let write = r.method != Method::GET;
        let mut req = self
            .http
            .request(r.method.clone(), url.clone())
            .timeout(self.timeout + r.wait.unwrap_or_default());
        if !r.query.is_empty() {
            req = req.query(r.query);
        }
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = &r.body {
            req = req.json(b);
        }
        if write && let Some(scope) = crate::store::request::current() {
            req = req.header(crate::store::request::HEADER, scope.key());
        }
        let resp = req.send().await.map_err(|e| self.transport(&e, write))?;
        self.reached.store(true, Ordering::Relaxed);
        let status = resp.status();
        let next = resp
            .headers()
            .get("x-next-cursor")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await.map_err(|e| self.transport(&e, write))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map(|v| (v, next)).map_err(|e| {
                Failure::local(
                    "internal",
                    format!(
                        "the daemon at {} gave an answer this handoff does not understand ({e}); are both the same version?",
                        self.base
                    ),
                )
            });
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
        Err(Failure {
            status: status.as_u16(),
            reason: text("reason").unwrap_or_else(|| "http_error".into()),
            message: text("message")
                .unwrap_or_else(|| format!("the daemon answered {status} for {}", url.path())),
            detail: body.get("detail").cloned(),
        })
    }

    /// A request that got no (whole) answer, in words: a timeout says how
    /// to wait longer, and a write says it may have been applied.
    fn transport(&self, e: &reqwest::Error, write: bool) -> Failure {
        if let Some(lost) = &self.socket {
            lost.store(true, Ordering::Relaxed);
        }
        let maybe = if write {
            "; the change may or may not have been made: look before repeating it \
             (e.g. `handoff questions`, `handoff actions`)"
        } else {
            ""
        };
        if e.is_timeout() {
            return Failure::local(
                "timeout",
                format!(
                    "no answer from the daemon at {} within {}s (set HANDOFF_TIMEOUT, e.g. 30s, to wait longer){maybe}",
                    self.base,
                    self.timeout.as_secs_f64()
                ),
            );
        }
        let what = if e.is_connect() {
            "cannot reach the daemon at"
        } else {
            "the answer broke off from the daemon at"
        };
        Failure::local(
            "unreachable",
            format!("{what} {}: {}{maybe}", self.base, crate::one_line(e)),
        )
    }

    /// `GET` with a query.
    pub(super) async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Answer<T> {
        self.call(Method::GET, segments, query, None, None).await
    }

    /// `POST` a JSON body.
    pub(super) async fn post<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: Value,
    ) -> Answer<T> {
        self.call(Method::POST, segments, &[], Some(body), None)
            .await
    }
}

/// A query list from optional pairs (absent values are left out).
pub(super) fn query(pairs: &[(&'static str, Option<String>)]) -> Vec<(&'static str, String)> {
    pairs
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (*k, v)))
        .collect()
}

/// `Some(s)` unless blank: an empty actor name means "the token's own".
pub(super) fn named(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The refusal a remote caller gets for something only the host can do.
pub(super) fn host_only(what: &str) -> Error {
    Error::HostOnly {
        message: format!("{what} must run on the daemon's host (unset HANDOFF_URL there)"),
    }
}

/// Whether `e` is a [`host_only`] refusal.
pub(super) fn is_host_only(e: &Error) -> bool {
    matches!(e, Error::HostOnly { .. })
}

#[cfg(test)]
mod tests;
