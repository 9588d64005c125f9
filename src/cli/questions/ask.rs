//! `handoff ask`: flag a question and, with `--wait`, wait until a reply
//! arrives (polling the local store, or a long poll on the daemon), pick up
//! exactly that reply and print it.

use std::io::Read;
use std::time::Duration;

use super::AskArgs;
use super::render::render_reply;
use crate::cli::{Ctx, exit, fail, one, refusal};
use crate::ops::{Awaited, Ops};
use crate::store::questions::{NewQuestion, QuestionOption};

/// The `--option`s, with the one `--recommend` names (by 1-based number
/// or label) marked; a recommendation naming no option is bad input.
fn options(labels: &[String], recommend: Option<&str>) -> anyhow::Result<Vec<QuestionOption>> {
    let mut options: Vec<QuestionOption> = labels
        .iter()
        .map(|l| QuestionOption {
            label: l.clone(),
            recommended: false,
        })
        .collect();
    if let Some(rec) = recommend {
        let idx = match rec.trim().parse::<usize>() {
            Ok(n) if (1..=options.len()).contains(&n) => Some(n - 1),
            Ok(_) => None,
            Err(_) => options
                .iter()
                .position(|o| o.label.trim().eq_ignore_ascii_case(rec.trim())),
        };
        let Some(i) = idx else {
            return Err(fail(
                exit::INVALID,
                format!(
                    "--recommend {rec:?} names no option: give its number (1–{}) or its label",
                    options.len()
                ),
            ));
        };
        options[i].recommended = true;
    }
    Ok(options)
}

/// The question `ask` flags, `--context -` read from stdin, its project
/// left for [`crate::cli::filing_project`]; also the project given, if any.
fn new_question(a: AskArgs) -> anyhow::Result<(NewQuestion, Option<String>)> {
    let options = options(&a.options, a.recommend.as_deref())?;
    let context = if a.context == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        a.context
    };
    Ok((
        NewQuestion {
            project: String::new(),
            agent: a.agent,
            session: a.session,
            key: a.key,
            title: a.title,
            detail: a.detail,
            context,
            options,
        },
        a.project,
    ))
}

pub(super) async fn ask(a: AskArgs, ctx: &Ctx) -> anyhow::Result<u8> {
    let (wait, timeout) = (a.wait, a.timeout);
    let (mut q, given) = new_question(a)?;
    let ops = ctx.ops().await?;
    q.project = crate::cli::filing_project(&ops, given, &q.session).await?;
    if wait {
        return ask_wait(ctx, &ops, q, timeout).await;
    }
    let flagged = ops.flag(&q).await?;
    let fq = &flagged.question;
    let verb = if flagged.created { "asked" } else { "updated" };
    let v = one(
        "question",
        fq,
        serde_json::json!({"created": flagged.created}),
    );
    ctx.print(&v, || {
        format!(
            "{verb} {} (revision {})\nid {}",
            fq.short_id, fq.revision, fq.id
        )
    });
    Ok(exit::OK)
}

/// `ask --wait`: flag and wait in one call ([`crate::ops::Ops::flag_and_await`]:
/// one request to a daemon). A reply already waiting counts; an answer the
/// agent recorded itself (born seen) counts when it is newer than the ask.
async fn ask_wait(ctx: &Ctx, ops: &Ops, q: NewQuestion, timeout: i64) -> anyhow::Result<u8> {
    let wait = Duration::from_millis(timeout.max(0) as u64);
    // The pickup is recorded under the agent's name (a token's own remotely).
    let by = ctx.actor(None, || q.agent.clone());
    if !ctx.json {
        eprintln!("asking {:?}; waiting for a reply…", q.title);
    }
    let (flagged, awaited) = ops.flag_and_await(&q, &by, wait).await?;
    print_awaited(ctx, awaited, flagged.created)
}

/// The end of `ask --wait`: the reply, or the question closed or still
/// open after the timeout (exit 3 or 5, the question in the error's detail).
fn print_awaited(ctx: &Ctx, awaited: Awaited, created: bool) -> anyhow::Result<u8> {
    match awaited {
        Awaited::Reply(q) => {
            let v = one(
                "question",
                &q,
                serde_json::json!({"created": created, "answered": true}),
            );
            ctx.print(&v, || render_reply(&q));
            Ok(exit::OK)
        }
        Awaited::Closed(q) => {
            let why = q
                .outcome
                .as_deref()
                .map(|o| format!(": {o}"))
                .unwrap_or_default();
            Err(refusal(
                exit::REFUSED,
                &one("question", &q, serde_json::json!({"refused": "not_open"})),
                format!("the question was {} while waiting{why}", q.status),
            ))
        }
        // The question exists and stays open: the error's detail carries
        // it, so a script can tell it apart from a failed ask.
        Awaited::TimedOut(q) => Err(refusal(
            exit::TIMEOUT,
            &one("question", &q, serde_json::Value::Null),
            format!(
                "no reply to {} yet; it stays open: `handoff pending` will deliver the reply",
                q.short_id
            ),
        )),
    }
}
