//! The daemon's HTTP surface (`fn router(state) -> Router`): `/healthz`,
//! `/metrics` and the authenticated `/v1` API over the store, for agents
//! (flag, pending, answer, resolve, boards, propose, claim, complete,
//! sessions, checkpoint, ledger, resume, wait) and humans (reply, dismiss,
//! snooze, annotate, handled, approve, reject, resolve-unknown, expire),
//! with long polls and an SSE stream of events. The remote CLI
//! ([`crate::ops::Remote`]) speaks exactly these routes.
//!
//! Layout: [`ROUTES`] is the one table of every route (method, path, who may
//! call it, summary, handler); the router and the OpenAPI document are both
//! built from it, so they cannot disagree. `auth` (tokens, roles, project
//! scopes, listen policy), `error` (one `ApiError`), `input` (strict JSON and
//! query extractors), `questions`, `boards`, `actions`, `grants`, `sessions`,
//! `fleet` (every session at a glance), `events` (page, SSE), `long_poll` (`wait`/`timeout` and the wait
//! itself, for every item route), `page` (list pages), `metrics`, `openapi`.
//!
//! No SQL here: handlers call the store, map refusals, and nudge the event
//! followers after every write. The inbound wake route lives in [`wake`],
//! outside the token table: it authenticates per `[[wake.sources]]`. The
//! web Inbox page lives in [`inbox`] (merged into this router).

mod actions;
mod audit;
mod auth;
mod boards;
mod doc;
mod error;
mod events;
mod fleet;
mod grants;
pub mod inbox;
mod input;
pub mod listener;
mod long_poll;
mod metrics;
mod openapi;
mod page;
mod questions;
mod sessions;
pub mod wake;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post, put};

pub use auth::listen_refusal;

use crate::shared::Shared;
use auth::Access;
use error::ApiError;

/// One route: the single source of truth for the router and the OpenAPI document.
pub(crate) struct Route {
    /// HTTP method, upper case.
    pub method: &'static str,
    /// axum path (`{param}` segments).
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
    /// One line for the OpenAPI document.
    pub summary: &'static str,
    make: fn() -> MethodRouter<Shared>,
    /// The handler's request and answers, read from its signature.
    pub describe: fn(&mut doc::Gens) -> doc::Described,
}

macro_rules! routes {
    ($($m:ident $verb:literal $path:literal $access:ident $summary:literal => $h:path;)+) => {
        /// Every route of the API.
        pub(crate) const ROUTES: &[Route] = &[$(Route {
            method: $verb,
            path: $path,
            access: Access::$access,
            summary: $summary,
            make: || $m($h),
            describe: |g| doc::describe(&$h, g),
        }),+];
    };
}

routes! {
    get "GET" "/healthz" Public "Liveness: the store answers, and which daemon this is (an opaque id); with a token (or an Inbox session, the owner-only socket, an open loopback daemon) also the log's last seq, which database file (a fingerprint of its path, for `handoff status`), the daemon's name and the jobs it holds." => healthz;
    get "GET" "/v1/openapi.json" Public "This document." => openapi::serve;
    get "GET" "/metrics" Read "Prometheus metrics." => metrics::metrics;
    post "POST" "/v1/questions" Agent "Flag a question (with `key`: update the open one in place); `wait=reply&timeout=30s&by` also waits for the reply and marks it picked up." => questions::flag;
    get "GET" "/v1/questions" Read "List questions (status, project, session, limit)." => questions::list;
    get "GET" "/v1/questions/{id}" Read "One question; `wait=reply|change&timeout=30s` long-polls." => questions::get;
    get "GET" "/v1/pending" Agent "Pick up replies and row responses (project, session, new, only, peek, by)." => questions::pending;
    post "POST" "/v1/questions/{id}/pickup" Agent "Mark exactly the reply read (by reply_seq) as picked up." => questions::pickup;
    get "GET" "/v1/questions/{id}/replies" Read "A question's append-only reply history." => questions::replies;
    post "POST" "/v1/questions/{id}/answer" Agent "Record an answer given in the agent's terminal (agent channel)." => questions::answer;
    post "POST" "/v1/questions/{id}/resolve" Agent "Close a question with an outcome." => questions::resolve;
    post "POST" "/v1/questions/{id}/reply" Human "Reply as a human (Inbox channel: always wins)." => questions::reply;
    post "POST" "/v1/questions/{id}/dismiss" Human "Close a question without answering." => questions::dismiss;
    post "POST" "/v1/questions/{id}/snooze" Human "Hide a question from the chat list for a while (`for`)." => questions::snooze;
    put "PUT" "/v1/boards" Agent "Create or update a board and rows, all or nothing (CAS)." => boards::upsert;
    get "GET" "/v1/boards" Read "List boards with progress (project, archived)." => boards::list;
    get "GET" "/v1/boards/{board}" Read "One board with its rows." => boards::get;
    post "POST" "/v1/boards/{board}/rows" Agent "Write one row (CAS on its revision)." => boards::row;
    post "POST" "/v1/boards/{board}/advance" Agent "Archive a row's step and install the next, blocked." => boards::advance;
    post "POST" "/v1/boards/{board}/outcome" Agent "Store a step's outcome and leave blocked." => boards::outcome;
    post "POST" "/v1/boards/{board}/archive" Agent "Archive a board (CAS on board_version)." => boards::archive;
    get "GET" "/v1/handoffs" Read "Rows marked handled whose outcome no agent stored yet (project)." => boards::handoffs;
    post "POST" "/v1/boards/{board}/rows/{label}/annotate" Human "Answer on a row (Inbox channel)." => boards::annotate;
    post "POST" "/v1/boards/{board}/rows/{label}/handled" Human "Mark a row handled (or clear the mark)." => boards::handled;
    post "POST" "/v1/actions" Agent "Propose an action (config rules apply)." => actions::propose;
    get "GET" "/v1/actions" Read "List actions (status, project), newest first." => actions::list;
    get "GET" "/v1/actions/{id}" Read "One action; `wait=approved|settled&timeout=30s` long-polls." => actions::get;
    get "GET" "/v1/actions/{id}/audit" Read "An action's append-only audit trail." => actions::audit;
    post "POST" "/v1/actions/expire" Human "Settle every pending action past its expiry (project)." => actions::expire;
    post "POST" "/v1/actions/{id}/claim" Agent "Claim an approved action for execution." => actions::claim;
    post "POST" "/v1/actions/{id}/extend" Agent "Extend the lease of a claim." => actions::extend;
    post "POST" "/v1/actions/{id}/complete" Agent "Record executed or failed." => actions::complete;
    post "POST" "/v1/actions/{id}/approve" Human "Approve, optionally patching the arguments." => actions::approve;
    post "POST" "/v1/actions/{id}/grant" Agent "A Claude Code prompt: decide it by a live grant that covers it (`applied`), and name the grant its approval saved (`given`)." => actions::grant;
    post "POST" "/v1/actions/{id}/reject" Human "Reject with a reason." => actions::reject;
    post "POST" "/v1/actions/{id}/resolve-unknown" Human "Settle an unknown outcome: executed, failed or retry." => actions::resolve_unknown;
    get "GET" "/v1/grants" Read "List permission grants, live ones (with `all`: every one), newest first (project)." => grants::list;
    post "POST" "/v1/grants/{id}/revoke" Human "Revoke a permission grant: the prompts it covered ask again." => grants::revoke;
    post "POST" "/v1/sessions" Agent "Register a session (webhook wake target or none)." => sessions::register;
    get "GET" "/v1/sessions" Read "List sessions (status, project), most recently changed first." => sessions::list;
    get "GET" "/v1/sessions/{id}" Read "One session (secrets hidden)." => sessions::get;
    post "POST" "/v1/sessions/{id}/checkpoint" Agent "Store the session's state (CAS on revision)." => sessions::checkpoint;
    get "GET" "/v1/sessions/{id}/resume" Read "Everything a woken session needs (tail); marks nothing." => sessions::resume;
    post "POST" "/v1/sessions/{id}/end" Agent "Mark a session ended." => sessions::end;
    post "POST" "/v1/sessions/{id}/ledger" Agent "Record that a call is about to run (idempotent by event_id)." => sessions::ledger_begin;
    get "GET" "/v1/sessions/{id}/ledger" Read "A session's execution ledger (last)." => sessions::ledger_list;
    post "POST" "/v1/ledger/{id}/complete" Agent "Record a begun call's outcome (ok, result)." => sessions::ledger_complete;
    get "GET" "/v1/fleet" Read "Every session by project: what it is doing now (waiting on a question or an approval, working, idle, ended) and since when, its host, wake target, last delivery and waiting items (project)." => fleet::fleet;
    get "GET" "/v1/sessions/{id}/wait" Agent "Long poll: claim what arrives for the session (timeout, by)." => sessions::wait;
    get "GET" "/v1/audit/export" Audit "The actions' audit log as a SHA-256 hash chain (JSON Lines in `lines`, the head line last; since, project); its head is recorded in the event log." => audit::export;
    get "GET" "/v1/events" Read "A page of the event log after a seq, or the newest `tail`." => events::page;
    get "GET" "/v1/events/stream" Read "Server-sent events from Last-Event-ID (or after, or now)." => events::stream;
}

/// The daemon's routes.
pub fn router(shared: Shared) -> Router {
    let mut r: Router<Shared> = Router::new();
    for route in ROUTES {
        let access = route.access;
        let layer = axum::middleware::from_fn_with_state(
            shared.clone(),
            move |State(s): State<Shared>, req: Request, next: Next| {
                auth::authorize(s, access, req, next)
            },
        );
        // The text rule runs inside the token check: a caller without a
        // token learns nothing from the path it sent.
        let text = axum::middleware::from_fn(input::text::check_request);
        let proven = axum::middleware::from_fn(mark_authenticated);
        r = r.route(
            route.path,
            (route.make)()
                .route_layer(text)
                .route_layer(proven)
                .route_layer(layer),
        );
    }
    // Inbound wakes carry their own authentication (source secrets and
    // signatures), so they are merged outside the token-checked table.
    // The web Inbox (`/`, `/inbox/…`) is not part of the /v1 API either.
    let text = || axum::middleware::from_fn(input::text::check_request);
    r.merge(wake::routes().route_layer(text()))
        .merge(inbox::routes().route_layer(text()))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(input::BODY_LIMIT))
        .layer(axum::middleware::map_response(nosniff))
        .layer(axum::middleware::from_fn(request_id))
        .layer(axum::middleware::from_fn(metrics::count))
        .with_state(shared)
}

/// Marks a request that came through the daemon's owner-only Unix socket:
/// its caller is this host's owner (as on an open loopback daemon).
#[derive(Debug, Clone, Copy)]
pub struct OwnerSocket;

/// A request carrying `Handoff-Request-Id` runs under that request id (see
/// [`crate::store::request`]): a repeat of the call replays its writes.
async fn request_id(req: Request, next: Next) -> Response {
    use crate::store::request;
    let key = match req.headers().get(request::HEADER) {
        None => return next.run(req).await,
        Some(v) => v
            .to_str()
            .ok()
            .filter(|k| request::valid(k))
            .map(str::to_string),
    };
    match key {
        Some(key) => {
            request::scope(key, async move {
                let resp = next.run(req).await;
                // FAULT(die-after-write): the daemon dies after committing
                // a call's write and before answering it.
                if crate::fault::on("die-after-write")
                    && request::current().is_some_and(|s| s.next() > 0)
                {
                    std::process::abort();
                }
                resp
            })
            .await
        }
        None => ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request_id",
            "Handoff-Request-Id must be 1-128 characters of letters, digits, `.`, `_`, `-` or `:`; send a fresh id or none",
        )
        .into_response(),
    }
}

/// A request that presented a valid credential (a token, an Inbox session)
/// marks its connection authenticated: the listener then never closes it
/// to make room, nor counts it against its client's unauthenticated limit.
async fn mark_authenticated(req: Request, next: Next) -> Response {
    if let (Some(c), Some(conn)) = (
        req.extensions().get::<auth::Caller>(),
        req.extensions().get::<listener::ConnHandle>(),
    ) && c.token
    {
        conn.authenticated();
    }
    next.run(req).await
}

/// Every route as `(method, path, access)`, for tests and tooling.
pub fn routes() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut all: Vec<_> = ROUTES
        .iter()
        .map(|r| (r.method, r.path, r.access.as_str()))
        .collect();
    all.push(("POST", wake::PATH, "wake-source"));
    all
}

/// The OpenAPI 3 document served at `/v1/openapi.json`.
pub fn openapi_document() -> serde_json::Value {
    openapi::document()
}

/// Every response says `X-Content-Type-Options: nosniff`: a browser must
/// never read a JSON body (which may echo user text) as HTML or script.
async fn nosniff(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn no_route() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_route",
        "no such route: see /v1/openapi.json",
    )
}

async fn wrong_method() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method: see /v1/openapi.json",
    )
}

/// `GET /healthz`'s answer. Without a valid credential it says only that
/// the daemon is up and which daemon it is (an opaque id): where it runs,
/// its database and its jobs are for callers with a token, an Inbox
/// session, the owner-only socket or an open loopback daemon.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Health {
    /// Always true in a 200: the store answered.
    ok: bool,
    /// An opaque id of this daemon process (a hash of `instance`): tells
    /// two answers from one daemon apart from answers of two.
    daemon: String,
    /// The newest event's sequence number (with a credential).
    #[serde(skip_serializing_if = "Option::is_none")]
    last_seq: Option<i64>,
    /// A fingerprint of the database file's path (`handoff status` tells
    /// whether this daemon serves the file it names; the path is not
    /// shown) (with a credential).
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<String>,
    /// This daemon's name among several on one database (host/pid/random)
    /// (with a credential).
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<String>,
    /// The jobs only one daemon on the database does that this one holds
    /// now (`telegram.poll`: it is the one polling Telegram) (with a
    /// credential).
    #[serde(skip_serializing_if = "Option::is_none")]
    roles: Option<Vec<String>>,
}

/// Whether a `/healthz` caller may see the details: the owner-only
/// socket, an open loopback daemon asked without credentials, a valid
/// bearer token or a live Inbox session. A credential that does not verify
/// gets the short answer, not a refusal: health checks stay simple.
async fn health_details(
    s: &Shared,
    socket: bool,
    headers: &axum::http::HeaderMap,
) -> Result<bool, crate::ops::Error> {
    if socket {
        return Ok(true);
    }
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_string());
    let cookie = auth::cookie_secret(headers);
    match (bearer, cookie) {
        (Some(t), _) => Ok(s.ops.token_verify(&t).await?.is_some()),
        (None, Some(c)) => Ok(s.ops.inbox_session_verify(&c).await?.is_some()),
        (None, None) => Ok(s.config.http.open),
    }
}

async fn healthz(
    State(s): State<Shared>,
    socket: Option<axum::Extension<OwnerSocket>>,
    headers: axum::http::HeaderMap,
) -> Result<axum::Json<Health>, ApiError> {
    let unavailable = |e: crate::ops::Error| {
        tracing::error!(error = %e, "health check cannot read the store");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "the daemon cannot read its database; its log says why",
        )
    };
    let seq = s.ops.last_event_seq().await.map_err(unavailable)?;
    let instance = s.roles.me().to_string();
    let daemon = crate::store::fingerprint(std::path::Path::new(&instance));
    let full = health_details(&s, socket.is_some(), &headers)
        .await
        .map_err(unavailable)?;
    Ok(axum::Json(match full {
        true => Health {
            ok: true,
            daemon,
            last_seq: Some(seq),
            database: Some(crate::store::fingerprint(s.ops.database_path())),
            instance: Some(instance),
            roles: Some(s.roles.held()),
        },
        false => Health {
            ok: true,
            daemon,
            last_seq: None,
            database: None,
            instance: None,
            roles: None,
        },
    }))
}
