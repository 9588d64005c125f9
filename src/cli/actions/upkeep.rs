//! The commands that settle what is left over: `resolve-unknown` (a person
//! says how an unknown outcome ended), `purge` and `recover` (host only).

use std::time::Duration;

use serde_json::json;

use super::{ResolveHow, exec, render, who};
use crate::cli::{Ctx, exit, refusal};
use crate::clock;
use crate::ops::{self, Local, Ops, Policy};
use crate::store::actions::{Action, Actor, Resolution};

/// `handoff resolve-unknown`.
pub(super) async fn resolve_unknown(
    ctx: &Ctx,
    id: &str,
    how: ResolveHow,
    as_: Option<String>,
) -> anyhow::Result<u8> {
    let res = if how.executed {
        Resolution::Executed
    } else if how.failed {
        Resolution::Failed
    } else {
        Resolution::Retry
    };
    let name = who(ctx, as_);
    let ops = ctx.ops().await?;
    match ops.resolve_unknown(id, Actor::cli(&name), res).await? {
        Ok(a) => {
            ctx.show("action", &a.redacted(), || {
                format!("{}: unknown → {} (by {name})", a.short_id(), a.status)
            });
            Ok(exit::OK)
        }
        Err(a) => {
            let v = crate::cli::one("action", &a.redacted(), json!({"outcome": "not_unknown"}));
            Err(refusal(
                exit::REFUSED,
                &v,
                format!(
                    "{} is {}, not unknown; nothing changed",
                    a.short_id(),
                    a.status
                ),
            ))
        }
    }
}

/// `handoff purge` (host only).
pub(super) async fn purge(ctx: &Ctx, before: i64) -> anyhow::Result<u8> {
    let store = ctx.host_store("purge").await?;
    let rep = store
        .purge_actions(before)
        .await
        .map_err(ops::Error::from)?;
    ctx.show("purge", &rep, || {
        format!(
            "purged {} settled action(s) changed before {} (their audit entries stay in the log); {} live or unknown action(s) kept",
            rep.purged.len(),
            clock::format_rfc3339(before),
            rep.kept_live
        )
    });
    Ok(exit::OK)
}

/// `handoff recover` (host only): recover the store, then run the approved
/// `--exec` actions it found (unless `no_run`), each report worded as it
/// ends and all of them in the summary.
pub(super) async fn recover(
    store: &crate::store::Store,
    ctx: &Ctx,
    no_run: bool,
    lease: Duration,
) -> anyhow::Result<u8> {
    let rep = crate::programs::recover(store)
        .await
        .map_err(ops::Error::from)?;
    let ops = Ops::Local(Local::new(store.clone(), Policy::default()));
    let mut ran = Vec::new();
    if !no_run {
        for a in &rep.claimable {
            if let Some(argv) = &a.exec {
                let report = exec::run_claimed(&ops, ctx.json, a, argv, lease).await?;
                if let Some(line) = render::lost_claim(&report) {
                    eprintln!("{line}");
                }
                ran.push(report);
            }
        }
    }
    let red = |v: &[Action]| v.iter().map(Action::redacted).collect::<Vec<_>>();
    let listed = |v: &[Action]| {
        red(v)
            .iter()
            .map(|a| crate::cli::entity("action", a))
            .collect::<Vec<_>>()
    };
    let v = json!({"recovery": {
        "unknown": listed(&rep.unknown),
        "verified_executed": listed(&rep.verified_executed),
        "rerun": listed(&rep.rerun),
        "claimable": listed(&rep.claimable),
        "ran": ran,
    }});
    ctx.print(&v, || render::recover(&rep, &ran));
    Ok(exit::OK)
}
