//! What a chat message shows for an item, as data: its text, buttons and
//! attached file ([`View`]), and the routing facts the follower pushes it
//! by ([`Meta`]). A leaf: `push` and the drawers (`question`, `row`,
//! `action`) all build on it, none of them on each other through it.

use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use super::callback::Callback;

/// Telegram's message length limit, in characters.
pub const MAX_TEXT: usize = 4096;

/// One item's rendering: text and buttons.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub text: String,
    pub buttons: Vec<Vec<(String, Callback)>>,
    /// A file carrying the whole text when it does not fit one message:
    /// sent before the message, which says so (its text is never cut).
    pub attachment: Option<Attachment>,
}

/// The whole text of a message too long for one, as a file.
#[derive(Debug, Clone)]
pub(crate) struct Attachment {
    /// The file's name.
    pub name: String,
    /// Its content: the whole text.
    pub body: String,
    /// The message's text should the file never arrive: it says the file is
    /// missing and where else the whole text is.
    pub missing: String,
}

impl View {
    /// The view as drawn when its file could not be sent: the text says so,
    /// and no button approves what nobody could read here (Reject and the
    /// like stay).
    pub(crate) fn without_file(mut self) -> View {
        if let Some(a) = self.attachment.take() {
            self.text = a.missing;
            for row in &mut self.buttons {
                row.retain(|(_, cb)| !cb.verb.approves());
            }
            self.buttons.retain(|row| !row.is_empty());
        }
        self
    }

    pub(super) fn markup(&self) -> InlineKeyboardMarkup {
        InlineKeyboardMarkup::new(self.buttons.iter().map(|row| {
            row.iter()
                .map(|(label, cb)| InlineKeyboardButton::callback(label.clone(), cb.encode()))
                .collect::<Vec<_>>()
        }))
    }

    pub(super) fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.text.as_bytes());
        for row in &self.buttons {
            for (l, cb) in row {
                h.update(l.as_bytes());
                h.update(cb.encode().as_bytes());
            }
        }
        format!("{:x}", h.finalize())[..16].to_string()
    }
}

/// Cut `text` to Telegram's limit on a character boundary, saying so.
pub(crate) fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text.to_string();
    }
    const MARK: &str = "\n… (truncated)";
    let keep = MAX_TEXT - MARK.chars().count();
    let mut s: String = text.chars().take(keep).collect();
    s.push_str(MARK);
    s
}

/// Routing facts about an item.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub project: String,
    pub agent: String,
    /// The agent session it belongs to ('' when none): its forum topic
    /// with `topics = "session"`.
    pub session: String,
    pub action_kind: Option<String>,
    /// Still waiting on a human (worth pushing).
    pub live: bool,
    /// Decided by a grant a person gave earlier: nobody needs to see it
    /// (it is in the audit and `handoff actions`), so it is never pushed.
    pub quiet: bool,
}
