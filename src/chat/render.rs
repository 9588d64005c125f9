//! What a chat message says: the text and buttons of a question, a blocked
//! row or an action, drawn from the store's current state. Pure rendering
//! plus the reads it needs; no Bot API calls.
//!
//! Texts use Telegram's HTML parse mode (for the collapsed context), so
//! every user-supplied string goes through [`esc`]. Parts are cut before
//! escaping so a message stays under 4096 characters without ever cutting a
//! tag in half.

use super::View;
use super::callback::{Callback, Item, Verb};
use crate::config::Config;
use crate::store::questions::{Question, Source, Status};
use crate::store::{Result, Store, short_id};

/// Routing facts about an item.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub project: String,
    pub agent: String,
    pub action_kind: Option<String>,
    /// Still waiting on a human (worth pushing).
    pub live: bool,
}

/// Escape for Telegram HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Cut to `n` characters, marking the cut.
pub(crate) fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Where a reply came from, in words.
pub(crate) fn door(source: Source) -> &'static str {
    match source {
        Source::Inbox => "in the Inbox",
        Source::Chat => "in Telegram",
        Source::Agent => "by the agent",
    }
}

fn by(who: &str) -> String {
    if who.is_empty() {
        String::new()
    } else {
        format!(" by {}", esc(who))
    }
}

pub(crate) async fn meta(store: &Store, item: &str, id: &str) -> Result<Option<Meta>> {
    Ok(match item {
        "question" => store.get_question(id).await?.map(|q| Meta {
            live: q.status == Status::Open,
            project: q.project,
            agent: q.agent,
            action_kind: None,
        }),
        "row" => super::render_more::row_meta(store, id).await?,
        "action" => super::render_more::action_meta(store, id).await?,
        _ => None,
    })
}

pub(crate) async fn view(
    store: &Store,
    config: &Config,
    item: &str,
    id: &str,
) -> Result<Option<View>> {
    Ok(match item {
        "question" => store.get_question(id).await?.map(|q| question(&q)),
        "row" => super::render_more::row_view(store, id).await?,
        "action" => super::render_more::action_view(store, config, id).await?,
        _ => None,
    })
}

/// A question: title, detail, collapsed context, who answered where, and
/// buttons while it is open.
pub(crate) fn question(q: &Question) -> View {
    let mut t = format!("❓ <b>{}</b>", esc(&cut(&q.title, 200)));
    if !q.detail.is_empty() {
        t.push_str(&format!("\n{}", esc(&cut(&q.detail, 600))));
    }
    if !q.context.is_empty() {
        t.push_str(&format!(
            "\n<blockquote expandable>{}</blockquote>",
            esc(&cut(&q.context, 2000))
        ));
    }
    let mut tags = vec![format!("#{}", short_id(&q.id))];
    if !q.project.is_empty() {
        tags.push(esc(&q.project));
    }
    if !q.agent.is_empty() {
        tags.push(esc(&q.agent));
    }
    t.push_str(&format!("\n<i>{}</i>", tags.join(" · ")));
    if let Some(r) = &q.reply {
        let what = match r.kind {
            crate::store::questions::ReplyKind::Answer => "Answered",
            crate::store::questions::ReplyKind::Clarify => "Clarified",
            crate::store::questions::ReplyKind::Decline => "Declined",
        };
        let state = if r.seen_at.is_some() {
            "picked up by the agent"
        } else {
            "not yet picked up"
        };
        let text = if r.text.is_empty() {
            String::new()
        } else {
            format!(": «{}»", esc(&cut(&r.text, 500)))
        };
        t.push_str(&format!(
            "\n\n✅ {what} {}{} ({state}){text}",
            door(r.source),
            by(&r.by)
        ));
    }
    let mut buttons = Vec::new();
    match q.status {
        Status::Open => {
            let cb = |verb| Callback {
                item: Item::Question,
                id: q.id.clone(),
                revision: q.revision,
                verb,
            };
            for (i, o) in q.options.iter().enumerate() {
                let star = if o.recommended { " ⭐" } else { "" };
                buttons.push(vec![(
                    format!("{}{star}", cut(&o.label, 60)),
                    cb(Verb::Option(i as u8)),
                )]);
            }
            buttons.push(vec![
                ("✏️ Clarify".to_string(), cb(Verb::Clarify)),
                ("🚫 Decline".to_string(), cb(Verb::Decline)),
            ]);
            t.push_str("\n\n<i>Reply to this message to answer in your own words.</i>");
        }
        Status::Resolved => t.push_str(&format!(
            "\n\n☑️ Resolved{}",
            q.outcome
                .as_deref()
                .map(|o| format!(": {}", esc(&cut(o, 300))))
                .unwrap_or_default()
        )),
        Status::Dismissed => t.push_str("\n\n🗑 Dismissed"),
    }
    View { text: t, buttons }
}

/// One digest message for a burst of items.
pub(crate) async fn digest(store: &Store, items: &[(String, String)]) -> String {
    let mut t = format!(
        "📬 <b>{} new items</b> arrived at once. Answer with /answer &lt;id&gt; text; /list shows them all.\n",
        items.len()
    );
    for (item, id) in items.iter().take(60) {
        let title = match item.as_str() {
            "question" => store
                .get_question(id)
                .await
                .ok()
                .flatten()
                .map(|q| format!("❓ {}", esc(&cut(&q.title, 80)))),
            _ => super::render_more::title(store, item, id).await,
        };
        if let Some(title) = title {
            t.push_str(&format!("\n<code>{}</code> {title}", short_id(id)));
        }
    }
    if items.len() > 60 {
        t.push_str(&format!("\n… and {} more", items.len() - 60));
    }
    t
}
