//! What happens to an action nobody decides, in words, for the chat
//! message and the Inbox card: an agent's permission
//! prompt is denied (its hook fails closed), an `on_expire = reject` action
//! is rejected, any other one expires. Words only: the expiry itself is
//! `recovery`'s sweep (and the hook's own timeout).

use chrono::{DateTime, Utc};

use super::{Action, OnExpire, Status};

/// The sentence saying what happens to `a` at its expiry and when, while
/// it is pending and has one; `None` otherwise.
pub fn expiry_note(a: &Action) -> Option<String> {
    let at = a.expires_at.filter(|_| a.status == Status::Pending)?;
    let when = DateTime::<Utc>::from_timestamp_millis(at)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| crate::clock::format_rfc3339(at));
    Some(if crate::store::grants::prompt_of(a).is_some() {
        format!("Denied automatically at {when} if nobody answers (fail closed)")
    } else {
        match a.on_expire {
            OnExpire::Reject => format!("Rejected automatically at {when} if nobody decides"),
            OnExpire::Expire => {
                format!("Expires at {when} if nobody decides: it will not run")
            }
        }
    })
}

/// Whether `a` was settled by running out of time (the sweep's `expiry`,
/// or a hook's `timeout`) rather than by a person or a rule.
pub fn timed_out(a: &Action) -> bool {
    matches!(a.decided_by.as_deref(), Some("expiry" | "timeout"))
}
