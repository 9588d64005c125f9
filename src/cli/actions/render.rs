//! Text renderings of actions for people. Arguments always go through
//! [`Action::display_args`], so secrets never reach the terminal.

use crate::clock::format_rfc3339;
use crate::store::actions::{
    Action, ApproveOutcome, AuditEntry, Proposed, RecoverReport, RejectOutcome, Settled, Status,
};

use crate::ops::run::ExecReport;

fn t(ms: Option<i64>) -> String {
    ms.map(format_rfc3339).unwrap_or_else(|| "-".into())
}

/// One line per action.
pub(crate) fn list(actions: &[Action], now: i64) -> String {
    if actions.is_empty() {
        return "no actions\n".into();
    }
    actions
        .iter()
        .map(|a| {
            format!(
                "{}  {:<9} {:<16} {}  ({}/{} approvals)\n",
                a.short_id(),
                a.effective_status(now).as_str(),
                a.kind,
                a.summary,
                a.approvals,
                a.approvals_required
            )
        })
        .collect()
}

/// The full picture of one action.
pub(crate) fn action(a: &Action, now: i64) -> String {
    let mut s = format!(
        "action {} ({})\n  status:    {}\n  kind:      {}\n  summary:   {}\n  args:      {}\n",
        a.short_id(),
        a.id,
        a.effective_status(now),
        a.kind,
        a.summary,
        a.display_args()
    );
    if a.patch.is_some() {
        s += &format!("  proposed:  {}\n", a.redactor().redact(&a.args));
    }
    s += &format!(
        "  approvals: {}/{}\n  expires:   {}{}\n",
        a.approvals,
        a.approvals_required,
        t(a.expires_at),
        if a.expires_at.is_some() {
            format!(" (then {})", a.on_expire.as_str())
        } else {
            String::new()
        }
    );
    if let Some(by) = &a.decided_by {
        s += &format!("  decided:   by {by} at {}\n", t(a.decided_at));
    }
    if let Some(r) = &a.reason {
        s += &format!("  reason:    {r}\n");
    }
    if let Some(o) = &a.owner {
        s += &format!(
            "  executor:  {o} (lease until {}, attempt {})\n",
            t(a.lease_until),
            a.attempts
        );
    }
    if let Some(r) = &a.result {
        s += &format!("  result:    {}\n", a.redactor().redact(r));
    }
    if let Some(e) = &a.error {
        s += &format!("  error:     {e}\n");
    }
    s
}

/// Why a retried proposal gets an action whose outcome is unknown back
/// instead of a new one, and how a person settles it.
pub(crate) fn unknown_duplicate(a: &Action) -> String {
    format!(
        "already proposed: {id} has the same dedup key and payload, and its outcome is unknown \
         (it may already have run); nothing new was proposed. A person settles it first: \
         `handoff resolve-unknown {id} --executed|--failed|--retry`",
        id = a.short_id()
    )
}

/// The answer to `propose`.
/// The answer to `propose`; `rule` names the `[[rule]]` that decided it at
/// once, so an automatic decision never passes for a person's.
pub(crate) fn proposed(p: &Proposed, a: &Action, rule: Option<&str>) -> String {
    let head = if p.created {
        match rule {
            Some(r) => format!("proposed {} ({} by rule {r})", a.short_id(), a.status),
            None if a.status == Status::Pending => format!(
                "proposed {} (pending: no [[rule]] decided it, a person will)",
                a.short_id()
            ),
            None => format!("proposed {} ({})", a.short_id(), a.status),
        }
    } else if a.status == Status::Unknown {
        unknown_duplicate(a)
    } else {
        format!(
            "already proposed: {} ({}) has the same dedup key and payload",
            a.short_id(),
            a.status
        )
    };
    format!(
        "{head}\n  {}: {}\n  args: {}\n",
        a.kind,
        a.summary,
        a.display_args()
    )
}

/// The answer to `approve`.
pub(crate) fn approve(o: &ApproveOutcome) -> String {
    let a = o.action();
    match o {
        ApproveOutcome::Approved { .. } => format!(
            "{}: approved by {}",
            a.short_id(),
            a.decided_by.as_deref().unwrap_or("?")
        ),
        ApproveOutcome::ApprovalAdded { .. } => format!(
            "{}: approval counted ({}/{}); waiting for more approvers",
            a.short_id(),
            a.approvals,
            a.approvals_required
        ),
        ApproveOutcome::AlreadyApprovedBy { .. } => format!(
            "{}: you already approved it ({}/{}); a second approval from the same person does not count",
            a.short_id(),
            a.approvals,
            a.approvals_required
        ),
        ApproveOutcome::AlreadyDecided {
            status,
            decided_by,
            decided_at,
            ..
        } => {
            let mut s = format!(
                "{}: already {status} by {} at {}",
                a.short_id(),
                decided_by.as_deref().unwrap_or("?"),
                t(*decided_at)
            );
            // The loser learns the decision at once; the run may still be
            // ahead, so say how to follow it.
            if matches!(status, Status::Approved | Status::Executing) {
                s += &format!(
                    "\n  not run yet: follow it with `handoff approve {id} --wait` (waits for the result) \
                     or `handoff action {id}`",
                    id = a.short_id()
                );
            }
            s
        }
        ApproveOutcome::Expired { .. } => format!(
            "{}: expired before the decision; nothing to approve",
            a.short_id()
        ),
        ApproveOutcome::PatchRefused { reason, .. } => {
            format!("{}: patch refused: {reason}", a.short_id())
        }
        ApproveOutcome::SelfApproval { .. } => {
            format!("refused: {}", crate::store::actions::self_approval_note(a))
        }
    }
}

/// The answer to `reject`.
pub(crate) fn reject(o: &RejectOutcome) -> String {
    let a = o.action();
    match o {
        RejectOutcome::Rejected { .. } => format!("{}: rejected", a.short_id()),
        RejectOutcome::AlreadyDecided { .. } => format!(
            "{}: already {} by {} at {}",
            a.short_id(),
            a.status,
            a.decided_by.as_deref().unwrap_or("?"),
            t(a.decided_at)
        ),
        RejectOutcome::Expired { .. } => format!("{}: expired before the decision", a.short_id()),
    }
}

/// The end of a wait.
pub(crate) fn settled(s: &Settled) -> String {
    let a = s.action();
    match s {
        Settled::Done { .. } => format!(
            "{}: {}{}",
            a.short_id(),
            a.status,
            a.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ),
        Settled::StillRunning { .. } => format!(
            "{}: still {}; check later with `handoff action {}`",
            a.short_id(),
            a.status,
            a.short_id()
        ),
    }
}

/// An audit trail.
pub(crate) fn audit(trail: &[AuditEntry]) -> String {
    trail
        .iter()
        .map(|e| {
            format!(
                "{}  {:<15} {:<24} {}\n",
                format_rfc3339(e.at),
                e.event,
                e.actor,
                e.details
            )
        })
        .collect()
}

/// A run whose claim was lost while the command ran (recovery marked it
/// unknown meanwhile), so its result was not recorded; `None` otherwise.
pub(crate) fn lost_claim(r: &ExecReport) -> Option<String> {
    r.lost_claim.then(|| {
        format!(
            "handoff: {} finished, but its claim was lost meanwhile (now {}); the result was not recorded",
            crate::store::short_id(&r.action_id),
            r.status
        )
    })
}

/// Why `propose --exec` waits instead of running: another executor holds
/// the approved action.
pub(crate) fn executing_elsewhere(a: &Action) -> String {
    format!(
        "handoff: {} is being executed elsewhere; waiting for its result",
        a.short_id()
    )
}

/// What recovery did.
pub(crate) fn recover(r: &RecoverReport, ran: &[ExecReport]) -> String {
    let mut s = String::new();
    for a in &r.unknown {
        s += &format!(
            "{}: unknown — {} (decide with `handoff resolve-unknown {}`)\n",
            a.short_id(),
            a.summary,
            a.short_id()
        );
    }
    for a in &r.verified_executed {
        s += &format!("{}: the verifier says it executed\n", a.short_id());
    }
    for a in &r.rerun {
        s += &format!(
            "{}: the verifier says it did not run; approved for one re-run\n",
            a.short_id()
        );
    }
    for a in &r.claimable {
        s += &format!("{}: approved, not yet executed\n", a.short_id());
    }
    for x in ran {
        s += &format!(
            "{}: {}\n",
            crate::store::short_id(&x.action_id),
            if x.claimed {
                format!("ran: {}", x.status)
            } else {
                format!("claimed elsewhere ({})", x.status)
            }
        );
    }
    if s.is_empty() {
        s = "nothing to recover\n".into();
    }
    s
}
