//! The chat commands: /start (pairing), /help, /answer and /clarify by
//! id, and /list of the open items routed to this chat (/sessions is
//! in `fleet`).

use super::Bridge;
use super::callback::Item;
use super::dispatch::{NOT_ALLOWED, Right, actor};
use super::row::row_of;
use super::text::cut;
use crate::chat::dispatch::Words;
use crate::store::questions::ReplyKind;
use crate::store::short_id;

pub(super) const HELP: &str = "I pass your answers and decisions to the agents that asked.\n\n\
• Tap a button under a question, row or action.\n\
• Reply to a question's message to answer in your own words — typed, or as a voice note (its transcript comes back for you to Send, Edit or Discard).\n\
• /answer <id> <text> — answer by short id (the #code on each message).\n\
• /clarify <id> <text> — correct your chat answer the agent hasn't picked up yet (or reply to the message with /clarify <text>).\n\
• /list — open items of this chat.\n\
• /sessions — the agent sessions of this chat's projects: waiting, working, idle or ended, and for how long.\n\
• /grants — the grants that hold here (who gave each, its scope and end), with Revoke buttons.\n\
• /help — this text.";

impl Bridge {
    /// A `/command` (`rest` is the text after the slash): /start from
    /// anyone, /help in a configured chat, the rest from admitted users.
    pub(super) async fn on_command(
        &self,
        m: &teloxide::types::Message,
        thread: Option<i32>,
        from: &teloxide::types::User,
        rest: &str,
        configured: bool,
    ) {
        let chat_id = m.chat.id.0;
        let (cmd, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let cmd = cmd.split('@').next().unwrap_or(cmd).to_lowercase();
        let args = args.trim();
        if cmd == "start" {
            return self.cmd_start(chat_id, thread, from, configured).await;
        }
        if !configured {
            return;
        }
        if cmd == "help" {
            return self.say(chat_id, thread, HELP).await;
        }
        if !self.allowed(chat_id, from.id.0, Right::Answer).await {
            return self.say(chat_id, thread, NOT_ALLOWED).await;
        }
        let who = actor(from);
        match cmd.as_str() {
            "list" => self.cmd_list(chat_id, thread).await,
            "grants" => self.cmd_grants(chat_id, thread).await,
            "sessions" => self.cmd_sessions(chat_id, thread).await,
            "answer" => {
                self.cmd_answer(chat_id, thread, args, &who, ReplyKind::Answer)
                    .await
            }
            "clarify" => self.cmd_clarify(m, thread, args, &who).await,
            _ => {
                self.say(
                    chat_id,
                    thread,
                    "I don't know that command. /help lists what I understand.",
                )
                .await
            }
        }
    }

    /// `/clarify`: a reply to an item's message clarifies that item;
    /// otherwise the first word is the item's id.
    async fn cmd_clarify(
        &self,
        m: &teloxide::types::Message,
        thread: Option<i32>,
        args: &str,
        who: &str,
    ) {
        let chat_id = m.chat.id.0;
        let replied = match m.reply_to_message() {
            Some(orig) if !args.is_empty() => self.item_of(chat_id, orig.id.0).await,
            _ => None,
        };
        match replied {
            Some((kind, id)) => {
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item: kind,
                        id: &id,
                        text: args,
                        who,
                        kind: ReplyKind::Clarify,
                        revision: None,
                    },
                )
                .await
            }
            None => {
                self.cmd_answer(chat_id, thread, args, who, ReplyKind::Clarify)
                    .await
            }
        }
    }

    pub(super) async fn cmd_start(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        from: &teloxide::types::User,
        configured: bool,
    ) {
        if configured && self.allowed(chat_id, from.id.0, Right::Answer).await {
            return self.say(chat_id, thread, HELP).await;
        }
        let name = from.username.clone().unwrap_or_default();
        match self
            .ops
            .pairing_create(from.id.0 as i64, chat_id, &name)
            .await
        {
            Ok(code) => {
                let text = format!(
                    "Hi! Your Telegram id is {} and this chat's id is {chat_id}.\nTo be admitted, ask the operator to run on the host:\n\n    handoff pair {code} --role answer\n\n(or --role approve to also decide actions). The code works once, for one hour.{}",
                    from.id.0,
                    if configured {
                        ""
                    } else {
                        "\nThis chat is not in the config yet: add it as a [[telegram.chats]] entry first."
                    }
                );
                self.say(chat_id, thread, &text).await
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot create a pairing code");
                self.say(
                    chat_id,
                    thread,
                    "Something went wrong on the host; try /start again later.",
                )
                .await
            }
        }
    }

    pub(super) async fn cmd_answer(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        args: &str,
        who: &str,
        kind: ReplyKind,
    ) {
        let verb = if kind == ReplyKind::Clarify {
            "clarify"
        } else {
            "answer"
        };
        let (sid, text) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        let sid = sid.trim_start_matches('#');
        if sid.is_empty() || text.trim().is_empty() {
            return self
                .say(
                    chat_id,
                    thread,
                    &format!(
                        "Usage: /{verb} <id> <text> — the id is the #code on the item's message."
                    ),
                )
                .await;
        }
        match self.find_item(sid).await {
            Some((item, id)) => {
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item,
                        id: &id,
                        text: text.trim(),
                        who,
                        kind,
                        revision: None,
                    },
                )
                .await
            }
            None => {
                self.say(
                    chat_id,
                    thread,
                    &format!("No open item with id {sid}. /list shows open items."),
                )
                .await
            }
        }
    }

    /// Find a question or row by full or short id.
    pub(super) async fn find_item(&self, sid: &str) -> Option<(Item, String)> {
        if let Ok(Some(id)) = self.calls().resolve_question_id(sid).await {
            return Some((Item::Question, id));
        }
        self.find_row(sid).await.map(|id| (Item::Row, id))
    }

    pub(super) async fn cmd_list(&self, chat_id: i64, thread: Option<i32>) {
        let mut lines = Vec::new();
        let filter = crate::store::questions::ListFilter {
            status: Some(crate::store::questions::Status::Open),
            awake_only: true,
            limit: Some(200),
            ..Default::default()
        };
        if let Ok(qs) = self.calls().list_questions(&filter).await {
            for q in qs {
                let here = self
                    .config
                    .route(&q.project, &q.agent, None)
                    .is_some_and(|t| t.chat_id == chat_id);
                if here {
                    let state = match &q.reply {
                        Some(r) if r.seen_at.is_none() => " (answered, waiting for the agent)",
                        _ => "",
                    };
                    lines.push(format!(
                        "❓ #{} {}{state}",
                        short_id(&q.id),
                        cut(&q.title, 80)
                    ));
                }
            }
        }
        lines.extend(self.list_more(chat_id).await);
        let text = if lines.is_empty() {
            "Nothing open here. 🎉".to_string()
        } else {
            format!("Open items ({}):\n{}", lines.len(), lines.join("\n"))
        };
        self.say(chat_id, thread, &text).await;
    }

    pub(crate) async fn list_more(&self, chat_id: i64) -> Vec<String> {
        let mut lines = Vec::new();
        for id in self.ops.blocked_row_ids().await.unwrap_or_default() {
            if let Ok(Some((b, r))) = row_of(&self.ops, &id).await
                && self
                    .config
                    .route(&b.project, &b.agent, None)
                    .is_some_and(|t| t.chat_id == chat_id)
            {
                lines.push(format!(
                    "🧱 #{} {} — {}",
                    short_id(&id),
                    cut(&b.title, 40),
                    cut(&r.label, 40)
                ));
            }
        }
        let now = self.ops.now();
        for a in self.calls().list_actions(None).await.unwrap_or_default() {
            let st = a.effective_status(now);
            let live = matches!(
                st,
                crate::store::actions::Status::Pending | crate::store::actions::Status::Unknown
            );
            if live
                && self
                    .config
                    .route(&a.project, &a.proposer, Some(&a.kind))
                    .is_some_and(|t| t.chat_id == chat_id)
            {
                lines.push(format!(
                    "⚠️ #{} {}: {} ({st})",
                    a.short_id(),
                    a.kind,
                    cut(&a.summary, 60)
                ));
            }
        }
        lines
    }
}
