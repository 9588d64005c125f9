//! Why a reply was refused, in the words the doors show: the question's
//! state read back after a guarded write changed nothing.

use super::write::explain_closed;
use super::{NewReply, Question, Refusal, ReplyKind, Status};

/// Why a reply to the open question `q` was refused: stale, or an
/// unclaimed reply in the way (`Empty` if neither: the caller refines it).
pub(super) fn explain_open(q: &Question, expected_revision: Option<i64>) -> Refusal {
    if let Some(rev) = expected_revision
        && rev != q.revision
    {
        return Refusal::Stale {
            current_revision: q.revision,
        };
    }
    match &q.reply {
        Some(r) if r.seen_at.is_none() => Refusal::UnreadAnswer {
            reply: r.text.clone(),
            kind: r.kind,
            source: r.source,
            by: r.by.clone(),
        },
        _ => Refusal::Empty,
    }
}

/// Explain a refused reply from the row read under the write: missing,
/// closed, stale, or an unclaimed reply in the way (`Empty` if none of
/// these — the caller refines it).
pub(super) fn explain(q: Option<&Question>, expected_revision: Option<i64>) -> Refusal {
    let Some(q) = q else {
        return Refusal::NotFound;
    };
    if q.status != Status::Open {
        return explain_closed(Some(q));
    }
    explain_open(q, expected_revision)
}

/// A write that found nothing to clear or was refused by a card's answer:
/// the agent already has the standing reply of `q`, or there is none.
pub(super) fn picked_up_or_empty(q: Option<&Question>) -> Refusal {
    match q.and_then(|q| q.reply.as_ref()) {
        Some(reply) => Refusal::AlreadyPickedUp {
            reply: reply.text.clone(),
        },
        None => Refusal::Empty,
    }
}

/// A blank reply is allowed only as a decline without a reason.
pub(super) fn is_blank(r: &NewReply) -> bool {
    r.text.trim().is_empty() && r.kind != ReplyKind::Decline
}
