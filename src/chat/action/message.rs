//! An action's chat message: what it shows (kind, summary, arguments,
//! status, outcome, the grant a tap would give) and which buttons it offers.

use crate::chat::callback::{Callback, Item, Verb};
use crate::chat::text::{cut, esc};
use crate::chat::view::{Attachment, MAX_TEXT, Meta, View};
use crate::config::Config;
use crate::ops::claude::preview::preview;
use crate::ops::{Local, Ops, Result};
use crate::store::actions::{
    Action, Status as ActionStatus, escalation_note, expiry_note, timed_out,
};
use crate::store::grants::{offer as grant_pattern, pattern, prompt_cwd, prompt_of, prompt_tool};

/// An action, or `None` when it is gone (purged).
pub(crate) async fn action_of(ops: &Local, id: &str) -> Result<Option<Action>> {
    match Ops::Local(ops.clone()).get_action(id).await {
        Ok(a) => Ok(Some(a)),
        Err(crate::ops::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The "revision" an action button carries: a short hash of the arguments
/// it shows, so a tap on arguments that were edited since is refused.
pub(crate) fn action_revision(a: &Action) -> i64 {
    let fp = crate::store::actions::codec::fingerprint(&a.kind, &a.summary, &a.effective_args);
    i64::from_str_radix(&fp[..8], 16).unwrap_or(0)
}

pub(crate) async fn action_meta(ops: &Local, id: &str) -> Result<Option<Meta>> {
    let now = ops.now();
    let Some(a) = action_of(ops, id).await? else {
        return Ok(None);
    };
    let status = a.effective_status(now);
    Ok(Some(Meta {
        quiet: granted(ops, &a, status).await?,
        live: matches!(status, ActionStatus::Pending | ActionStatus::Unknown),
        project: a.project.clone(),
        agent: a.proposer.clone(),
        session: a.session.clone(),
        action_kind: Some(a.kind.clone()),
    }))
}

/// Whether a grant decided the prompt `a`, or will in a moment: its hook
/// approves it as `grant:<id>` right after proposing it, and the follower
/// may read it in between. Either way nobody needs a message for it.
async fn granted(ops: &Local, a: &Action, status: ActionStatus) -> Result<bool> {
    if a.decided_by
        .as_deref()
        .is_some_and(|d| d.starts_with("grant:"))
    {
        return Ok(true);
    }
    let Some((agent, tool)) = prompt_of(a).filter(|_| status == ActionStatus::Pending) else {
        return Ok(false);
    };
    let cwd = prompt_cwd(a).unwrap_or_default();
    Ok(ops
        .grant_covering(agent, &a.session, &a.project, tool, &a.effective_args, cwd)
        .await?
        .is_some())
}

pub(crate) async fn action_view(ops: &Local, config: &Config, id: &str) -> Result<Option<View>> {
    let Some(a) = action_of(ops, id).await? else {
        return Ok(None);
    };
    let now = ops.now();
    let status = a.effective_status(now);
    let shown = a.display_args();
    // The whole of what is decided: a prompt's command or diff, else the
    // arguments. Never cut: a message too long for it carries a file.
    let (body, ext) = match prompt_tool(&a).and_then(|t| Some((t, preview(t, &shown)?))) {
        Some(("Bash", p)) => (p, "sh"),
        Some((_, p)) => (p, "diff"),
        None => (
            serde_json::to_string_pretty(&shown).unwrap_or_default(),
            "json",
        ),
    };
    let summary = cut(&a.summary, 500);
    // A summary the proposer (or the hook) cut says where the rest is.
    let rest = if summary.ends_with('…') {
        " <i>(cut here: the whole text is below)</i>"
    } else {
        ""
    };
    let head = format!(
        "⚠️ <b>Approve action: {}</b>\n{}",
        esc(&cut(&a.kind, 100)),
        esc(&summary),
    );
    let t = details(&a, status);
    let buttons = buttons(&a, status);
    let inline = format!("{head}{rest}\n<pre>{}</pre>{t}", esc(&body));
    if inline.chars().count() <= MAX_TEXT {
        return Ok(Some(View {
            text: inline,
            buttons,
            attachment: None,
        }));
    }
    let name = format!("{}.{ext}", a.short_id());
    let rest = if rest.is_empty() {
        ""
    } else {
        " <i>(cut here: the whole text is in the file)</i>"
    };
    let lines = match body.lines().count() {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    let note = format!(
        "📎 Too long for one message: the whole text ({lines}) is in the file \
         <code>{name}</code> sent just before this message, and whole in the Inbox. \
         Read it before deciding."
    );
    let missing = format!(
        "📎 Too long for one message, and the file with the whole text ({lines}, \
         <code>{name}</code>) could not be sent: read it in {} before deciding. \
         Approve there; Reject works here too.",
        inbox(config)
    );
    Ok(Some(View {
        text: format!("{head}{rest}\n{note}{t}"),
        buttons,
        attachment: Some(Attachment {
            name,
            body,
            missing: format!("{head}{rest}\n{missing}{t}"),
        }),
    }))
}

/// The lines under an action's body: what happens if nobody decides, its
/// escalation, quorum progress, tags, the grant a tap would give, and
/// where it stands.
fn details(a: &Action, status: ActionStatus) -> String {
    let mut t = String::new();
    // What happens if nobody decides, and when: only while it can happen.
    if let Some(note) = expiry_note(a).filter(|_| status == ActionStatus::Pending) {
        t.push_str(&format!("\n⌛ {note}"));
    }
    // Where it went while nobody decided (an escalation chain's steps).
    if let Some(note) = escalation_note(a) {
        t.push_str(&format!("\n📣 {}", esc(&note)));
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
    if status == ActionStatus::Pending
        && let Some(offer) = grant_offer(a)
    {
        t.push_str(&format!("\n\n{offer}"));
    }
    let line = status_line(a, status);
    t.push_str(&format!("\n\n{line}"));
    t
}

/// Where a person reads an item whole: the Inbox, by its address when the
/// config says it.
fn inbox(config: &Config) -> String {
    match config.http.public_url.as_deref().map(str::trim) {
        Some(u) if !u.is_empty() => format!("the Inbox ({}/inbox)", esc(u.trim_end_matches('/'))),
        _ => "the Inbox (<code>handoff inbox-link</code> on the host opens it)".to_string(),
    }
}

/// What the grant buttons save, shown before anyone taps them: the exact rule.
fn grant_offer(a: &Action) -> Option<String> {
    prompt_tool(a)?;
    let Some((tool, p)) = grant_pattern(a) else {
        return Some("🔐 No grant is offered for this tool: approve once or reject.".into());
    };
    let rule = esc(&pattern::shown(&tool, &p));
    let session = if a.session.is_empty() {
        "(this prompt carried no session)".to_string()
    } else {
        format!("session <code>{}</code>", esc(&cut(&a.session, 60)))
    };
    // Claude Code takes the rule back from the hook's answer; Codex refuses
    // it there (`updatedPermissions`), so its hook appends the rule to
    // Codex's own rules file instead, when a command prefix can say it.
    let settings = match prompt_of(a) {
        Some((crate::store::grants::CLAUDE, _)) => {
            " and in Claude Code's local settings".to_string()
        }
        Some((crate::store::grants::CODEX, _)) => match pattern::codex_prefix_rule(&tool, &p) {
            Some(line) => format!(
                ", and adds <code>{}</code> to Codex's rules file (<code>rules/default.rules</code> in its home, <code>~/.codex</code> by default)",
                esc(&line)
            ),
            None => {
                " only (not a command prefix: Codex's own rules file is left alone)".to_string()
            }
        },
        _ => String::new(),
    };
    let place = match prompt_cwd(a) {
        Some(cwd) => format!(
            "in <code>{}</code> and below",
            esc(&cut(&pattern::here(cwd), 120))
        ),
        None => "anywhere in it (this prompt named no folder)".to_string(),
    };
    Some(format!(
        "🔐 <b>This session</b> saves <code>{rule}</code> for {session}.\n\
         <b>For 1 h</b> saves it for project <code>{}</code>, {place}, for one hour.\n\
         <b>Always here</b> saves it for project <code>{}</code>, {place}, until revoked{settings}.\n\
         It never covers another tool, a wider command, or one chained, piped or redirected. /grants lists and revokes grants.",
        esc(&a.project),
        esc(&a.project)
    ))
}

/// The line under an action's arguments: where it stands, and who decided.
fn status_line(a: &Action, status: ActionStatus) -> String {
    let who = a
        .decided_by
        .as_deref()
        .map(|s| format!(" by {}", esc(s)))
        .unwrap_or_default();
    match status {
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
        ActionStatus::Rejected if a.decided_by.as_deref() == Some(crate::ops::claude::TERMINAL) => {
            "⌨️ Answered at the terminal: the agent stopped waiting for this decision".to_string()
        }
        // A prompt's hook denies when its time is up, whichever of the
        // hook (`timeout`) and the sweep (`expiry`) wrote it down first.
        ActionStatus::Rejected | ActionStatus::Expired
            if prompt_tool(a).is_some() && (timed_out(a) || status == ActionStatus::Expired) =>
        {
            "⌛ Denied automatically: nobody answered in time (fail closed)".to_string()
        }
        ActionStatus::Rejected if timed_out(a) => {
            "⌛ Rejected automatically: nobody decided in time".to_string()
        }
        ActionStatus::Rejected => format!(
            "🚫 Rejected{who}{}",
            a.reason
                .as_deref()
                .map(|r| format!(": {}", esc(&cut(r, 300))))
                .unwrap_or_default()
        ),
        ActionStatus::Expired => "⌛ Expired: nobody decided in time".to_string(),
    }
}

/// The buttons an action offers in `status` (none once settled).
fn buttons(a: &Action, status: ActionStatus) -> Vec<Vec<(String, Callback)>> {
    let cb = |verb| Callback {
        item: Item::Action,
        id: a.id.clone(),
        revision: action_revision(a),
        verb,
    };
    match status {
        ActionStatus::Pending if prompt_tool(a).is_some() => {
            let mut first = vec![("✅ This once".to_string(), cb(Verb::Approve))];
            let mut grants = Vec::new();
            if grant_pattern(a).is_some() {
                if !a.session.is_empty() {
                    first.push(("🔁 This session".to_string(), cb(Verb::ApproveSession)));
                }
                grants.push(("⏱ For 1 h".to_string(), cb(Verb::ApproveHour)));
                grants.push(("♾ Always here".to_string(), cb(Verb::ApproveAlways)));
            }
            vec![
                first,
                grants,
                vec![
                    ("🚫 Reject".to_string(), cb(Verb::Reject)),
                    ("✏️ Edit".to_string(), cb(Verb::Edit)),
                ],
            ]
        }
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
    }
}

fn short_result(r: &serde_json::Value) -> String {
    match r {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::actions::{Actor, NewAction};

    #[tokio::test]
    pub(super) async fn an_approved_exec_action_says_how_it_runs_if_its_proposer_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let ops = Local::open_for_test(&dir.path().join("h.db")).await;
        let doors = Ops::Local(ops.clone());
        let mut ids = Vec::new();
        for exec in [Some(vec!["./send.sh".to_string()]), None] {
            let n = NewAction {
                kind: "email.send".into(),
                summary: "send".into(),
                args: "{}".into(),
                exec,
                ..NewAction::default()
            };
            let id = doors.propose(&n).await.unwrap().action.id;
            doors.approve(&id, Actor::cli("alice"), None).await.unwrap();
            ids.push(id);
        }
        let config = Config::default();
        let with = action_view(&ops, &config, &ids[0]).await.unwrap().unwrap();
        assert!(with.text.contains("handoff recover"), "{}", with.text);
        let without = action_view(&ops, &config, &ids[1]).await.unwrap().unwrap();
        assert!(
            without.text.contains("waiting for the executor"),
            "{}",
            without.text
        );
        assert!(!without.text.contains("handoff recover"));
    }
}
