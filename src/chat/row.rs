//! A blocked board row in chat: its message, its taps (Answer, Decline,
//! Handled), text answers written as annotations, and refusals in words.

use super::Bridge;
use super::callback::{Callback, Item, Verb};
use super::dispatch::Prompt;
use super::network::{Ask, Outcome, Tapper};
use super::text::{cut, esc, quote};
use super::view::{Meta, View};
use crate::ops::{Local, Result};
use crate::store::boards::{
    Annotate, AnnotationKind, Board, Channel, Handled, Refusal, Row, RowStatus,
};
use crate::store::short_id;

/// The board and row behind a row id.
pub(crate) async fn row_of(ops: &Local, id: &str) -> Result<Option<(Board, Row)>> {
    ops.row_of(id).await
}

pub(crate) async fn row_meta(ops: &Local, id: &str) -> Result<Option<Meta>> {
    Ok(row_of(ops, id).await?.map(|(b, r)| Meta {
        quiet: false,
        live: r.status == RowStatus::Blocked && b.archived_at.is_none(),
        project: b.project,
        agent: b.agent,
        session: b.session,
        action_kind: None,
    }))
}

pub(crate) async fn row_view(ops: &Local, id: &str) -> Result<Option<View>> {
    let Some((b, r)) = row_of(ops, id).await? else {
        return Ok(None);
    };
    let mut t = format!(
        "🧱 <b>{}</b> — {}",
        esc(&cut(&b.title, 120)),
        esc(&cut(&r.label, 120))
    );
    if !r.next_step.is_empty() {
        t.push_str(&format!("\n<b>Needs:</b> {}", esc(&cut(&r.next_step, 500))));
    }
    if !r.note.is_empty() {
        t.push_str(&format!("\n{}", esc(&cut(&r.note, 500))));
    }
    if !r.impact.is_empty() {
        t.push_str(&format!("\n<i>Impact:</i> {}", esc(&cut(&r.impact, 300))));
    }
    for o in r.options.iter().take(6) {
        let star = if o.recommended { " ⭐" } else { "" };
        t.push_str(&format!(
            "\n• {}{star}{}",
            esc(&cut(&o.label, 60)),
            if o.detail.is_empty() {
                String::new()
            } else {
                format!(" — {}", esc(&cut(&o.detail, 120)))
            }
        ));
    }
    t.push_str(&quote(&r.context, 1500));
    let mut tags = vec![format!("#{}", short_id(&r.id))];
    if !b.project.is_empty() {
        tags.push(esc(&b.project));
    }
    t.push_str(&format!("\n<i>{}</i>", tags.join(" · ")));
    t.push_str(&response_lines(&r));
    let mut buttons = Vec::new();
    if r.status == RowStatus::Blocked && b.archived_at.is_none() {
        let cb = |verb| Callback {
            item: Item::Row,
            id: r.id.clone(),
            revision: r.action_version,
            verb,
        };
        buttons.push(vec![
            ("💬 Answer".to_string(), cb(Verb::Answer)),
            ("👍 Mark handled".to_string(), cb(Verb::Handled)),
            ("🚫 Decline".to_string(), cb(Verb::Decline)),
        ]);
        t.push_str("\n\n<i>Reply to this message to answer in your own words.</i>");
    } else {
        t.push_str(&format!("\n\n☑️ Now {}", r.status.as_str()));
        if !r.outcome.is_empty() {
            t.push_str(&format!(": {}", esc(&cut(&r.outcome, 300))));
        }
    }
    Ok(Some(View {
        text: t,
        buttons,
        attachment: None,
    }))
}

/// What a human already did on the row: their answer (and whether the
/// agent picked it up), and a "handled" mark.
fn response_lines(r: &Row) -> String {
    let mut out = String::new();
    if let (Some(text), Some(src)) = (&r.response.annotation, r.response.annotation_source) {
        let what = match r.response.annotation_kind.unwrap_or_default() {
            AnnotationKind::Answer => "Answered",
            AnnotationKind::Clarify => "Clarified",
            AnnotationKind::Decline => "Declined",
        };
        let state = if r.response.annotation_seen_at.is_some() {
            "picked up by the agent"
        } else {
            "not yet picked up"
        };
        let by = r
            .response
            .annotated_by
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" by {}", esc(s)))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n\n✅ {what} {}{by} ({state}): «{}»",
            super::network::door(src, r.response.annotated_by.as_deref().unwrap_or("")),
            esc(&cut(text, 500))
        ));
    }
    if r.response.handled_at.is_some() {
        let by = r
            .response
            .handled_by
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" by {}", esc(s)))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n👍 Marked handled{by} — waiting for the agent's outcome"
        ));
    }
    out
}

impl Bridge {
    /// What a tap on a blocked row's button comes to.
    pub(crate) async fn tap_row(&self, cb: &Callback, tapper: Tapper<'_>) -> Outcome {
        let who = tapper.who;
        let row = match row_of(&self.ops, &cb.id).await {
            Ok(Some((_, r))) => r,
            Ok(None) => return Outcome::only("That row no longer exists."),
            Err(e) => {
                tracing::error!(error = %e, "store failed on a row tap");
                return Outcome::only("Something went wrong on the host; try again.");
            }
        };
        if row.action_version != cb.revision {
            return Outcome::said("The step changed — see the updated message.");
        }
        match cb.verb {
            Verb::Answer => {
                let text = format!("💬 Answer #{}: reply to this message.", short_id(&cb.id));
                Outcome {
                    redraw: true,
                    ..Outcome::asking(
                        "Send your answer as a reply.",
                        Ask {
                            text,
                            placeholder: "your answer",
                            prompt: Prompt::RowAnswer { id: cb.id.clone() },
                        },
                    )
                }
            }
            Verb::Decline => {
                let why = format!("declined in {}", tapper.network.name());
                let text = self
                    .annotate_row(
                        &cb.id,
                        &why,
                        who,
                        AnnotationKind::Decline,
                        Some(cb.revision),
                    )
                    .await;
                Outcome::said(text)
            }
            Verb::Handled => {
                let Ok(Some((board, r))) = row_of(&self.ops, &cb.id).await else {
                    return Outcome::only("That row no longer exists.");
                };
                let h = Handled {
                    board: board.id.clone(),
                    project: None,
                    label: r.label.clone(),
                    source: Channel::Chat,
                    by: who.to_string(),
                    expected_revision: None,
                };
                let text = match self.calls().mark_handled(&h, false).await {
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
                Outcome::said(text)
            }
            _ => Outcome::said("That button doesn't apply to a row."),
        }
    }

    /// Annotate a row through the chat channel; returns what to tell the user.
    pub(super) async fn annotate_row(
        &self,
        id: &str,
        text: &str,
        who: &str,
        kind: AnnotationKind,
        step: Option<i64>,
    ) -> String {
        let Ok(Some((board, r))) = row_of(&self.ops, id).await else {
            return "That row no longer exists.".to_string();
        };
        let a = Annotate {
            board: board.id.clone(),
            project: None,
            label: r.label.clone(),
            text: text.to_string(),
            kind,
            source: Channel::Chat,
            by: who.to_string(),
            expected_revision: None,
            action_version: step,
        };
        match self.calls().annotate_row(&a).await {
            Ok(Ok(_)) => match kind {
                AnnotationKind::Clarify => format!("Correction recorded for #{}.", short_id(id)),
                AnnotationKind::Decline => "Declined.".to_string(),
                AnnotationKind::Answer => format!("Recorded for #{}.", short_id(id)),
            },
            Ok(Err(r)) => row_refusal(&r),
            Err(crate::ops::Error::Invalid { message: m }) => format!("Not recorded: {m}"),
            Err(e) => {
                tracing::error!(error = %e, "store failed on a row annotation");
                "Something went wrong on the host; nothing was recorded. Try again.".to_string()
            }
        }
    }

    pub(crate) async fn find_row(&self, sid: &str) -> Option<String> {
        self.ops.find_row_id(sid).await.ok().flatten()
    }
}

pub(super) fn row_refusal(r: &Refusal) -> String {
    match r {
        Refusal::UnreadAnswer {
            annotation,
            source,
            by,
            ..
        } => {
            let place = match source {
                Some(Channel::Inbox) => "An Inbox answer",
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
