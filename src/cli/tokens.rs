//! `handoff token create|list|revoke`: API bearer tokens.
//!
//! `create` prints the token once (only its SHA-256 is stored); `list`
//! never shows secrets; `revoke` takes a name or an id. The roles and
//! project scopes are enforced by the HTTP API, not here.

use clap::Subcommand;

use super::{Ctx, exit, fail, store_failure};
use crate::store::tokens::{Role, Token};

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Create a token and print it once (store it now: it cannot be shown again).
    Create {
        /// Who the token acts as (recorded as the actor of its writes).
        #[arg(long)]
        name: String,
        /// agent (the agent side), human (reply, approve, …), admin
        /// (everything) or auditor (reads and the audit export).
        #[arg(long, value_parser = ["agent", "human", "admin", "auditor"])]
        role: String,
        /// Limit the token to one project.
        #[arg(long)]
        project: Option<String>,
    },
    /// List tokens (names, roles, projects; never secrets).
    List,
    /// Revoke a token by name or id; it stops working at once.
    Revoke {
        /// The token's name, id or short id.
        name: String,
    },
}

fn line(t: &Token) -> String {
    format!(
        "{}  {:<20} {:<6} {:<16} {}",
        crate::store::short_id(&t.id),
        t.name,
        t.role.as_str(),
        t.project.as_deref().unwrap_or("(all projects)"),
        match t.revoked_at {
            Some(at) => format!("revoked {}", crate::clock::format_rfc3339(at)),
            None => format!("created {}", crate::clock::format_rfc3339(t.created_at)),
        }
    )
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    let store = ctx.host_store("token").await?;
    match cmd {
        Cmd::Create {
            name,
            role,
            project,
        } => {
            let role: Role = role.parse()?;
            let created = store
                .token_create(&name, role, project.as_deref())
                .await
                .map_err(|e| store_failure(&e))?;
            let v = super::one(
                "token",
                &created.token,
                serde_json::json!({"secret": created.secret}),
            );
            ctx.print(&v, || {
                format!(
                    "{}\n\ntoken `{}` ({}, {}) created; this is the only time it is shown.\nUse it as `Authorization: Bearer <token>` or HANDOFF_TOKEN.",
                    created.secret,
                    created.token.name,
                    created.token.role.as_str(),
                    created
                        .token
                        .project
                        .as_deref()
                        .map_or("all projects".to_string(), |p| format!("project {p}")),
                )
            });
            Ok(exit::OK)
        }
        Cmd::List => {
            let list = store.token_list().await?;
            ctx.list("tokens", &list, || {
                if list.is_empty() {
                    "no tokens: create one with `handoff token create --name NAME --role agent|human|admin|auditor`".into()
                } else {
                    list.iter().map(line).collect::<Vec<_>>().join("\n")
                }
            });
            Ok(exit::OK)
        }
        Cmd::Revoke { name } => match store
            .token_revoke(&name)
            .await
            .map_err(|e| store_failure(&e))?
        {
            Some(t) => {
                ctx.show("token", &t, || format!("revoked token `{}`", t.name));
                Ok(exit::OK)
            }
            None => Err(fail(
                exit::NOT_FOUND,
                format!("no live token named `{name}`: see `handoff token list`"),
            )),
        },
    }
}
