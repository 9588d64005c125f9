//! A question in chat: its message (title, detail, collapsed context, who
//! answered where, buttons while open), its taps (an option, Clarify,
//! Decline) and text answers, and how a refused answer is explained.

use teloxide::prelude::*;

use super::Bridge;
use super::callback::{Callback, Item, Verb};
use super::dispatch::Prompt;
use super::network::{Ask, Outcome, Tapper};
use super::text::{by, cut, esc, quote};
use super::view::View;
use crate::store::questions::{NewReply, Question, Refusal, ReplyKind, Status};
use crate::store::short_id;

/// A question: title, detail, collapsed context, who answered where, and
/// buttons while it is open.
pub(crate) fn question(q: &Question) -> View {
    let mut t = format!("❓ <b>{}</b>", esc(&cut(&q.title, 200)));
    if !q.detail.is_empty() {
        t.push_str(&format!("\n{}", esc(&cut(&q.detail, 600))));
    }
    t.push_str(&quote(&q.context, 2000));
    let mut tags = vec![format!("#{}", short_id(&q.id))];
    if !q.project.is_empty() {
        tags.push(esc(&q.project));
    }
    if !q.agent.is_empty() {
        tags.push(esc(&q.agent));
    }
    t.push_str(&format!("\n<i>{}</i>", tags.join(" · ")));
    if let Some(r) = &q.reply {
        t.push_str(&answered(r));
    }
    let mut buttons = Vec::new();
    match q.status {
        Status::Open if !q.choice.is_plain() => {
            let (rows, hint) = super::card::open(q);
            buttons = rows;
            t.push_str(&hint);
        }
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
    View {
        text: t,
        buttons,
        attachment: None,
    }
}

/// The line saying who answered, how, through which door, and whether the
/// agent has it yet.
fn answered(r: &crate::store::questions::Reply) -> String {
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
    let spoken = if r.medium == crate::store::questions::Medium::Voice {
        "by voice "
    } else {
        ""
    };
    format!(
        "\n\n✅ {what} {spoken}{}{} ({state}){text}",
        super::network::door(r.source, &r.by),
        by(&r.by)
    )
}

impl Bridge {
    /// What a tap on a question's button comes to (not the multiple-choice
    /// card's Toggle / Done / Other: each network draws its own card).
    pub(crate) async fn tap_question(&self, cb: &Callback, tapper: Tapper<'_>) -> Outcome {
        let who = tapper.who;
        let question = match self.calls().get_question(&cb.id).await {
            Ok(Some(x)) => x,
            Ok(None) => return Outcome::only("That question no longer exists."),
            Err(e) => return store_trouble(e),
        };
        let reply = |text: String, kind| NewReply {
            text,
            kind,
            context: None,
            by: who.to_string(),
            expected_revision: Some(cb.revision),
        };
        let r = match cb.verb {
            Verb::Option(_) if question.choice == crate::store::questions::Choice::Many => {
                // A multiple choice is answered with Done, never one tap.
                return Outcome::said("The question changed — see the updated message.");
            }
            Verb::Option(n) => {
                let Some(opt) = question.options.get(n as usize) else {
                    return Outcome::only(
                        "That option no longer exists — see the updated message.",
                    );
                };
                reply(opt.label.clone(), ReplyKind::Answer)
            }
            Verb::Decline => reply(String::new(), ReplyKind::Decline),
            Verb::Clarify => {
                if question.revision != cb.revision {
                    return Outcome::said("The question changed — see the updated message.");
                }
                let text = format!(
                    "✏️ Clarify #{}: reply to this message with your correction.",
                    short_id(&cb.id)
                );
                return Outcome::asking(
                    "Send your correction as a reply.",
                    Ask {
                        text,
                        placeholder: "your correction",
                        prompt: Prompt::Clarify {
                            id: cb.id.clone(),
                            revision: cb.revision,
                        },
                    },
                );
            }
            _ => return Outcome::only("That button doesn't apply to a question."),
        };
        if crate::fault::on("ack-before-write") && r.kind == ReplyKind::Answer {
            // FAULT(ack-before-write): toasted as recorded, then (as if the
            // daemon died in between) never written.
            return Outcome::only(format!("Recorded: {}", r.text));
        }
        match self.ops.reply_chat(&cb.id, &r).await {
            Ok(Ok(_)) => {
                let what = if r.kind == ReplyKind::Decline {
                    "Declined".to_string()
                } else {
                    format!("Recorded: {}", r.text)
                };
                Outcome::said(what)
            }
            Ok(Err(refusal)) => {
                let text = self.refusal_words(&cb.id, &refusal).await;
                Outcome {
                    post_too: matches!(refusal, Refusal::UnreadAnswer { .. }),
                    ..Outcome::only(text)
                }
            }
            Err(e) => store_trouble(e),
        }
    }

    /// Explain a refused question reply: toast (for taps) and, when there is
    /// text worth reading, a message.
    pub(crate) async fn tell_refusal(
        &self,
        q: Option<&CallbackQuery>,
        chat_id: i64,
        thread: Option<i32>,
        id: &str,
        refusal: &Refusal,
    ) {
        let text = self.refusal_words(id, refusal).await;
        match q {
            Some(q) => {
                self.toast(q, &text).await;
                if matches!(refusal, Refusal::UnreadAnswer { .. }) {
                    self.say(chat_id, thread, &text).await;
                }
            }
            None => self.say(chat_id, thread, &text).await,
        }
    }

    /// The words explaining a refused question reply, on any network (a
    /// stale one also redraws the question).
    pub(crate) async fn refusal_words(&self, id: &str, refusal: &Refusal) -> String {
        match refusal {
            Refusal::UnreadAnswer {
                reply, source, by, ..
            } => {
                let by = if by.is_empty() {
                    String::new()
                } else {
                    format!(" (by {by})")
                };
                let place = match source {
                    crate::store::questions::Channel::Inbox => "An Inbox answer",
                    crate::store::questions::Channel::Chat => "A chat answer",
                    _ => "An answer",
                };
                format!(
                    "{place} is already waiting for the agent{by}: «{}». Yours was not recorded; once the agent picks that one up you can answer again.",
                    cut(reply, 500)
                )
            }
            Refusal::Stale { .. } => {
                self.redraw_quiet(Item::Question, id).await;
                "The question changed — see the updated message.".to_string()
            }
            Refusal::NotOpen { status } => format!("That question is already {status}."),
            Refusal::NotFound => "That question no longer exists.".to_string(),
            Refusal::Empty => "The answer is empty: write some text.".to_string(),
            other => other.to_string(),
        }
    }
}

/// A store failure while handling a tap: logged, and the tapper told
/// nothing was recorded.
pub(crate) fn store_trouble(e: crate::ops::Error) -> Outcome {
    Outcome::store_trouble(e)
}
