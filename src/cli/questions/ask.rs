//! `handoff ask`: flag a question and, with `--wait`, poll the store until
//! a reply arrives, pick up exactly that reply and print it.

use std::io::Read;
use std::time::Duration;

use super::render::render_reply;
use super::{AskArgs, POLL};
use crate::cli::{Ctx, exit, fail};
use crate::store::Store;
use crate::store::questions::{NewQuestion, Question, QuestionOption, Status};

pub(super) async fn ask(a: AskArgs, ctx: &Ctx) -> anyhow::Result<u8> {
    let mut options: Vec<QuestionOption> = a
        .options
        .iter()
        .map(|l| QuestionOption {
            label: l.clone(),
            recommended: false,
        })
        .collect();
    if let Some(rec) = &a.recommend {
        let idx = match rec.trim().parse::<usize>() {
            Ok(n) if (1..=options.len()).contains(&n) => Some(n - 1),
            Ok(_) => None,
            Err(_) => options
                .iter()
                .position(|o| o.label.trim().eq_ignore_ascii_case(rec.trim())),
        };
        let Some(i) = idx else {
            return Err(fail(
                exit::ERROR,
                format!(
                    "--recommend {rec:?} names no option: give its number (1–{}) or its label",
                    options.len()
                ),
            ));
        };
        options[i].recommended = true;
    }
    let context = if a.context == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        a.context
    };
    let project = match a.project {
        Some(p) => p,
        None => std::env::current_dir()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default(),
    };
    let q = NewQuestion {
        project,
        agent: a.agent,
        session: a.session,
        key: a.key,
        title: a.title,
        detail: a.detail,
        context,
        options,
    };
    let store = ctx.store().await?;
    let flagged = store.flag(&q).await?;
    let fq = &flagged.question;
    if !a.wait {
        ctx.print(&flagged, || {
            let verb = if flagged.created { "asked" } else { "updated" };
            format!(
                "{verb} {} (revision {})\nid {}",
                fq.short_id, fq.revision, fq.id
            )
        });
        return Ok(exit::OK);
    }
    if !ctx.json {
        let verb = if flagged.created { "asked" } else { "updated" };
        eprintln!(
            "{verb} {} (revision {}); waiting for a reply…",
            fq.short_id, fq.revision
        );
    }
    wait_reply(&store, fq, &q.agent, a.timeout, ctx).await
}

/// Poll until `asked` gets a reply it has not delivered before, pick it up
/// and print it. A reply already waiting counts; an answer the agent
/// recorded itself (born seen) counts when it is newer than the ask.
async fn wait_reply(
    store: &Store,
    asked: &Question,
    by: &str,
    timeout_ms: i64,
    ctx: &Ctx,
) -> anyhow::Result<u8> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
    loop {
        let q = store
            .get_question(&asked.id)
            .await?
            .ok_or_else(|| fail(exit::NOT_FOUND, "the question disappeared"))?;
        if q.status != Status::Open {
            let why = q
                .outcome
                .as_deref()
                .map(|o| format!(": {o}"))
                .unwrap_or_default();
            return Err(ctx.refuse(
                exit::REFUSED,
                &q,
                format!("the question was {} while waiting{why}", q.status),
            ));
        }
        let mut delivered = None;
        if let Some(r) = &q.reply {
            if r.seen_at.is_none() {
                // Mark only this exact reply; if it changed meanwhile, loop
                // and read the newer one.
                if let Some(at) = store.mark_reply_seen(&q, by).await? {
                    let mut q = q.clone();
                    if let Some(r) = q.reply.as_mut() {
                        r.seen_at = Some(at);
                    }
                    delivered = Some(q);
                } else {
                    continue;
                }
            } else if q.reply_seq > asked.reply_seq {
                delivered = Some(q.clone());
            }
        }
        if let Some(q) = delivered {
            ctx.print(&q, || render_reply(&q));
            return Ok(exit::OK);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(
                exit::TIMEOUT,
                format!(
                    "no reply to {} yet; it stays open: `handoff pending` will deliver the reply",
                    q.short_id
                ),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}
