//! Updates the bot cannot parse (a field Telegram or an emulator left out,
//! a kind this build does not know). teloxide hands them over as
//! `UpdateKind::Error` with the raw JSON and moves its offset past them;
//! here each is logged at warn with its update id and the parse error,
//! counted (`handoff_telegram_updates_unparsed_total`), and skipped. A tap
//! that cannot be read still gets a toast, so it does not spin forever on
//! the user's phone.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use teloxide::prelude::*;
use teloxide::types::{CallbackQueryId, Message};

use super::Bridge;

/// Updates skipped because they did not parse, since the process started.
static UNPARSED: AtomicU64 = AtomicU64::new(0);

/// How many updates were skipped unparsed so far in this process.
pub fn unparsed_updates() -> u64 {
    // Relaxed: an independent counter, read only for reporting.
    UNPARSED.load(Ordering::Relaxed)
}

impl Bridge {
    /// Log, count and skip update `id` whose raw JSON is `raw`.
    pub(crate) async fn on_unparsed(&self, id: u32, raw: &Value) {
        UNPARSED.fetch_add(1, Ordering::Relaxed);
        let (kind, error) = parse_error(raw);
        tracing::warn!(
            update_id = id,
            kind = %kind,
            error = %error,
            "cannot parse a Telegram update; skipped"
        );
        if let Some(cb) = raw["callback_query"]["id"].as_str()
            && let Err(e) = self
                .bot
                .answer_callback_query(CallbackQueryId(cb.to_string()))
                .text("Sorry, I could not read that tap. Use /list to see open items.")
                .await
        {
            tracing::debug!(error = %e, "cannot answer an unparsed callback query");
        }
    }
}

/// The update's kind and why it did not parse: teloxide keeps only the raw
/// value, so the kinds the bridge handles are parsed again for serde's error.
fn parse_error(raw: &Value) -> (String, String) {
    let Some(obj) = raw.as_object() else {
        return ("?".into(), "the update is not a JSON object".into());
    };
    let Some((kind, body)) = obj.iter().find(|(k, _)| *k != "update_id") else {
        return ("?".into(), "the update carries no content".into());
    };
    let err = match kind.as_str() {
        "message" | "edited_message" | "channel_post" | "edited_channel_post" => {
            serde_json::from_value::<Message>(body.clone()).err()
        }
        "callback_query" => serde_json::from_value::<CallbackQuery>(body.clone()).err(),
        _ => None,
    };
    let why = match err {
        Some(e) => e.to_string(),
        None => format!("`{kind}` updates are not understood by this build"),
    };
    (kind.clone(), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_missing_field() {
        let raw = serde_json::json!({"update_id": 7, "callback_query": {
            "id": "cb", "from": {"id": 1, "is_bot": false, "first_name": "a"}, "data": "x"}});
        let (kind, why) = parse_error(&raw);
        assert_eq!(kind, "callback_query");
        assert!(why.contains("chat_instance"), "{why}");
        let (kind, why) = parse_error(&serde_json::json!({"update_id": 8, "future_kind": {}}));
        assert_eq!(kind, "future_kind");
        assert!(why.contains("not understood"), "{why}");
    }
}
