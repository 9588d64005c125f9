//! Who is calling: bearer tokens, roles, project scopes, and the listen
//! policy of the daemon.
//!
//! Every `/v1` route declares an [`Access`]; a per-route middleware checks
//! the `Authorization: Bearer hnd_…` header against the store (hash lookup,
//! constant-time compare), refuses a missing, unknown or revoked token with
//! 401 and a role that may not use the route with 403, and hands the handler
//! a [`Caller`]. Handlers apply the project scope: a project-scoped token
//! sees only its project (lists are filtered, a foreign item is 404 as if it
//! did not exist) and naming another project in a request is 403.
//!
//! With `[http] open = true` (loopback only) a request without a token acts
//! as a local admin, as does one through the daemon's owner-only Unix
//! socket; a request that does present a token is still checked.
//!
//! Without a bearer token, the web Inbox's session cookie is accepted as a
//! human-role credential acting as the session's name (so agent routes are
//! 403 for it); a cookie-authenticated write (any method but GET/HEAD/OPTIONS)
//! must carry an `Origin` equal to the daemon's own, else 403 `cross_site`.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ApiResult};
use crate::shared::Shared;
use crate::store::tokens::Role;

/// Who may use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Anyone, no token (health, the OpenAPI document).
    Public,
    /// Any valid token (reads).
    Read,
    /// Agent or admin tokens (the agent side).
    Agent,
    /// Human or admin tokens (the human side: the Inbox door).
    Human,
    /// Admin or auditor tokens (the audit export).
    Audit,
}

impl Access {
    /// The name used in the OpenAPI document and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Public => "public",
            Access::Read => "read",
            Access::Agent => "agent",
            Access::Human => "human",
            Access::Audit => "audit",
        }
    }
}

/// The authenticated caller, put in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The token's name (the actor of its writes); `local` when open.
    pub name: String,
    /// Which routes it may call (admin, agent, human or read-only).
    pub role: Role,
    /// The one project it may touch; `None` = all.
    pub project: Option<String>,
    /// False for an unauthenticated request on an open loopback daemon.
    pub token: bool,
    /// What authenticated it, kept so a long-lived response (an event
    /// stream) can check it is still valid.
    pub credential: Credential,
}

/// The credential a request presented.
#[derive(Clone)]
pub(crate) enum Credential {
    /// None: an open loopback daemon.
    Open,
    /// A bearer token, as presented.
    Token(String),
    /// A web Inbox session cookie's secret.
    Cookie(String),
    /// None: the daemon's owner-only socket (this host's owner).
    Socket,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::Open => "Open",
            Credential::Socket => "Socket",
            Credential::Token(_) => "Token(***)",
            Credential::Cookie(_) => "Cookie(***)",
        })
    }
}

impl Caller {
    fn may(&self, access: Access) -> bool {
        matches!(
            (access, self.role),
            (Access::Public | Access::Read, _)
                | (_, Role::Admin)
                | (Access::Agent, Role::Agent)
                | (Access::Human, Role::Human)
                | (Access::Audit, Role::Auditor)
        )
    }

    /// The operations as this caller may run them: ids resolve, and lists
    /// and sweeps run, within its project (every project for an admin).
    pub fn local(&self, s: &Shared) -> crate::ops::Local {
        s.ops.within(self.project.as_deref())
    }

    /// [`Caller::local`] as the one operations interface every door calls.
    pub fn ops(&self, s: &Shared) -> crate::ops::Ops {
        crate::ops::Ops::Local(self.local(s))
    }

    /// Whether an item of `project` is visible to this caller.
    pub fn sees(&self, project: &str) -> bool {
        self.project.as_deref().is_none_or(|p| p == project)
    }

    /// The project filter for a list or pickup: a scoped token always gets
    /// its own project; asking for another is 403.
    pub fn filter(&self, requested: Option<String>) -> ApiResult<Option<String>> {
        match (&self.project, requested) {
            (None, r) => Ok(r),
            (Some(mine), None) => Ok(Some(mine.clone())),
            (Some(mine), Some(r)) if &r == mine => Ok(Some(r)),
            (Some(mine), Some(r)) => Err(wrong_project(mine, &r)),
        }
    }

    /// The project a write lands in: `given` (empty = the token's own), which
    /// a scoped token may only set to its own project.
    pub fn write_project(&self, given: &str) -> ApiResult<String> {
        match &self.project {
            None => Ok(given.to_string()),
            Some(mine) if given.is_empty() || given == mine => Ok(mine.clone()),
            Some(mine) => Err(wrong_project(mine, given)),
        }
    }

    /// The actor name of a write. With a token it is the token's name (a
    /// `by` naming someone else is refused: one token cannot count as two
    /// approvers); on an open daemon the request may name itself.
    pub fn actor(&self, by: Option<&str>) -> ApiResult<String> {
        let by = by.map(str::trim).filter(|b| !b.is_empty());
        match by {
            None => Ok(self.name.clone()),
            Some(b) if !self.token || b == self.name => Ok(b.to_string()),
            Some(b) => Err(ApiError::forbidden(
                "wrong_actor",
                format!(
                    "this token acts as `{}`, not `{b}`: leave `by` out",
                    self.name
                ),
            )),
        }
    }

    /// The agent a new item names: `given`, or the token's name when left
    /// empty (through the owner's socket it stays as given, as on the file).
    /// With a token, `given` may not be another token's name (as `by` may
    /// not): one token must not file items as another's agent. A name no
    /// token acts as (`claude`, `codex`) is the caller's to choose.
    pub async fn agent_or(&self, s: &Shared, given: String) -> ApiResult<String> {
        let named = given.trim();
        if named.is_empty() {
            return Ok(if matches!(self.credential, Credential::Socket) {
                given
            } else {
                self.name.clone()
            });
        }
        if !self.token || named == self.name || !s.ops.token_name_exists(named).await? {
            return Ok(given);
        }
        Err(ApiError::forbidden(
            "wrong_actor",
            format!(
                "this token acts as `{}`, not `{named}`: leave `agent` out",
                self.name
            ),
        ))
    }

    /// Why this caller's credential no longer holds (a revoked token, an
    /// Inbox session logged out or expired), or `None` while it does. A
    /// store failure counts as still valid: it is retried at the next check.
    pub async fn revoked(&self, s: &Shared) -> Option<&'static str> {
        let still = match &self.credential {
            Credential::Open | Credential::Socket => return None,
            Credential::Token(t) => s.ops.token_verify(t).await.map(|t| t.is_some()),
            Credential::Cookie(c) => s.ops.inbox_session_verify(c).await.map(|c| c.is_some()),
        };
        match (still, &self.credential) {
            (Ok(true), _) => None,
            (Err(e), _) => {
                tracing::warn!(error = %e, "cannot re-check a stream's credential");
                None
            }
            (Ok(false), Credential::Cookie(_)) => Some(
                "the Inbox session ended (logged out or expired): run `handoff inbox-link` and open the link it prints",
            ),
            (Ok(false), _) => {
                Some("the token was revoked: create a new one with `handoff token create`")
            }
        }
    }

    /// Whether the request came through the daemon's owner-only socket.
    pub fn is_socket(&self) -> bool {
        matches!(self.credential, Credential::Socket)
    }

    /// Whether real action arguments may be shown (agents execute them;
    /// humans see them redacted).
    pub fn sees_secrets(&self) -> bool {
        matches!(self.role, Role::Agent | Role::Admin)
    }
}

fn wrong_project(mine: &str, other: &str) -> ApiError {
    ApiError::forbidden(
        "wrong_project",
        format!("this token is limited to project `{mine}`, not `{other}`"),
    )
}

/// The bearer token of a request: `Ok(None)` without an Authorization
/// header, `Err` for one that is not `Bearer <token>`.
fn bearer(req: &Request) -> ApiResult<Option<String>> {
    let Some(v) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let v = v
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not readable text"))?;
    match v.split_once(' ') {
        Some((scheme, tok)) if scheme.eq_ignore_ascii_case("bearer") && !tok.trim().is_empty() => {
            Ok(Some(tok.trim().to_string()))
        }
        _ => Err(ApiError::unauthorized(
            "use `Authorization: Bearer hnd_…` (create a token with `handoff token create`)",
        )),
    }
}

/// Resolve the caller of `req`, or the refusal.
async fn caller(s: &Shared, presented: Option<String>) -> ApiResult<Caller> {
    match presented {
        Some(tok) => match s.ops.token_verify(&tok).await? {
            Some(t) => Ok(Caller {
                name: t.name,
                role: t.role,
                project: t.project,
                token: true,
                credential: Credential::Token(tok),
            }),
            None => Err(ApiError::unauthorized(
                "the token is unknown or revoked: create one with `handoff token create`",
            )),
        },
        None if s.config.http.open => Ok(owner_caller()),
        None => Err(ApiError::unauthorized(
            "this route needs `Authorization: Bearer hnd_…`: create a token with `handoff token create` \
             (or set [http] open = true on a loopback-only daemon)",
        )),
    }
}

/// A caller without credentials the daemon trusts: a request on an open
/// loopback daemon, or one through the owner-only socket.
fn owner_caller() -> Caller {
    Caller {
        name: "local".into(),
        role: Role::Admin,
        project: None,
        token: false,
        credential: Credential::Open,
    }
}

/// A web Inbox session cookie: a human-role caller acting as the session's
/// name. A state change must come from the daemon's own origin (the
/// cookie is ambient, so a cross-site page could otherwise use it).
async fn cookie_caller(s: &Shared, secret: &str, cross_site: bool) -> ApiResult<Caller> {
    if cross_site {
        return Err(refuse_cross_site());
    }
    match s.ops.inbox_session_verify(secret).await? {
        Some(session) => Ok(Caller {
            name: session.name,
            role: Role::Human,
            project: None,
            token: true,
            credential: Credential::Cookie(secret.to_string()),
        }),
        None => Err(ApiError::unauthorized(
            "the Inbox session ended or is unknown: run `handoff inbox-link` and open the link it prints",
        )),
    }
}

fn refuse_cross_site() -> ApiError {
    ApiError::forbidden(
        "cross_site",
        "cross-site request refused: a browser write must come from this daemon's own page (the Origin header does not match)",
    )
}

/// The per-route middleware: authenticate, check the role, hand over a [`Caller`].
pub(crate) async fn authorize(s: Shared, access: Access, mut req: Request, next: Next) -> Response {
    if access == Access::Public {
        return next.run(req).await;
    }
    // The header is copied out first: a request body is not `Sync`, so the
    // request itself must not be borrowed across the store lookup.
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let cross_site = changes && !same_origin(req.headers());
    let has_origin = req.headers().contains_key(header::ORIGIN);
    let owner = req.extensions().get::<super::OwnerSocket>().is_some();
    let c = match bearer(&req) {
        Ok(Some(tok)) => caller(&s, Some(tok)).await,
        // The owner-only socket: the host's owner, as the local CLI is.
        Ok(None) if owner => Ok(Caller {
            credential: Credential::Socket,
            ..owner_caller()
        }),
        Ok(None) => match cookie_secret(req.headers()) {
            Some(secret) => cookie_caller(&s, &secret, cross_site).await,
            // An open daemon trusts requests without credentials; a
            // browser's cross-site POST is not one of them.
            None if s.config.http.open && cross_site && has_origin => Err(refuse_cross_site()),
            None => caller(&s, None).await,
        },
        Err(e) => Err(e),
    };
    let c = match c {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if !c.may(access) {
        let what = match access {
            Access::Agent => "the agent side (an agent or admin token)",
            Access::Audit => "auditors (an admin or auditor token)",
            _ => "the human side (a human or admin token)",
        };
        return ApiError::forbidden(
            "wrong_role",
            format!(
                "{} {} token may not do this: it is for {what}",
                if c.role == Role::Human { "a" } else { "an" },
                c.role.as_str()
            ),
        )
        .into_response();
    }
    req.extensions_mut().insert(c);
    next.run(req).await
}

/// Why the daemon may not listen on `addr`, if it may not: a non-loopback
/// address needs at least one live token, and `[http] open` is honoured only
/// on loopback.
pub async fn listen_refusal(
    ops: &crate::ops::Local,
    open: bool,
    addr: SocketAddr,
) -> crate::ops::Result<Option<String>> {
    if addr.ip().is_loopback() {
        return Ok(None);
    }
    if open {
        return Ok(Some(format!(
            "refusing to serve the API without tokens on {addr}: [http] open = true is allowed only on a loopback address"
        )));
    }
    if !ops.tokens_exist().await? {
        return Ok(Some(format!(
            "refusing to listen on {addr} (not loopback) with no API token: create one first with \
             `handoff token create --name NAME --role agent|human|admin|auditor`, or listen on 127.0.0.1"
        )));
    }
    Ok(None)
}

/// The Inbox session cookie's name.
pub(crate) const COOKIE: &str = "handoff_inbox";

/// The value of the Inbox session cookie in `headers`, if the request
/// carries one (browsers may send several `Cookie` headers).
pub(crate) fn cookie_secret(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().trim().to_string())
}

/// The `Set-Cookie` value for the Inbox session: host-only, every path,
/// `HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS. An empty value with
/// age 0 clears it.
pub(crate) fn session_cookie(
    value: &str,
    max_age_secs: i64,
    secure: bool,
) -> Result<HeaderValue, axum::http::header::InvalidHeaderValue> {
    let c = cookie::Cookie::build((COOKIE, value))
        .path("/")
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .secure(secure)
        .build();
    HeaderValue::from_str(&c.to_string())
}

/// Whether the request's `Origin` is this daemon's own origin (the scheme
/// and the `Host` the browser addressed). A browser always sends `Origin`
/// on a POST; a cross-site page cannot forge it. Missing = not same-origin.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |h| headers.get(h).and_then(|v: &HeaderValue| v.to_str().ok());
    let (Some(origin), Some(host)) = (text(header::ORIGIN), text(header::HOST)) else {
        return false;
    };
    let origin = origin.trim();
    ["http://", "https://"]
        .iter()
        .any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}{host}")))
}

#[cfg(test)]
mod tests;
