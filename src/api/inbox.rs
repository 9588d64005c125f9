//! The web Inbox: a page served by the daemon at `/` where a person answers
//! questions, responds on blocked rows and decides actions, from a laptop
//! or a phone.
//!
//! Login: `handoff inbox-link` prints a one-time link to `/inbox/login?code=…`.
//! Opening it shows a "Open the Inbox" button; pressing it (a `POST`) spends
//! the code, opens a browser session (an `HttpOnly`, `SameSite=Strict`
//! cookie) and redirects to `/`. The `GET` changes nothing, so a chat app or
//! mail client that fetches the link for a preview cannot use it up. The page is static HTML, CSS and vanilla JS
//! embedded in the binary (`inbox/assets/`, nothing fetched from the
//! internet); it reads and writes through the `/v1` API with the cookie,
//! which the API accepts as a human-role credential (see `api::auth`), and
//! re-reads its lists on every event of `/v1/events/stream`.
//!
//! The cookie itself and the same-origin rule that every cookie-authenticated
//! state change must pass live with the other credentials in [`super::auth`].
//! This module has no SQL (sessions are in `store::inbox_sessions`) and no
//! API handlers of its own beyond login, logout and "who am I".

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::auth::{self, cookie_secret, same_origin};
use crate::shared::Shared;
use crate::store::inbox_sessions::{InboxSession, Login, SESSION_TTL_MS};

// Each page is joined at build time from the head every page shares
// (`head.html`), the top both login pages share (`login_top.html`) and its
// own part, so the browser gets one whole document as before.
const INDEX_HTML: &str = concat!(
    include_str!("inbox/assets/head.html"),
    include_str!("inbox/assets/index.html"),
);
const LOGIN_HTML: &str = concat!(
    include_str!("inbox/assets/head.html"),
    include_str!("inbox/assets/login_top.html"),
    include_str!("inbox/assets/login.html"),
);
/// The confirm page alone asks not to be indexed: its URL carries a code.
const CONFIRM_HTML: &str = concat!(
    include_str!("inbox/assets/head.html"),
    "<meta name=\"robots\" content=\"noindex\">\n",
    include_str!("inbox/assets/login_top.html"),
    include_str!("inbox/assets/confirm.html"),
);
const APP_JS: &str = include_str!("inbox/assets/app.js");
const APP_CSS: &str = include_str!("inbox/assets/app.css");

/// Scripts, styles and connections from this origin only; no frames, no
/// inline script. The page builds its DOM with `textContent`, never HTML.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The Inbox's routes (merged into the API router before its fallback).
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(index))
        .route("/inbox/login", get(login_page_for_link).post(login))
        .route("/inbox/logout", post(logout))
        .route("/inbox/me", get(me))
        .route("/inbox/app.js", get(app_js))
        .route("/inbox/app.css", get(app_css))
}

/// The live session of this request's cookie, if any.
async fn session_of(s: &Shared, headers: &HeaderMap) -> Option<InboxSession> {
    let secret = cookie_secret(headers)?;
    match s.ops.inbox_session_verify(&secret).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "cannot check an Inbox session");
            None
        }
    }
}

/// A response carrying the page headers every Inbox document gets.
fn document(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The login URL carries the code: never leak it in a Referer.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// The "how to log in" page with `message` (static text, never user input).
fn login_page(status: StatusCode, message: &'static str) -> Response {
    document(
        status,
        "text/html; charset=utf-8",
        LOGIN_HTML.replace("{{message}}", message),
    )
}

/// Set (or, with an empty value and age 0, clear) the session cookie;
/// `Secure` when the daemon is reached over HTTPS (`[http] public_url`).
fn set_cookie(s: &Shared, resp: &mut Response, value: &str, max_age_secs: i64) {
    match auth::session_cookie(value, max_age_secs, s.config.http.is_https()) {
        Ok(v) => {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
        // The value is hex we generated; a failure here is a bug, logged.
        Err(e) => tracing::error!(error = %e, "cannot build the Inbox cookie"),
    }
}

/// `GET /`: the Inbox with a live session, else how to get one.
async fn index(State(s): State<Shared>, headers: HeaderMap) -> Response {
    if session_of(&s, &headers).await.is_some() {
        return document(
            StatusCode::OK,
            "text/html; charset=utf-8",
            INDEX_HTML.to_string(),
        );
    }
    let mut resp = login_page(
        StatusCode::OK,
        "You are not logged in to this Inbox (or your session ended).",
    );
    if cookie_secret(&headers).is_some() {
        set_cookie(&s, &mut resp, "", 0);
    }
    resp
}

#[derive(Debug, Deserialize)]
struct LoginQuery {
    code: Option<String>,
}

/// The code of a login request, if it has one.
fn code_of(q: LoginQuery) -> Option<String> {
    q.code.filter(|c| !c.trim().is_empty())
}

/// The page for a login request without a code.
fn no_code() -> Response {
    login_page(
        StatusCode::BAD_REQUEST,
        "This login link has no code in it.",
    )
}

/// `GET /inbox/login?code=…`: a page with one button that spends the code.
/// Nothing is written: link previews fetch with `GET` and must not log in.
async fn login_page_for_link(Query(q): Query<LoginQuery>) -> Response {
    let Some(code) = code_of(q) else {
        return no_code();
    };
    // Codes are hex; anything else is no code of ours (and this check keeps
    // the value safe to put into the page's HTML as it is).
    if !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return login_page(
            StatusCode::NOT_FOUND,
            "This login link is not one this Inbox issued.",
        );
    }
    document(
        StatusCode::OK,
        "text/html; charset=utf-8",
        CONFIRM_HTML.replace("{{code}}", &code),
    )
}

/// `POST /inbox/login` (form field `code`): trade a one-time code for a
/// session cookie. A form posted from another site is refused; the login
/// page's own form may arrive with `Origin: null` (it is served with
/// `Referrer-Policy: no-referrer`) or none at all.
async fn login(State(s): State<Shared>, headers: HeaderMap, Form(q): Form<LoginQuery>) -> Response {
    let foreign = headers
        .get(header::ORIGIN)
        .is_some_and(|o| o.as_bytes() != b"null" && !same_origin(&headers));
    if foreign {
        return login_page(
            StatusCode::FORBIDDEN,
            "This login came from another site and was refused: open the link yourself.",
        );
    }
    let Some(code) = code_of(q) else {
        return no_code();
    };
    match s.ops.inbox_login(&code, SESSION_TTL_MS).await {
        Ok(Login::Opened { session, secret }) => {
            s.wrote();
            tracing::info!(session = %session.id, name = %session.name, "Inbox login");
            to_inbox(&s, &secret, SESSION_TTL_MS / 1000)
        }
        Ok(Login::Used) => login_page(
            StatusCode::GONE,
            "This login link was used already: each link works once.",
        ),
        Ok(Login::Expired) => login_page(StatusCode::GONE, "This login link has expired."),
        Ok(Login::Unknown) => login_page(
            StatusCode::NOT_FOUND,
            "This login link is not one this Inbox issued.",
        ),
        Err(e) => {
            tracing::error!(error = %e, "Inbox login failed");
            login_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The Inbox could not check this link (the database failed); try again.",
            )
        }
    }
}

/// `POST /inbox/logout`: end this browser's session (same-origin only).
async fn logout(State(s): State<Shared>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"reason": "cross_site", "message": "cross-site request refused"})),
        )
            .into_response();
    }
    if let Some(secret) = cookie_secret(&headers) {
        match s.ops.inbox_logout(&secret).await {
            Ok(_) => s.wrote(),
            Err(e) => tracing::warn!(error = %e, "Inbox logout failed"),
        }
    }
    to_inbox(&s, "", 0)
}

/// A redirect to the Inbox (`/`) that sets the session cookie to `value`
/// for `max_age_secs` (an empty value and 0 clear it).
fn to_inbox(s: &Shared, value: &str, max_age_secs: i64) -> Response {
    let mut resp = document(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        String::new(),
    );
    resp.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/"));
    set_cookie(s, &mut resp, value, max_age_secs);
    resp
}

/// `GET /inbox/me`: who this browser's session acts as.
async fn me(State(s): State<Shared>, headers: HeaderMap) -> Response {
    match session_of(&s, &headers).await {
        Some(session) => {
            axum::Json(json!({"name": session.name, "session": session})).into_response()
        }
        None => (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({
                "reason": "unauthorized",
                "message": "no Inbox session: run `handoff inbox-link` and open the link it prints"
            })),
        )
            .into_response(),
    }
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn app_css() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// A script or style sheet: a document the browser may keep but must
/// check again (`no-cache`) before it uses it.
fn asset(content_type: &'static str, body: &str) -> Response {
    let mut r = document(StatusCode::OK, content_type, body.to_string());
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
