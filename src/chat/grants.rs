//! `/grants` in chat: the grants that hold for this chat's projects, each
//! with who gave it, its rule, its place and its end, and a Revoke button
//! whose tap revokes it (guarded in the store: of two revokers one wins,
//! the other is told who did). Deciding prompts by grants is not here.

use teloxide::prelude::*;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ThreadId};

use super::Bridge;
use super::text::cut;
use crate::clock::format_rfc3339;
use crate::store::Channel;
use crate::store::grants::{Grant, Revoked, Scope};

/// The most grants one `/grants` message lists (each has a button).
const MAX_LISTED: usize = 20;

/// Callback data of a Revoke button: `g|rv|<32-hex grant id>` (40 bytes).
pub(super) fn revoke_data(id: &str) -> String {
    format!("g|rv|{id}")
}

/// The grant id a Revoke button carries, or `None` for any other data.
pub(super) fn revoke_of(data: &str) -> Option<&str> {
    let id = data.strip_prefix("g|rv|")?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// One grant in words: rule, scope, place, end, giver.
pub(crate) fn grant_words(g: &Grant) -> String {
    let scope = match g.scope {
        Scope::Session => format!("session {}", cut(&g.session, 24)),
        Scope::Always => "every session".to_string(),
    };
    let end = match g.expires_at {
        Some(e) => format!("until {}", format_rfc3339(e)),
        None => "until revoked".to_string(),
    };
    format!(
        "#{} {} — {scope}, {}, {end}; by {}",
        g.short_id(),
        cut(&g.rule, 80),
        cut(&g.place(), 80),
        g.created_by
    )
}

impl Bridge {
    /// Whether grant `g`'s prompts are routed to `chat_id`.
    fn grant_here(&self, g: &Grant, chat_id: i64) -> bool {
        let kind = format!("{}.{}", g.agent, g.tool);
        self.config
            .route(&g.project, &g.agent, Some(&kind))
            .is_some_and(|t| t.chat_id == chat_id)
    }

    /// `/grants`: what holds for this chat, with a Revoke button each.
    pub(super) async fn cmd_grants(&self, chat_id: i64, thread: Option<i32>) {
        let list = match self.ops.grant_list(false, None).await {
            Ok(l) => l,
            Err(e) => return self.read_trouble(chat_id, thread, "the grants", e).await,
        };
        let here: Vec<Grant> = list
            .into_iter()
            .filter(|g| self.grant_here(g, chat_id))
            .collect();
        if here.is_empty() {
            return self
                .say(
                    chat_id,
                    thread,
                    "No grants hold here. A \"this session\", \"for 1 h\" or \"always here\" tap on an agent's prompt saves one.",
                )
                .await;
        }
        let shown = &here[..here.len().min(MAX_LISTED)];
        let mut text = format!("🔐 Grants that hold here ({}):\n", here.len());
        for g in shown {
            text.push_str(&format!("• {}\n", grant_words(g)));
        }
        if here.len() > shown.len() {
            text.push_str(&format!(
                "… and {} more: `handoff grants` on the host lists them all.\n",
                here.len() - shown.len()
            ));
        }
        text.push_str("Tap Revoke to make later prompts it covered ask again.");
        let rows = shown.iter().map(|g| {
            vec![InlineKeyboardButton::callback(
                format!("🗑 Revoke #{} {}", g.short_id(), cut(&g.rule, 30)),
                revoke_data(&g.id),
            )]
        });
        let mut req = self
            .bot
            .send_message(ChatId(chat_id), text)
            .reply_markup(InlineKeyboardMarkup::new(rows));
        if let Some(t) = thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Err(e) = req.await {
            tracing::warn!(error = %e, chat_id, "cannot send the grants list");
        }
    }

    /// A Revoke tap on grant `id` by `who`; the toast that says what happened.
    pub(super) async fn revoke_words(&self, id: &str, who: &str) -> String {
        match self.ops.grant_revoke(id, who, Channel::Chat).await {
            Ok(Some(Revoked::Now(g))) => format!(
                "Revoked #{} {}: later prompts it covered ask again.",
                g.short_id(),
                g.rule
            ),
            Ok(Some(Revoked::Already(g))) => format!(
                "#{} was already revoked by {}; nothing changed.",
                g.short_id(),
                g.revoked_by.as_deref().unwrap_or("someone")
            ),
            Ok(None) => "That grant no longer exists.".to_string(),
            Err(e) => format!("Not revoked: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoke_buttons_fit_telegram_and_refuse_other_data() {
        let id = "019ac5f0a1b27c3d8e9f00112233aabb";
        let d = revoke_data(id);
        assert!(d.len() <= super::super::callback::MAX_LEN);
        assert_eq!(revoke_of(&d), Some(id));
        assert_eq!(revoke_of("g|rv|short"), None);
        assert_eq!(revoke_of(&format!("a|ap|{id}|1|")), None);
    }
}
