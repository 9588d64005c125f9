//! Taps and replies on blocked rows and actions (questions are in
//! `handlers.rs`). Rows go through the boards' chat channel (the same
//! asymmetric rule as questions); actions through the approvals engine, whose
//! CAS decides double taps and racing approvers — the losers are told who won.

use teloxide::prelude::*;

use super::Bridge;
use super::callback::{Callback, Verb};
use super::handlers::Prompt;
use super::render::cut;
use super::render_more::{action_of, action_revision, row_of};
use crate::store::actions::{Actor, ApproveOutcome, RejectOutcome, Resolution};
use crate::store::boards::{Annotate, AnnotationKind, Handled, Refusal, Source};
use crate::store::questions::ReplyKind;
use crate::store::short_id;

impl Bridge {
    pub(crate) async fn tap_row(
        &self,
        q: &CallbackQuery,
        chat_id: i64,
        thread: Option<i32>,
        _message_id: i32,
        cb: &Callback,
        who: &str,
    ) {
        let row = match row_of(&self.store, &cb.id).await {
            Ok(Some((_, r))) => r,
            Ok(None) => return self.toast(q, "That row no longer exists.").await,
            Err(e) => {
                tracing::error!(error = %e, "store failed on a row tap");
                return self
                    .toast(q, "Something went wrong on the host; try again.")
                    .await;
            }
        };
        if row.action_version != cb.revision {
            self.redraw_quiet("row", &cb.id).await;
            return self
                .toast(q, "The step changed — see the updated message.")
                .await;
        }
        match cb.verb {
            Verb::Answer => {
                self.toast(q, "Send your answer as a reply.").await;
                let text = format!("💬 Answer #{}: reply to this message.", short_id(&cb.id));
                self.prompt(
                    chat_id,
                    thread,
                    &text,
                    "your answer",
                    Prompt::RowAnswer { id: cb.id.clone() },
                )
                .await;
            }
            Verb::Decline => {
                let text = self
                    .annotate_row(
                        &cb.id,
                        "declined in Telegram",
                        who,
                        AnnotationKind::Decline,
                        Some(cb.revision),
                    )
                    .await;
                self.toast(q, &text).await;
            }
            Verb::Handled => {
                let Ok(Some((board, r))) = row_of(&self.store, &cb.id).await else {
                    return self.toast(q, "That row no longer exists.").await;
                };
                let h = Handled {
                    board: board.id.clone(),
                    project: None,
                    label: r.label.clone(),
                    source: Source::Chat,
                    by: who.to_string(),
                    expected_revision: None,
                };
                let text = match self.store.mark_handled(&h).await {
                    Ok(Ok(_)) => {
                        "Marked handled 👍 — the agent will record the outcome.".to_string()
                    }
                    Ok(Err(Refusal::NotBlocked { status })) => {
                        format!("The row is no longer blocked (now {}).", status.as_str())
                    }
                    Ok(Err(r)) => format!("Not recorded: {}", row_refusal(&r)),
                    Err(e) => {
                        tracing::error!(error = %e, "store failed on mark handled");
                        "Something went wrong on the host; try again.".to_string()
                    }
                };
                self.toast(q, &text).await;
            }
            _ => self.toast(q, "That button doesn't apply to a row.").await,
        }
        self.redraw_quiet("row", &cb.id).await;
    }

    /// Annotate a row through the chat channel; returns what to tell the user.
    async fn annotate_row(
        &self,
        id: &str,
        text: &str,
        who: &str,
        kind: AnnotationKind,
        step: Option<i64>,
    ) -> String {
        let Ok(Some((board, r))) = row_of(&self.store, id).await else {
            return "That row no longer exists.".to_string();
        };
        let a = Annotate {
            board: board.id.clone(),
            project: None,
            label: r.label.clone(),
            text: text.to_string(),
            kind,
            source: Source::Chat,
            by: who.to_string(),
            expected_revision: None,
            action_version: step,
        };
        match self.store.annotate(&a).await {
            Ok(Ok(_)) => match kind {
                AnnotationKind::Clarify => format!("Correction recorded for #{}.", short_id(id)),
                AnnotationKind::Decline => "Declined.".to_string(),
                AnnotationKind::Answer => format!("Recorded for #{}.", short_id(id)),
            },
            Ok(Err(r)) => row_refusal(&r),
            Err(crate::store::Error::Invalid(m)) => format!("Not recorded: {m}"),
            Err(e) => {
                tracing::error!(error = %e, "store failed on a row annotation");
                "Something went wrong on the host; nothing was recorded. Try again.".to_string()
            }
        }
    }

    pub(crate) async fn answer_row(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        id: &str,
        text: &str,
        who: &str,
        kind: ReplyKind,
    ) {
        let kind = match kind {
            ReplyKind::Answer => AnnotationKind::Answer,
            ReplyKind::Clarify => AnnotationKind::Clarify,
            ReplyKind::Decline => AnnotationKind::Decline,
        };
        let said = self.annotate_row(id, text, who, kind, None).await;
        self.say(chat_id, thread, &said).await;
        self.redraw_quiet("row", id).await;
    }

    pub(crate) async fn tap_action(
        &self,
        q: &CallbackQuery,
        chat_id: i64,
        thread: Option<i32>,
        _message_id: i32,
        cb: &Callback,
        who: &str,
    ) {
        let action = match action_of(&self.store, &cb.id).await {
            Ok(Some(a)) => a,
            Ok(None) => return self.toast(q, "That action no longer exists.").await,
            Err(e) => {
                tracing::error!(error = %e, "store failed on an action tap");
                return self
                    .toast(q, "Something went wrong on the host; try again.")
                    .await;
            }
        };
        let actor = Actor {
            name: who,
            channel: "chat",
        };
        let stale = action_revision(&action) != cb.revision;
        let text = match cb.verb {
            Verb::Approve if stale => {
                "The arguments changed since this message was drawn — see the updated message."
                    .to_string()
            }
            Verb::Approve => match self.store.approve(&cb.id, actor, None).await {
                Ok(o) => approve_words(&o, who),
                Err(e) => format!("Not approved: {e}"),
            },
            Verb::Reject => match self
                .store
                .reject(&cb.id, actor, &format!("rejected in Telegram by {who}"))
                .await
            {
                Ok(RejectOutcome::Rejected { .. }) => "Rejected 🚫".to_string(),
                Ok(RejectOutcome::AlreadyDecided { action }) => format!(
                    "Already {} by {}.",
                    action.status,
                    action.decided_by.as_deref().unwrap_or("someone")
                ),
                Ok(RejectOutcome::Expired { .. }) => "It expired before your decision.".to_string(),
                Err(e) => format!("Not rejected: {e}"),
            },
            Verb::Edit => {
                let prompt = format!(
                    "✏️ Edit #{}: reply with a JSON patch like {{\"to\": \"x@example.com\"}} or `key: value` lines. It is checked first, then counts as your approval.",
                    short_id(&cb.id)
                );
                self.prompt(
                    chat_id,
                    thread,
                    &prompt,
                    "key: value",
                    Prompt::ActionEdit { id: cb.id.clone() },
                )
                .await;
                "Send the changes as a reply.".to_string()
            }
            Verb::MarkExecuted | Verb::MarkFailed | Verb::Retry => {
                let (res, done) = match cb.verb {
                    Verb::MarkExecuted => (Resolution::Executed, "Marked executed."),
                    Verb::MarkFailed => (Resolution::Failed, "Marked failed."),
                    _ => (
                        Resolution::Retry,
                        "Approved for one more run (at-least-once, your call).",
                    ),
                };
                match self.store.resolve_unknown(&cb.id, actor, res).await {
                    Ok(Ok(_)) => done.to_string(),
                    Ok(Err(a)) => format!("Nothing to resolve: it is {} now.", a.status),
                    Err(e) => format!("Not recorded: {e}"),
                }
            }
            Verb::Run => self.run_stranded(&action, who),
            Verb::DoneByHand | Verb::NotRun => {
                self.settle_by_hand(&action, who, cb.verb == Verb::DoneByHand)
                    .await
            }
            _ => "That button doesn't apply to an action.".to_string(),
        };
        self.toast(q, &text).await;
        self.redraw_quiet("action", &cb.id).await;
    }

    pub(crate) async fn edit_action(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        id: &str,
        text: &str,
        who: &str,
    ) {
        let patch = match patch_json(text) {
            Ok(p) => p,
            Err(msg) => {
                return self
                    .say(chat_id, thread, &format!("Not applied: {msg}"))
                    .await;
            }
        };
        let actor = Actor {
            name: who,
            channel: "chat",
        };
        let said = match self.store.approve(id, actor, Some(&patch)).await {
            Ok(o) => approve_words(&o, who),
            Err(e) => format!("Not applied, nothing changed: {e}"),
        };
        self.say(chat_id, thread, &said).await;
        self.redraw_quiet("action", id).await;
    }

    pub(crate) async fn find_row(&self, sid: &str) -> Option<String> {
        self.store.find_row_id(sid).await.ok().flatten()
    }

    pub(crate) async fn list_more(&self, chat_id: i64) -> Vec<String> {
        let mut lines = Vec::new();
        for id in self.store.blocked_row_ids().await.unwrap_or_default() {
            if let Ok(Some((b, r))) = row_of(&self.store, &id).await
                && self
                    .config
                    .route(&b.project, &b.agent, None)
                    .is_some_and(|t| t.chat_id == chat_id)
            {
                lines.push(format!(
                    "🧱 #{} {} — {}",
                    short_id(&id),
                    cut(&b.title, 40),
                    cut(&r.label, 40)
                ));
            }
        }
        let now = self.store.now();
        for a in self
            .store
            .list_action_summaries(None, None)
            .await
            .unwrap_or_default()
        {
            let st = a.effective_status(now);
            let live = matches!(
                st,
                crate::store::actions::Status::Pending | crate::store::actions::Status::Unknown
            );
            if live
                && self
                    .config
                    .route(&a.project, &a.proposer, Some(&a.kind))
                    .is_some_and(|t| t.chat_id == chat_id)
            {
                lines.push(format!(
                    "⚠️ #{} {}: {} ({st})",
                    a.short_id(),
                    a.kind,
                    cut(&a.summary, 60)
                ));
            }
        }
        lines
    }
}

fn row_refusal(r: &Refusal) -> String {
    match r {
        Refusal::UnreadAnswer {
            annotation,
            source,
            by,
            ..
        } => {
            let place = match source {
                Some(Source::Inbox) => "An Inbox answer",
                _ => "An answer",
            };
            let by = by
                .as_deref()
                .filter(|b| !b.is_empty())
                .map(|b| format!(" (by {b})"))
                .unwrap_or_default();
            format!(
                "{place} is already waiting for the agent{by}: «{}». Yours was not recorded.",
                cut(annotation, 400)
            )
        }
        Refusal::Stale { .. } => "The step changed — see the updated message.".to_string(),
        Refusal::NotBlocked { status } => {
            format!("The row is no longer blocked (now {}).", status.as_str())
        }
        Refusal::Archived => "The board is archived.".to_string(),
        Refusal::Empty => "The answer is empty: write some text.".to_string(),
        Refusal::NotFound { .. } => "That row no longer exists.".to_string(),
        other => format!("Not recorded ({other:?})."),
    }
}

fn approve_words(o: &ApproveOutcome, who: &str) -> String {
    match o {
        ApproveOutcome::Approved { .. } => "Approved ✅".to_string(),
        ApproveOutcome::ApprovalAdded { action } => format!(
            "Approval recorded: {} of {}.",
            action.approvals, action.approvals_required
        ),
        ApproveOutcome::AlreadyApprovedBy { action } => format!(
            "You ({who}) already approved: {} of {}.",
            action.approvals, action.approvals_required
        ),
        ApproveOutcome::AlreadyDecided {
            status, decided_by, ..
        } => format!(
            "Already {status} by {}.",
            decided_by.as_deref().unwrap_or("someone")
        ),
        ApproveOutcome::Expired { .. } => "It expired before your approval.".to_string(),
        ApproveOutcome::PatchRefused { reason, .. } => {
            format!("Edit refused, nothing changed: {reason}")
        }
    }
}

/// A patch from chat: a JSON object as is, or `key: value` lines (values
/// parsed as JSON when they parse, else taken as strings).
pub(crate) fn patch_json(text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.starts_with('{') {
        return serde_json::from_str::<serde_json::Value>(t)
            .map(|_| t.to_string())
            .map_err(|e| format!("that is not valid JSON ({e})"));
    }
    let mut map = serde_json::Map::new();
    for line in t.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("`{line}` is not `key: value`"));
        };
        let v = v.trim();
        let value =
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        map.insert(k.trim().to_string(), value);
    }
    if map.is_empty() {
        return Err("the patch is empty".into());
    }
    Ok(serde_json::Value::Object(map).to_string())
}

#[cfg(test)]
mod tests {
    use super::patch_json;

    #[test]
    fn patches_from_json_or_lines() {
        assert_eq!(patch_json("{\"a\": 1}").unwrap(), "{\"a\": 1}");
        let p: serde_json::Value =
            serde_json::from_str(&patch_json("to: x@y.z\ncount: 3").unwrap()).unwrap();
        assert_eq!(p["to"], "x@y.z");
        assert_eq!(p["count"], 3);
        assert!(patch_json("no colon here").is_err());
        assert!(patch_json("{broken").is_err());
        assert!(patch_json("  ").is_err());
    }
}
