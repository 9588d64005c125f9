//! `handoff audit export` and `handoff audit verify`: the actions' audit
//! log as a tamper-evident JSON Lines file, and its offline check (the
//! format and the canonical encoding are described in `store/audit.rs`).

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::cli::{Ctx, exit, fail_as, refusal};
use crate::store::audit;

/// The audit log's own commands (`handoff audit ID` shows one action's).
#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Export the audit log as JSON Lines, each entry carrying the SHA-256
    /// of the previous one, the head hash last; the daemon records the head.
    Export {
        /// Only entries at or after this time: RFC 3339, or a duration ago (24h, 7d).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only this project's actions.
        #[arg(long)]
        project: Option<String>,
        /// Write the file here instead of to stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check an exported file offline: names the first entry changed,
    /// removed, inserted or reordered (exit 3), else exit 0.
    Verify {
        /// The exported file (`-`: stdin).
        file: PathBuf,
        /// Also require this head hash (the one the daemon recorded for the export).
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
    },
}

/// Run one of them.
pub(crate) async fn run(ctx: &Ctx, cmd: AuditCmd) -> anyhow::Result<u8> {
    match cmd {
        AuditCmd::Export {
            since,
            project,
            out,
        } => export(ctx, since, project, out).await,
        AuditCmd::Verify { file, head } => verify(ctx, &file, head.as_deref()),
    }
}

/// `--since`: an RFC 3339 time, or a duration before now.
fn since_ms(now: i64, since: &str) -> anyhow::Result<i64> {
    if let Ok(t) = crate::clock::parse_rfc3339(since) {
        return Ok(t);
    }
    match crate::clock::parse_duration_ms(since) {
        Ok(d) => Ok(now.saturating_sub(d)),
        Err(_) => Err(fail_as(
            exit::INVALID,
            "invalid",
            format!(
                "--since `{since}` is neither an RFC 3339 time (2026-12-01T00:00:00Z) nor a duration (24h, 7d)"
            ),
        )),
    }
}

async fn export(
    ctx: &Ctx,
    since: Option<String>,
    project: Option<String>,
    out: Option<PathBuf>,
) -> anyhow::Result<u8> {
    let by = ctx.actor(None, crate::cli::person);
    let ops = ctx.ops().await?;
    let since = since
        .as_deref()
        .map(|s| since_ms(ops.now(), s))
        .transpose()?;
    let e = ops.audit_export(since, project.as_deref(), &by).await?;
    match out {
        Some(path) => {
            std::fs::write(&path, e.text()).map_err(|err| {
                fail_as(
                    exit::INVALID,
                    "invalid",
                    format!("cannot write {}: {err}", path.display()),
                )
            })?;
            ctx.print(
                &json!({"file": path.display().to_string(), "entries": e.entries, "head": e.head}),
                || {
                    format!(
                        "{} entries written to {}\nhead {}",
                        e.entries,
                        path.display(),
                        e.head
                    )
                },
            );
        }
        None => print!("{}", e.text()),
    }
    Ok(exit::OK)
}

fn verify(ctx: &Ctx, file: &std::path::Path, head: Option<&str>) -> anyhow::Result<u8> {
    let text = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    }
    .map_err(|e| {
        fail_as(
            exit::INVALID,
            "invalid",
            format!("cannot read {}: {e}", file.display()),
        )
    })?;
    match audit::verify(&text, head) {
        Ok(v) => {
            ctx.print(&json!({"verified": v}), || {
                format!("verified: {} entries, head {}", v.entries, v.head)
            });
            Ok(exit::OK)
        }
        Err(f) => Err(refusal(
            exit::REFUSED,
            &json!({"refused": f.broken, "line": f.line, "entry": f.entry}),
            format!("{}: {f}", file.display()),
        )),
    }
}
