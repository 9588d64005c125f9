//! Rendering of blocked rows and actions (see `render.rs` for questions).

use super::View;
use super::callback::{Callback, Item, Verb};
use super::render::{Meta, cut, esc};
use crate::clock::format_rfc3339;
use crate::config::Config;
use crate::store::actions::{Action, Status as ActionStatus};
use crate::store::boards::{AnnotationKind, Board, Row, RowStatus, Source};
use crate::store::{Result, Store, short_id};

/// The board and row behind a row id.
pub(crate) async fn row_of(store: &Store, id: &str) -> Result<Option<(Board, Row)>> {
    let Some((board_id, label)) = store.row_locator(id).await? else {
        return Ok(None);
    };
    Ok(match store.board_get(&board_id, None).await? {
        Ok(full) => full
            .rows
            .iter()
            .find(|r| r.label == label)
            .cloned()
            .map(|r| (full.board, r)),
        Err(_) => None,
    })
}

/// An action, or `None` when it is gone (purged).
pub(crate) async fn action_of(store: &Store, id: &str) -> Result<Option<Action>> {
    match store.get_action(id).await {
        Ok(a) => Ok(Some(a)),
        Err(crate::store::actions::Error::NotFound(_)) => Ok(None),
        Err(crate::store::actions::Error::Store(e)) => Err(e),
        Err(e) => Err(crate::store::Error::Invalid(e.to_string())),
    }
}

/// The "revision" an action button carries: a short hash of the arguments
/// it shows, so a tap on arguments that were edited since is refused.
pub(crate) fn action_revision(a: &Action) -> i64 {
    let fp = crate::store::actions::codec::fingerprint(&a.kind, &a.summary, &a.effective_args);
    i64::from_str_radix(&fp[..8], 16).unwrap_or(0)
}

pub(crate) async fn row_meta(store: &Store, id: &str) -> Result<Option<Meta>> {
    Ok(row_of(store, id).await?.map(|(b, r)| Meta {
        live: r.status == RowStatus::Blocked && b.archived_at.is_none(),
        project: b.project,
        agent: b.agent,
        action_kind: None,
    }))
}

pub(crate) async fn action_meta(store: &Store, id: &str) -> Result<Option<Meta>> {
    let now = store.now();
    Ok(action_of(store, id).await?.map(|a| Meta {
        live: matches!(
            a.effective_status(now),
            ActionStatus::Pending | ActionStatus::Unknown
        ),
        project: a.project.clone(),
        agent: a.proposer.clone(),
        action_kind: Some(a.kind.clone()),
    }))
}

fn door(s: Source) -> &'static str {
    match s {
        Source::Inbox => "in the Inbox",
        Source::Chat => "in Telegram",
    }
}

pub(crate) async fn row_view(store: &Store, id: &str) -> Result<Option<View>> {
    let Some((b, r)) = row_of(store, id).await? else {
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
    if !r.context.is_empty() {
        t.push_str(&format!(
            "\n<blockquote expandable>{}</blockquote>",
            esc(&cut(&r.context, 1500))
        ));
    }
    let mut tags = vec![format!("#{}", short_id(&r.id))];
    if !b.project.is_empty() {
        tags.push(esc(&b.project));
    }
    t.push_str(&format!("\n<i>{}</i>", tags.join(" · ")));
    if let (Some(text), Some(src)) = (&r.annotation, r.annotation_source) {
        let what = match r.annotation_kind.unwrap_or_default() {
            AnnotationKind::Answer => "Answered",
            AnnotationKind::Clarify => "Clarified",
            AnnotationKind::Decline => "Declined",
        };
        let state = if r.annotation_seen_at.is_some() {
            "picked up by the agent"
        } else {
            "not yet picked up"
        };
        let by = r
            .annotated_by
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" by {}", esc(s)))
            .unwrap_or_default();
        t.push_str(&format!(
            "\n\n✅ {what} {}{by} ({state}): «{}»",
            door(src),
            esc(&cut(text, 500))
        ));
    }
    if r.handled_at.is_some() {
        let by = r
            .handled_by
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" by {}", esc(s)))
            .unwrap_or_default();
        t.push_str(&format!(
            "\n👍 Marked handled{by} — waiting for the agent's outcome"
        ));
    }
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
    Ok(Some(View { text: t, buttons }))
}

pub(crate) async fn action_view(store: &Store, _config: &Config, id: &str) -> Result<Option<View>> {
    let Some(a) = action_of(store, id).await? else {
        return Ok(None);
    };
    let now = store.now();
    let status = a.effective_status(now);
    let args = serde_json::to_string_pretty(&a.display_args()).unwrap_or_default();
    let mut t = format!(
        "⚠️ <b>Approve action: {}</b>\n{}\n<pre>{}</pre>",
        esc(&cut(&a.kind, 100)),
        esc(&cut(&a.summary, 500)),
        esc(&cut(&args, 1800))
    );
    if let Some(exp) = a.expires_at {
        t.push_str(&format!("\n⌛ Expires {}", format_rfc3339(exp)));
    }
    if a.approvals_required > 1 || a.approvals > 0 {
        t.push_str(&format!(
            "\n👥 {} of {} approvals",
            a.approvals, a.approvals_required
        ));
    }
    let mut tags = vec![format!("#{}", a.short_id())];
    if !a.project.is_empty() {
        tags.push(esc(&a.project));
    }
    if !a.proposer.is_empty() {
        tags.push(esc(&a.proposer));
    }
    t.push_str(&format!("\n<i>{}</i>", tags.join(" · ")));
    let who = a
        .decided_by
        .as_deref()
        .map(|s| format!(" by {}", esc(s)))
        .unwrap_or_default();
    let line = match status {
        ActionStatus::Pending => "⏸ Waiting for approval".to_string(),
        ActionStatus::Approved if a.exec.is_some() => format!(
            "✅ Approved{who} — waiting for its proposer to run it. If the proposer stopped, \
             an approver can run it on the host here (or <code>handoff recover</code> there), \
             or record that it was done by hand or will not run."
        ),
        ActionStatus::Approved => format!("✅ Approved{who} — waiting for the executor"),
        ActionStatus::Executing => format!("⏳ Approved{who} — executing"),
        ActionStatus::Executed => format!(
            "✔️ Executed{}",
            a.result
                .as_ref()
                .map(|r| format!(": {}", esc(&cut(&short_result(r), 300))))
                .unwrap_or_default()
        ),
        ActionStatus::Failed => format!(
            "❌ Failed{}",
            a.error
                .as_deref()
                .map(|e| format!(": {}", esc(&cut(e, 300))))
                .unwrap_or_default()
        ),
        ActionStatus::Unknown => {
            "❓ Outcome unknown: the executor stopped mid-run. Check what happened, then mark it."
                .to_string()
        }
        ActionStatus::Rejected => format!(
            "🚫 Rejected{who}{}",
            a.reason
                .as_deref()
                .map(|r| format!(": {}", esc(&cut(r, 300))))
                .unwrap_or_default()
        ),
        ActionStatus::Expired => "⌛ Expired: nobody decided in time".to_string(),
    };
    t.push_str(&format!("\n\n{line}"));
    let cb = |verb| Callback {
        item: Item::Action,
        id: a.id.clone(),
        revision: action_revision(&a),
        verb,
    };
    let buttons = match status {
        ActionStatus::Pending => vec![vec![
            ("✅ Approve".to_string(), cb(Verb::Approve)),
            ("🚫 Reject".to_string(), cb(Verb::Reject)),
            ("✏️ Edit".to_string(), cb(Verb::Edit)),
        ]],
        ActionStatus::Unknown => vec![vec![
            ("✔️ Mark executed".to_string(), cb(Verb::MarkExecuted)),
            ("❌ Mark failed".to_string(), cb(Verb::MarkFailed)),
            ("🔁 Retry".to_string(), cb(Verb::Retry)),
        ]],
        // Approved with a command nobody has claimed yet: if its proposer
        // stopped, it would wait forever. A tap races the proposer only
        // through the claim CAS, so at most one ever runs it.
        ActionStatus::Approved if a.exec.is_some() => vec![vec![
            ("▶️ Run now".to_string(), cb(Verb::Run)),
            ("✔️ Done by hand".to_string(), cb(Verb::DoneByHand)),
            ("⏹ Won't run".to_string(), cb(Verb::NotRun)),
        ]],
        _ => Vec::new(),
    };
    Ok(Some(View { text: t, buttons }))
}

fn short_result(r: &serde_json::Value) -> String {
    match r {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) async fn title(store: &Store, item: &str, id: &str) -> Option<String> {
    match item {
        "row" => row_of(store, id).await.ok().flatten().map(|(b, r)| {
            format!(
                "🧱 {} — {}",
                esc(&cut(&b.title, 60)),
                esc(&cut(&r.label, 60))
            )
        }),
        "action" => action_of(store, id)
            .await
            .ok()
            .flatten()
            .map(|a| format!("⚠️ {}: {}", esc(&a.kind), esc(&cut(&a.summary, 80)))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::actions::{Actor, NewAction};

    #[tokio::test]
    async fn an_approved_exec_action_says_how_it_runs_if_its_proposer_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("h.db")).await.unwrap();
        let mut ids = Vec::new();
        for exec in [Some(vec!["./send.sh".to_string()]), None] {
            let n = NewAction {
                kind: "email.send".into(),
                summary: "send".into(),
                args: "{}".into(),
                exec,
                ..NewAction::default()
            };
            let id = store.propose(&n).await.unwrap().action.id;
            store.approve(&id, Actor::cli("alice"), None).await.unwrap();
            ids.push(id);
        }
        let config = Config::default();
        let with = action_view(&store, &config, &ids[0])
            .await
            .unwrap()
            .unwrap();
        assert!(with.text.contains("handoff recover"), "{}", with.text);
        let without = action_view(&store, &config, &ids[1])
            .await
            .unwrap()
            .unwrap();
        assert!(
            without.text.contains("waiting for the executor"),
            "{}",
            without.text
        );
        assert!(!without.text.contains("handoff recover"));
    }
}
