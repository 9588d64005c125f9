//! The chat-network seam: what a tap means and who may make it, written
//! once for every chat network (Telegram, Slack). An adapter turns its
//! network's updates into a [`Tapper`] plus a [`super::Callback`], asks the item
//! kind's `tap_*` for an [`Outcome`], and only renders that outcome (a
//! toast, an ephemeral note, a prompt for text) in its own way.
//!
//! Not here: sending or drawing messages (each adapter renders the same
//! [`super::view::View`] its own way), and the store rules themselves. The
//! asymmetric rule (`docs/design.md` §2: an Inbox answer wins over a chat
//! one) holds for every network because every adapter writes through the
//! store's chat channel ([`crate::store::Channel::Chat`]).

use super::callback::Item;

/// A chat network the bridge talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Network {
    /// Telegram, through teloxide.
    Telegram,
    /// Slack, through Socket Mode and the Web API.
    Slack,
}

impl Network {
    /// The network's name as people read it ("rejected in Slack by …").
    pub(crate) fn name(self) -> &'static str {
        match self {
            Network::Telegram => "Telegram",
            Network::Slack => "Slack",
        }
    }
}

impl Network {
    /// The network an actor acted through, by the name the store records
    /// (`slack:U…` for Slack; everything else came through Telegram).
    pub(crate) fn of_actor(who: &str) -> Network {
        if who.starts_with("slack:") {
            Network::Slack
        } else {
            Network::Telegram
        }
    }
}

/// Where an answer came from, in words: the store's door, with chat told
/// apart by network (`in Slack`, `in Telegram`).
pub(crate) fn door(source: crate::store::Channel, who: &str) -> &'static str {
    match (source, Network::of_actor(who)) {
        (crate::store::Channel::Chat, Network::Slack) => "in Slack",
        _ => source.door(),
    }
}

/// Who made a tap, and through which network.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tapper<'a> {
    /// The network the tap came through.
    pub network: Network,
    /// The actor as the store records it (`@name`, `tg:42`, `slack:U042`).
    pub who: &'a str,
}

/// What a user must be allowed to do with an item: its chat's `answer` or
/// `approve` list. (Not a token's role, nor a daemon's.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Right {
    Answer,
    Approve,
}

impl Right {
    /// The right a tap on `item` needs: deciding an action is the
    /// approvers' alone; questions and rows are answered by either list.
    pub(crate) fn for_item(item: Item) -> Right {
        if item == Item::Action {
            Right::Approve
        } else {
            Right::Answer
        }
    }

    /// Whether a user on the `answer` / `approve` lists has this right
    /// by those lists alone (approvers may also answer).
    pub(crate) fn listed<T: PartialEq>(self, user: &T, answer: &[T], approve: &[T]) -> bool {
        match self {
            Right::Answer => answer.contains(user) || approve.contains(user),
            Right::Approve => approve.contains(user),
        }
    }

    /// The words of a refusal for a user without this right.
    pub(crate) fn refusal(self) -> &'static str {
        match self {
            Right::Approve => "decide actions",
            Right::Answer => "answer",
        }
    }
}

/// What a tap came to, for the adapter to tell.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// What to tell the person who tapped (a toast, an ephemeral note).
    pub words: String,
    /// The words are worth a message in the chat too (an answer already
    /// waiting, whose text the toast cuts).
    pub post_too: bool,
    /// The tap asks for text next (a correction, an answer, a patch).
    pub ask: Option<Ask>,
    /// The item may have changed: its messages are redrawn after telling.
    pub redraw: bool,
}

/// What a reply to one of our prompts means.
#[derive(Debug, Clone)]
pub(crate) enum Prompt {
    /// A clarify correction for a question.
    Clarify { id: String, revision: i64 },
    /// A free-text answer for a blocked row.
    RowAnswer { id: String },
    /// An "Other…" answer in words for a question card.
    Other { id: String, revision: i64 },
    /// A JSON patch (or `key: value` lines) for an action, then approve.
    ActionEdit { id: String },
    /// A corrected voice transcript: answers `item` as the voice note
    /// would have (`how`: answer, clarify or other).
    Voice {
        item: Item,
        id: String,
        how: &'static str,
        revision: Option<i64>,
    },
}

/// A request for text that a tap opens.
#[derive(Debug)]
pub(crate) struct Ask {
    /// The prompt's text.
    pub text: String,
    /// A hint for the input field.
    pub placeholder: &'static str,
    /// What the reply will mean.
    pub prompt: Prompt,
}

impl Outcome {
    /// Tell `words`, then redraw the item.
    pub(crate) fn said(words: impl Into<String>) -> Outcome {
        Outcome {
            words: words.into(),
            post_too: false,
            ask: None,
            redraw: true,
        }
    }

    /// Tell `words`; the item did not change.
    pub(crate) fn only(words: impl Into<String>) -> Outcome {
        Outcome {
            redraw: false,
            ..Outcome::said(words)
        }
    }

    /// A store failure while handling a tap: logged, and the tapper told
    /// nothing was recorded.
    pub(crate) fn store_trouble(e: crate::ops::Error) -> Outcome {
        tracing::error!(error = %e, "store failed while handling a tap");
        Outcome::only("Something went wrong on the host; nothing was recorded. Try again.")
    }

    /// Tell `words`, then ask for text (the item did not change yet).
    pub(crate) fn asking(words: impl Into<String>, ask: Ask) -> Outcome {
        Outcome {
            ask: Some(ask),
            ..Outcome::only(words)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_need_approvers_and_approvers_may_answer() {
        let answer = ["u1".to_string()];
        let approve = ["u2".to_string()];
        let cases = [
            (Item::Question, "u1", true),
            (Item::Row, "u2", true),
            (Item::Action, "u1", false),
            (Item::Action, "u2", true),
            (Item::Question, "u3", false),
        ];
        for (item, user, want) in cases {
            let got = Right::for_item(item).listed(&user.to_string(), &answer, &approve);
            assert_eq!(got, want, "{item} by {user}");
        }
    }
}
