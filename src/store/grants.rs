//! Permission grants: a person's "approve for this session" or
//! "always approve" on an agent's permission prompt, kept so that later
//! prompts it covers are decided at once.
//!
//! A grant holds one tool and one [`pattern`] (never another tool, never a
//! wider pattern than the message showed). A session grant covers one agent
//! session; an always grant every session of its project. Either may also
//! have an end (`expires_at`: "for 1 h", "until 18:00", see [`end`]) and a
//! place (`path`: a glob the prompt's working directory must match, "always
//! here"). The end is in the matching query itself, compared with the
//! store's clock: an expired grant decides nothing whether or not anything
//! swept it. Every prompt a grant decides appends a `grant.used` event. A
//! grant is saved
//! unconfirmed, the prompt is approved, and only an approval that won
//! confirms it ([`Store::grant_confirm`]); only confirmed, unrevoked grants
//! match. Revocation is a guarded UPDATE. This module decides nothing about
//! prompts itself: the hook asks [`Store::grant_covering`] and approves the
//! prompt as `grant:<id>` through the actions engine.

mod create;
pub mod end;
mod manage;
pub mod pattern;
mod prompt;

pub use manage::Revoked;

use crate::store::cols::{Cols, rows_by};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::engine::Stmt;
use super::{Error, NewEvent, Result, Store};
use crate::store::Channel;
use crate::store::actions::{self, Action, Actor, ApproveOutcome};
pub use prompt::{AGENTS, CLAUDE, CODEX, offer, prompt_cwd, prompt_of, prompt_tool};

/// How far a grant reaches.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Later prompts of the same agent session.
    Session,
    /// Later prompts of every session of the same project (and, for Claude
    /// Code, a rule written back into its local settings).
    Always,
}

impl Scope {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Always => "always",
        }
    }
}

/// One grant as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Grant {
    /// Full id (UUIDv7 hex).
    pub id: String,
    /// Session or always.
    pub scope: Scope,
    /// The agent whose prompts it decides (`claude`, `codex`).
    pub agent: String,
    /// The agent session it covers (empty for always).
    pub session: String,
    /// The project it holds in.
    pub project: String,
    /// The one tool it covers.
    pub tool: String,
    /// What of that tool's input it covers (see [`pattern`]).
    pub pattern: String,
    /// The rule as shown before it was saved: `Bash(npm test:*)`.
    pub rule: String,
    /// The prompt (action) it was given on.
    pub action_id: String,
    /// Who gave it.
    pub created_by: String,
    /// When.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// When its approval won (None: inert, it never matches).
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub confirmed_at: Option<i64>,
    /// When it stops matching (None: until revoked).
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub expires_at: Option<i64>,
    /// The glob the prompt's working directory must match
    /// (`/home/dev/shop/**`); empty: anywhere in the project.
    pub path: String,
    /// When it was revoked (None while it holds).
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub revoked_at: Option<i64>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

impl Grant {
    /// The short id (last 8 characters).
    pub fn short_id(&self) -> &str {
        super::short_id(&self.id)
    }

    /// Whether it decides prompts (confirmed, not revoked), ignoring its end.
    pub fn live(&self) -> bool {
        self.confirmed_at.is_some() && self.revoked_at.is_none()
    }

    /// Whether it decides prompts at `now`: live and not past its end.
    pub fn holds(&self, now: i64) -> bool {
        self.live() && self.expires_at.is_none_or(|e| e > now)
    }

    /// Where it holds, in words: `anywhere in shop`, `in /home/dev/shop/**`.
    pub fn place(&self) -> String {
        if self.path.is_empty() {
            format!("anywhere in {}", self.project)
        } else {
            format!("in {}", self.path)
        }
    }
}

/// What a "for this session" / "for 1 h" / "always here" tap saves beside
/// its rule: how far, until when, and whether only in the prompt's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    /// Session or always.
    pub scope: Scope,
    /// The end, in ms (None: until revoked).
    pub until: Option<i64>,
    /// Only where the prompt ran: its working directory and below.
    pub here: bool,
}

impl Terms {
    /// Just a scope: no end, anywhere in the project.
    pub fn scope(scope: Scope) -> Terms {
        Terms {
            scope,
            until: None,
            here: false,
        }
    }
}

/// A grant to save.
#[derive(Debug, Clone)]
pub struct NewGrant<'a> {
    /// Session or always.
    pub scope: Scope,
    /// The agent (`claude`).
    pub agent: &'a str,
    /// The agent session (ignored for always).
    pub session: &'a str,
    /// The project.
    pub project: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The pattern, from [`pattern::derive`].
    pub pattern: &'a str,
    /// The end, in ms (None: until revoked).
    pub expires_at: Option<i64>,
    /// The glob of working directories it holds in ('' anywhere), from
    /// [`pattern::here`].
    pub path: &'a str,
    /// The prompt it is given on.
    pub action_id: &'a str,
    /// Who gives it.
    pub by: &'a str,
}

// A stored grant, on either engine.
rows_by!(Grant, grant_from);

fn grant_from(r: &impl Cols) -> Result<Grant> {
    let scope: String = r.try_get("scope")?;
    let tool: String = r.try_get("tool")?;
    let pattern: String = r.try_get("pattern")?;
    Ok(Grant {
        id: r.try_get("id")?,
        scope: match scope.as_str() {
            "session" => Scope::Session,
            "always" => Scope::Always,
            other => return Err(Error::Corrupt(format!("grant scope `{other}`"))),
        },
        agent: r.try_get("agent")?,
        session: r.try_get("session")?,
        project: r.try_get("project")?,
        rule: pattern::shown(&tool, &pattern),
        tool,
        pattern,
        action_id: r.try_get("action_id")?,
        created_by: r.try_get("created_by")?,
        created_at: r.try_get("created_at")?,
        confirmed_at: r.try_get("confirmed_at")?,
        expires_at: r.try_get("expires_at")?,
        path: r.try_get("path")?,
        revoked_at: r.try_get("revoked_at")?,
        revoked_by: r.try_get("revoked_by")?,
    })
}

/// The grant given on a prompt.
const OF_ACTION: &str = "SELECT * FROM grants WHERE action_id = $1";

/// The `grant.*` event `kind` about `g` by `actor`.
fn grant_event<'a>(kind: &'a str, actor: &'a str, channel: Channel, g: &'a Grant) -> NewEvent<'a> {
    NewEvent {
        kind,
        entity_kind: "grant",
        entity_id: &g.id,
        actor,
        channel,
        project: &g.project,
        session: &g.session,
        payload: json!({
            "scope": g.scope, "tool": g.tool, "rule": g.rule, "action_id": g.action_id,
            "expires_at": g.expires_at.map(crate::clock::format_rfc3339), "path": g.path,
        }),
    }
}

impl Store {
    /// Approve the prompt `a` as `actor` and save the grant [`offer`] shows
    /// for it, on `terms`: the grant first (inert), then the approval, then
    /// the grant confirmed only if this approval won. The grant comes back
    /// only when it is live. `terms.scope` is the grant's reach,
    /// `terms.until` ends it, `terms.here` keeps it to the prompt's working
    /// directory and below (anywhere in the project when the prompt names
    /// no directory); [`Terms::scope`] is a scope alone.
    pub async fn approve_granting(
        &self,
        a: &Action,
        actor: Actor<'_>,
        terms: Terms,
    ) -> actions::Result<(ApproveOutcome, Option<Grant>)> {
        let scope = terms.scope;
        let path = match prompt_cwd(a) {
            Some(cwd) if terms.here => pattern::here(cwd),
            _ => String::new(),
        };
        let agent = prompt_of(a).map_or(CLAUDE, |(agent, _)| agent);
        let Some((tool, p)) = offer(a) else {
            return Err(Error::Invalid(
                "no grant is offered for this prompt (not an agent's permission prompt, or a tool or command a rule cannot name): approve it once".into(),
            )
            .into());
        };
        let grant = self
            .grant_create(
                &NewGrant {
                    scope,
                    agent,
                    session: &a.session,
                    project: &a.project,
                    tool: &tool,
                    pattern: &p,
                    action_id: &a.id,
                    by: actor.name,
                    expires_at: terms.until,
                    path: &path,
                },
                actor.channel,
            )
            .await?;
        let out = self.approve(&a.id, actor, None).await?;
        let won = matches!(&out, ApproveOutcome::Approved { action }
            if action.decided_by.as_deref() == Some(actor.name));
        // Only the grant this tap saved (a double tap of another button
        // finds the first tap's grant: that one is not what this tap showed).
        let ours = grant.created_by == actor.name
            && grant.scope == scope
            && grant.expires_at == terms.until
            && grant.path == path;
        if !won || !ours || !self.grant_confirm(&grant.id).await? {
            return Ok((out, None));
        }
        let live = self.grant_for_action(&a.id).await?;
        Ok((out, live))
    }

    /// Decide the pending agent prompt `a` by the oldest live grant
    /// covering it, approved as `grant:<id>`; the grant that decided it, or
    /// `None` (not pending, not a prompt, or nothing covers it).
    pub async fn grant_apply(&self, a: &Action) -> actions::Result<Option<Grant>> {
        let Some((agent, tool)) = prompt_of(a) else {
            return Ok(None);
        };
        if a.status != actions::Status::Pending {
            return Ok(None);
        }
        let cwd = prompt_cwd(a).unwrap_or_default();
        let Some(g) = self
            .grant_covering(agent, &a.session, &a.project, tool, &a.effective_args, cwd)
            .await?
        else {
            return Ok(None);
        };
        let name = format!("grant:{}", g.id);
        let actor = Actor {
            name: &name,
            channel: Channel::Daemon,
        };
        let out = self.approve(&a.id, actor, None).await?;
        let ApproveOutcome::Approved { action } = out else {
            return Ok(None);
        };
        self.grant_used(&g, &action).await?;
        Ok(Some(g))
    }

    /// Audit one use of `g`: the prompt `a` it just decided, as a
    /// `grant.used` event (the approval's own event names `grant:<id>` too).
    async fn grant_used(&self, g: &Grant, a: &Action) -> Result<()> {
        let input = Arc::new((g.clone(), a.id.clone(), a.summary.clone()));
        self.transact(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (g, action_id, summary) = &*input;
                let actor = format!("grant:{}", g.id);
                let mut ev = grant_event("grant.used", &actor, Channel::Daemon, g);
                ev.payload = json!({"rule": g.rule, "action_id": action_id, "summary": summary});
                tx.append(now, &ev).await?;
                Ok(())
            })
        })
        .await
    }

    /// The grant whose giver's approval decided `a`, if it still holds
    /// (a grant saved by a tap that lost the race says nothing).
    pub async fn grant_given(&self, a: &Action) -> Result<Option<Grant>> {
        Ok(self
            .grant_for_action(&a.id)
            .await?
            .filter(|g| Some(&g.created_by) == a.decided_by.as_ref() && g.revoked_at.is_none()))
    }

    /// Confirm grant `id` after the approval of its prompt by its giver
    /// won; from then on it matches. False if it was confirmed or revoked
    /// already.
    pub async fn grant_confirm(&self, id: &str) -> Result<bool> {
        // Why guarded: confirming twice or after a revoke changes nothing.
        let confirm = Stmt::new(
            "UPDATE grants SET confirmed_at = $1
             WHERE id = $2 AND confirmed_at IS NULL AND revoked_at IS NULL",
        )
        .int(self.now())
        .text(id);
        Ok(self.change(confirm).await? == 1)
    }

    /// The grant given on prompt `action_id`, confirmed or not.
    pub async fn grant_for_action(&self, action_id: &str) -> Result<Option<Grant>> {
        self.row(Stmt::new(OF_ACTION).text(action_id)).await
    }

    /// The oldest grant of `agent` that holds now and covers `input` of
    /// `tool` in `session` (session grants) or `project` (always grants),
    /// run in the working directory `cwd` ('' unknown).
    pub async fn grant_covering(
        &self,
        agent: &str,
        session: &str,
        project: &str,
        tool: &str,
        input: &Value,
        cwd: &str,
    ) -> Result<Option<Grant>> {
        // Why the end is compared here, in the predicate: a grant past its
        // end must never decide a prompt, whether or not anything swept it.
        // The id breaks ties in bytewise order on both engines.
        let live: Vec<Grant> = self
            .rows(
                Stmt::spelled(
                    "SELECT * FROM grants
                     WHERE revoked_at IS NULL AND confirmed_at IS NOT NULL
                       AND (expires_at IS NULL OR expires_at > $5)
                       AND agent = $1 AND tool = $2 AND project = $3
                       AND ((scope = 'session' AND session = $4 AND $4 <> '') OR scope = 'always')
                     ORDER BY created_at, id",
                    "SELECT * FROM grants
                     WHERE revoked_at IS NULL AND confirmed_at IS NOT NULL
                       AND (expires_at IS NULL OR expires_at > $5)
                       AND agent = $1 AND tool = $2 AND project = $3
                       AND ((scope = 'session' AND session = $4 AND $4 <> '') OR scope = 'always')
                     ORDER BY created_at, id COLLATE \"C\"",
                )
                .text(agent)
                .text(tool)
                .text(project)
                .text(session)
                .int(self.now()),
            )
            .await?;
        Ok(live.into_iter().find(|g| {
            pattern::covers(&g.tool, &g.pattern, input) && pattern::in_place(&g.path, cwd)
        }))
    }
}
