//! Question cards: an agent's own multiple-choice prompt (Claude Code's
//! AskUserQuestion) drawn on a question. A single choice is one button per
//! option; a multiple choice is toggles (✓ on the ticked ones, the message
//! redrawn after each tap) and a Done button; both offer "Other…", which
//! asks for an answer in words (a force-reply prompt in Telegram, a thread
//! reply in Slack), and Decline. The taps' meaning is written once for
//! every network (`chat::network`).
//!
//! Every tap names the revision it was drawn for, and a toggle bumps it:
//! a tap on an older drawing, or on a card already answered, is refused
//! with a toast and the message redrawn; it never applies. The answer is
//! an ordinary chat reply (the asymmetric rule holds), which the hook
//! picks up. This file does not decide what the agent does with it.

use super::Bridge;
use super::callback::{Callback, Item, Verb};
use super::dispatch::Prompt;
use super::network::{Ask, Outcome, Tapper};
use super::text::cut;
use crate::chat::dispatch::Words;
use crate::store::Channel;
use crate::store::questions::{Choice, NewReply, Question, Refusal, ReplyKind};
use crate::store::short_id;

/// The buttons of an open card and the hint under its text.
pub(super) fn open(q: &Question) -> (Vec<Vec<(String, Callback)>>, String) {
    let cb = |verb| Callback {
        item: Item::Question,
        id: q.id.clone(),
        revision: q.revision,
        verb,
    };
    let mut rows = Vec::new();
    let many = q.choice == Choice::Many;
    for (i, o) in q.options.iter().enumerate().take(8) {
        let label = cut(&o.label, 60);
        if many {
            let ticked = q.picked & (1 << i) != 0;
            let text = if ticked {
                format!("✓ {label}")
            } else {
                label
            };
            rows.push(vec![(text, cb(Verb::Toggle(i as u8)))]);
        } else {
            let star = if o.recommended { " ⭐" } else { "" };
            rows.push(vec![(format!("{label}{star}"), cb(Verb::Option(i as u8)))]);
        }
    }
    let other = ("✏️ Other…".to_string(), cb(Verb::Other));
    let decline = ("🚫 Decline".to_string(), cb(Verb::Decline));
    let hint = if many {
        let n = q.picked_labels().len();
        rows.push(vec![(format!("☑️ Done ({n})"), cb(Verb::Done)), other]);
        rows.push(vec![decline]);
        "\n\n<i>Tick every option that applies, then Done; or Other… to answer in your own words.</i>"
    } else {
        rows.push(vec![other, decline]);
        "\n\n<i>Pick one, or Other… to answer in your own words.</i>"
    };
    (rows, hint.to_string())
}

impl Bridge {
    /// A tap on a card's own buttons (a toggle, Done, Other…), on any
    /// network: what to tell the person who tapped.
    pub(crate) async fn tap_card(&self, cb: &Callback, tapper: Tapper<'_>) -> Outcome {
        let question = match self.calls().get_question(&cb.id).await {
            Ok(Some(question)) => question,
            Ok(None) => return Outcome::only("That question no longer exists."),
            Err(e) => return Outcome::store_trouble(e),
        };
        let who = tapper.who;
        match cb.verb {
            Verb::Toggle(n) => {
                match self
                    .ops
                    .question_toggle(&cb.id, n, cb.revision, who, Channel::Chat)
                    .await
                {
                    Ok(Ok(now)) => {
                        let label = now
                            .options
                            .get(n as usize)
                            .map(|o| o.label.as_str())
                            .unwrap_or_default();
                        Outcome::said(if now.picked & (1 << n) != 0 {
                            format!("✓ {label}")
                        } else {
                            format!("Unticked {label}")
                        })
                    }
                    Ok(Err(refusal)) => self.refused(&cb.id, &refusal).await,
                    Err(e) => Outcome::store_trouble(e),
                }
            }
            Verb::Done => {
                if let Some(why) = stale(&question, cb) {
                    return Outcome::said(why);
                }
                let labels = question.picked_labels();
                if labels.is_empty() {
                    return Outcome::only(
                        "Tick at least one option first, or use Other… to answer in words.",
                    );
                }
                let r = NewReply {
                    text: labels.join(", "),
                    kind: ReplyKind::Answer,
                    context: None,
                    by: who.to_string(),
                    expected_revision: Some(cb.revision),
                };
                match self.ops.reply_chat(&cb.id, &r).await {
                    Ok(Ok(_)) => Outcome::said(format!("Recorded: {}", r.text)),
                    Ok(Err(refusal)) => self.refused(&cb.id, &refusal).await,
                    Err(e) => Outcome::store_trouble(e),
                }
            }
            Verb::Other => {
                if let Some(why) = stale(&question, cb) {
                    return Outcome::said(why);
                }
                let text = format!(
                    "✏️ #{}: reply to this message with your answer.",
                    short_id(&cb.id)
                );
                let prompt = Prompt::Other {
                    id: cb.id.clone(),
                    revision: cb.revision,
                };
                let ask = Ask {
                    text,
                    placeholder: "your answer",
                    prompt,
                };
                Outcome::asking("Send your answer as a reply.", ask)
            }
            _ => Outcome::only("That button doesn't apply here."),
        }
    }

    /// A refused card reply in words (an answer already waiting is worth
    /// a message in the chat too).
    async fn refused(&self, id: &str, refusal: &Refusal) -> Outcome {
        let text = self.refusal_words(id, refusal).await;
        Outcome {
            post_too: matches!(refusal, Refusal::UnreadAnswer { .. }),
            ..Outcome::only(text)
        }
    }

    /// An "Other…" reply's answer, on any network: the words after the
    /// ticked options of a multiple choice, for the card as it was drawn.
    pub(crate) async fn other_answer(&self, id: &str, revision: i64, text: &str) -> String {
        let text = text.trim();
        match self.calls().get_question(id).await {
            Ok(Some(q)) if q.revision == revision && q.choice == Choice::Many => {
                let mut parts: Vec<&str> = q.picked_labels();
                parts.push(text);
                parts.join(", ")
            }
            _ => text.to_string(),
        }
    }

    /// An "Other…" prompt's reply in Telegram.
    pub(super) async fn answer_other(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        id: &str,
        revision: i64,
        text: &str,
        who: &str,
    ) {
        let answer = self.other_answer(id, revision, text).await;
        self.answer_item(
            chat_id,
            thread,
            Words {
                item: Item::Question,
                id,
                text: &answer,
                who,
                kind: ReplyKind::Answer,
                revision: Some(revision),
            },
        )
        .await
    }
}

/// Why a tap on `q` drawn as `cb` cannot apply: the card changed or was
/// answered since it was drawn.
fn stale(q: &Question, cb: &Callback) -> Option<&'static str> {
    if q.status != crate::store::questions::Status::Open {
        Some("This question is already closed — see the updated message.")
    } else if q.has_unseen_reply() {
        Some("This question is already answered — see the updated message.")
    } else if q.revision != cb.revision {
        Some("The question changed — see the updated message.")
    } else {
        None
    }
}
