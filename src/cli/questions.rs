//! CLI commands for questions: `ask`, `pending`, `reply`, `answer`,
//! `resolve`, `dismiss`, `snooze`, `questions`, `show`.
//!
//! Agents use `ask`, `pending`, `answer` and `resolve`; humans use `reply`
//! (the Inbox door), `dismiss`, `snooze`, `questions` and `show`. Each
//! command is a thin layer over [`Ops`] (the local store or the daemon at
//! `HANDOFF_URL`): parse, call, print, map refusals to exit code 3 with a
//! message that says what to do.

use clap::{Args, Subcommand};

mod ask;
mod render;

use super::{Ctx, exit, fail, refusal};
use crate::clock::parse_duration_ms;
use crate::ops::Ops;
use crate::store;
use crate::store::questions::{
    Channel, ListFilter, NewReply, Outcome, Question, Refusal, ReplyKind, Status,
};
use render::{human_refusal, render};

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Ask a human a question (agents).
    ///
    /// Prints its id; with --wait, blocks until a reply arrives and prints it.
    Ask(Box<AskArgs>),
    /// Hand the agent the replies on its open questions (agents).
    ///
    /// Each new reply is marked picked up. Replies already delivered come
    /// back until the question is resolved (use --new for only new ones).
    Pending {
        #[command(flatten)]
        scope: crate::cli::PickupScope,
        /// Only replies not delivered before.
        #[arg(long)]
        new: bool,
        /// Who picks up (recorded in the event log).
        #[arg(long)]
        by: Option<String>,
    },
    /// Reply to a question as a human (the Inbox door).
    ///
    /// Always wins while the question is open. An empty TEXT clears a reply
    /// nobody picked up yet.
    Reply(ReplyArgs),
    /// Record an answer the human gave in the agent's terminal (agents).
    ///
    /// Refused if a human's reply is waiting: you get that reply instead.
    Answer(AnswerArgs),
    /// Close a question as the agent, saying what came of it.
    Resolve {
        /// Question id or short id.
        id: String,
        /// What was decided or done.
        #[arg(long)]
        outcome: String,
        /// Who resolves (recorded in the event log).
        #[arg(long)]
        by: Option<String>,
    },
    /// Close a question as a human without answering it.
    Dismiss {
        /// Question id or short id.
        id: String,
        /// Why (shown to the agent).
        #[arg(long)]
        reason: Option<String>,
        /// Who dismisses [default: $USER].
        #[arg(long)]
        by: Option<String>,
    },
    /// Hide a question from the chat list for a while.
    Snooze {
        /// Question id or short id.
        id: String,
        /// How long, e.g. 30m, 1h, 2d (0 wakes it now).
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration_ms)]
        duration: i64,
        /// Who snoozes [default: $USER].
        #[arg(long)]
        by: Option<String>,
    },
    /// List questions.
    Questions {
        /// open, resolved, dismissed or all.
        #[arg(long, default_value = "open", value_parser = parse_status_filter)]
        status: StatusFilter,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// Only this agent session.
        #[arg(long)]
        session: Option<String>,
    },
    /// Show one question with its reply history.
    Show {
        /// Question id or short id.
        id: String,
    },
}

/// Arguments of `handoff ask`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The question, one line (≤ 120 characters).
    title: String,
    /// One more line of detail (≤ 500 characters).
    #[arg(long, default_value = "")]
    detail: String,
    /// Long context (≤ 64 KiB); `-` reads it from stdin.
    #[arg(long, default_value = "")]
    context: String,
    /// A choice to offer (repeat 2–4 times).
    #[arg(long = "option", value_name = "LABEL")]
    options: Vec<String>,
    /// Recommend an option, by number (1-based) or label.
    #[arg(long, value_name = "N|LABEL")]
    recommend: Option<String>,
    /// Re-asking with the same key (in the project) updates the open question in place.
    #[arg(long)]
    key: Option<String>,
    /// Project [default: $HANDOFF_PROJECT, else the registered session's project, else the current directory's name].
    #[arg(long, env = "HANDOFF_PROJECT")]
    project: Option<String>,
    /// Agent asking (recorded with the question; --wait picks the reply up in its name).
    #[arg(long, env = "HANDOFF_AGENT", default_value = "")]
    agent: String,
    /// Agent session to wake when answered.
    #[arg(long, env = "HANDOFF_SESSION", default_value = "")]
    session: String,
    /// Block until a reply arrives, pick it up and print it.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this long (exit code 5).
    #[arg(long, default_value = "10m", value_parser = parse_duration_ms, requires = "wait")]
    timeout: i64,
}

/// What `reply` and `answer` share: the question, the words, their kind,
/// who wrote them and the revision they were written for.
#[derive(Debug, Args)]
pub(crate) struct ReplyFlags {
    /// Question id or short id.
    id: String,
    /// The reply; "" clears a reply no agent has picked up yet.
    text: String,
    /// answer, clarify (correct an earlier answer / ask to reword) or decline.
    #[arg(long, default_value = "answer", value_parser = parse_kind)]
    kind: ReplyKind,
    /// Who replies (recorded with the reply) [default: $USER for reply].
    #[arg(long)]
    by: Option<String>,
    /// Refuse unless the question is still at this revision.
    #[arg(long)]
    revision: Option<i64>,
}

impl ReplyFlags {
    /// The question's full id and the reply to write on it, `by` defaulting
    /// as `default_by` says and with `context` attached.
    async fn reply(
        self,
        ctx: &Ctx,
        ops: &crate::ops::Ops,
        default_by: fn() -> String,
        context: Option<String>,
    ) -> anyhow::Result<(String, NewReply)> {
        let id = find(ops, &self.id).await?;
        let reply = NewReply {
            text: self.text,
            kind: self.kind,
            context,
            by: ctx.actor(self.by, default_by),
            expected_revision: self.revision,
        };
        Ok((id, reply))
    }
}

/// Arguments of `handoff reply`.
#[derive(Debug, Args)]
pub(crate) struct ReplyArgs {
    #[command(flatten)]
    words: ReplyFlags,
    /// Extra context for the agent.
    #[arg(long)]
    context: Option<String>,
    /// Reply through another door: `chat` applies the chat rule (never
    /// over an unclaimed reply). For tests and scripts that bridge a chat.
    #[arg(long, hide = true, default_value = "inbox", value_parser = parse_via)]
    via: Channel,
}

/// Arguments of `handoff answer`: what the human answered in the agent's
/// terminal.
#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    #[command(flatten)]
    words: ReplyFlags,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct StatusFilter(Option<Status>);

fn parse_kind(s: &str) -> Result<ReplyKind, String> {
    s.parse()
}

fn parse_via(s: &str) -> Result<Channel, String> {
    if s == Channel::Agent.as_str() {
        return Err("use `handoff answer` for the agent's door".into());
    }
    Channel::one_of(s, &[Channel::Inbox, Channel::Chat])
}

fn parse_status_filter(s: &str) -> Result<StatusFilter, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(StatusFilter(None));
    }
    s.parse()
        .map(|st| StatusFilter(Some(st)))
        .map_err(|e: String| format!("{e}, all"))
}

/// Resolve a full or short id, or fail with exit code 4.
async fn find(ops: &Ops, id: &str) -> anyhow::Result<String> {
    ops.resolve_question_id(id).await?.ok_or_else(|| {
        fail(
            exit::NOT_FOUND,
            format!("no question `{id}`: list them with `handoff questions --status all`"),
        )
    })
}

/// Print the question a write returned, or turn its refusal into exit 3
/// (exit 4 for a missing question, 2 for a blank reply).
fn finish(
    ctx: &Ctx,
    out: Outcome<Question>,
    done: &str,
    refused: impl Fn(&Refusal) -> String,
) -> anyhow::Result<u8> {
    match out {
        Ok(q) => {
            ctx.show("question", &q, || {
                format!("{done} {}\n{}", q.short_id, render(&q))
            });
            Ok(exit::OK)
        }
        Err(r) => {
            // A blank reply is bad input, as the API's 422 says.
            let code = match r {
                Refusal::NotFound => exit::NOT_FOUND,
                Refusal::Empty => exit::INVALID,
                _ => exit::REFUSED,
            };
            Err(refusal(code, &r, refused(&r)))
        }
    }
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    run_cmd(cmd, ctx).await.map_err(one_line)
}

/// Store errors carry sqlx's error as their source, which `{:#}` would
/// print two or three times over; say it once, and say what a read-only
/// database means.
fn one_line(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<store::Error>() {
        Some(se) => crate::cli::store_failure(se),
        None => e,
    }
}

async fn run_cmd(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Ask(args) => ask::ask(*args, ctx).await,
        Cmd::Pending { scope, new, by } => {
            let (project, session) = scope.resolve();
            pending(ctx, project, session, new, by).await
        }
        Cmd::Reply(args) => args.run(ctx).await,
        Cmd::Answer(args) => args.run(ctx).await,
        Cmd::Resolve { id, outcome, by } => resolve(ctx, &id, &outcome, by).await,
        Cmd::Dismiss { id, reason, by } => dismiss(ctx, &id, reason, by).await,
        Cmd::Snooze { id, duration, by } => snooze(ctx, &id, duration, by).await,
        Cmd::Questions {
            status,
            project,
            session,
        } => list(ctx, status, project, session).await,
        Cmd::Show { id } => show(ctx, &id).await,
    }
}

/// `handoff pending`: hand over the replies in the caller's scope.
async fn pending(
    ctx: &Ctx,
    project: Option<String>,
    session: Option<String>,
    new: bool,
    by: Option<String>,
) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let by = ctx.actor(by, String::new);
    let got = ops
        .pending_replies(project.as_deref(), session.as_deref(), !new, &by)
        .await?;
    ctx.list("replies", &got, || render::deliveries(&got));
    Ok(exit::OK)
}

impl ReplyArgs {
    /// `handoff reply`: the Inbox door (or, on the host, the chat rule).
    async fn run(self, ctx: &Ctx) -> anyhow::Result<u8> {
        let via = self.via;
        if via == Channel::Chat && ctx.remote() {
            return Err(fail(
                exit::INVALID,
                "`reply --via chat` must run on the daemon's host (unset HANDOFF_URL); remotely a reply is an Inbox reply",
            ));
        }
        let ops = ctx.ops().await?;
        let (id, reply) = self
            .words
            .reply(ctx, &ops, super::person, self.context)
            .await?;
        let host = match via {
            Channel::Chat => ops.host().await?,
            _ => None,
        };
        let out = match host {
            Some(l) => l.store().reply_chat(&id, &reply).await?,
            None => ops.reply_inbox(&id, &reply).await?,
        };
        let done = if reply.text.trim().is_empty() && reply.kind != ReplyKind::Decline {
            "cleared the reply on"
        } else {
            "replied to"
        };
        finish(ctx, out, done, |r| human_refusal(r, via))
    }
}

impl AnswerArgs {
    /// `handoff answer`: the agent's door; a waiting human reply wins.
    async fn run(self, ctx: &Ctx) -> anyhow::Result<u8> {
        let ops = ctx.ops().await?;
        let (id, reply) = self.words.reply(ctx, &ops, String::new, None).await?;
        let out = ops.answer_agent(&id, &reply).await?;
        finish(ctx, out, "recorded the answer on", |r| match r {
            Refusal::UnreadAnswer {
                reply,
                kind,
                source,
                by,
            } => format!(
                "a human already replied ({kind} via {source}{}): {reply:?} — that reply is now delivered to you; act on it instead",
                if by.is_empty() {
                    String::new()
                } else {
                    format!(", by {by}")
                }
            ),
            other => human_refusal(other, Channel::Agent),
        })
    }
}

/// `handoff resolve`.
async fn resolve(ctx: &Ctx, id: &str, outcome: &str, by: Option<String>) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = find(&ops, id).await?;
    let out = ops
        .resolve_question(&id, outcome, &ctx.actor(by, String::new))
        .await?;
    finish(ctx, out, "resolved", |r| human_refusal(r, Channel::Agent))
}

/// `handoff dismiss`.
async fn dismiss(
    ctx: &Ctx,
    id: &str,
    reason: Option<String>,
    by: Option<String>,
) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = find(&ops, id).await?;
    let by = ctx.actor(by, super::person);
    let out = ops.dismiss_question(&id, reason.as_deref(), &by).await?;
    finish(ctx, out, "dismissed", |r| human_refusal(r, Channel::Inbox))
}

/// `handoff snooze`.
async fn snooze(ctx: &Ctx, id: &str, duration: i64, by: Option<String>) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = find(&ops, id).await?;
    let by = ctx.actor(by, super::person);
    let out = ops.snooze_question(&id, duration, &by).await?;
    finish(ctx, out, "snoozed", |r| human_refusal(r, Channel::Inbox))
}

/// `handoff questions`.
async fn list(
    ctx: &Ctx,
    status: StatusFilter,
    project: Option<String>,
    session: Option<String>,
) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let list = ops
        .list_questions(&ListFilter {
            status: status.0,
            project,
            session,
            ..Default::default()
        })
        .await?;
    ctx.list("questions", &list, || render::list(&list));
    Ok(exit::OK)
}

/// `handoff show`: one question with its reply history.
async fn show(ctx: &Ctx, id: &str) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = find(&ops, id).await?;
    let question = ops
        .get_question(&id)
        .await?
        .ok_or_else(|| fail(exit::NOT_FOUND, format!("no question `{id}`")))?;
    let replies = ops.question_replies(&id).await?;
    let shown = super::one(
        "question",
        &question,
        serde_json::json!({ "replies": replies }),
    );
    ctx.print(&shown, || render::with_history(&question, &replies));
    Ok(exit::OK)
}
