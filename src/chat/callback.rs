//! Callback data of inline buttons: what a tap means.
//!
//! Telegram allows 64 bytes. A button carries the item kind, the verb, the
//! item id, the revision it was drawn for and an optional small argument:
//! `q|o|<32-hex id>|<revision>|<option>` — at most 55 bytes. Anything that
//! does not parse (an old bot's button, a forged payload) is refused with a
//! clear toast, never a panic.

/// What kind of item a button belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    /// A question.
    Question,
    /// A blocked board row.
    Row,
    /// A pending action.
    Action,
}

impl Item {
    /// The kind's stored name: the event log's `entity_kind` and the chat
    /// message records' `item_kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Item::Question => "question",
            Item::Row => "row",
            Item::Action => "action",
        }
    }

    /// The kind a stored name stands for; `None` for entities chat does not
    /// show (boards, sessions, deliveries).
    pub fn from_kind(kind: &str) -> Option<Item> {
        match kind {
            "question" => Some(Item::Question),
            "row" => Some(Item::Row),
            "action" => Some(Item::Action),
            _ => None,
        }
    }
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tap asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Pick option N of a question.
    Option(u8),
    /// Start a clarify reply (asks for text).
    Clarify,
    /// Tick or untick option N of a multiple choice.
    Toggle(u8),
    /// Answer a multiple choice with the ticked options.
    Done,
    /// Answer a single or multiple choice in words ("Other…": asks for text).
    Other,
    /// Decline the question / row.
    Decline,
    /// Start a free-text answer (rows).
    Answer,
    /// Mark a row handled.
    Handled,
    /// Approve an action.
    Approve,
    /// Approve an agent's permission prompt and save a grant for its session.
    ApproveSession,
    /// Approve an agent's permission prompt and save a grant of its
    /// project, in the prompt's folder, for one hour.
    ApproveHour,
    /// Approve an agent's permission prompt and save an always grant of
    /// its project, in the prompt's folder.
    ApproveAlways,
    /// Reject an action (asks for a reason, or rejects with none).
    Reject,
    /// Edit an action's arguments (asks for a patch).
    Edit,
    /// Mark an unknown outcome executed.
    MarkExecuted,
    /// Mark an unknown outcome failed.
    MarkFailed,
    /// Re-approve an unknown outcome for one more run.
    Retry,
    /// Run an approved `--exec` action's command on the daemon's host now.
    Run,
    /// Record that an approved action was done by hand (handoff runs nothing).
    DoneByHand,
    /// Record that an approved action will not run (it ends failed).
    NotRun,
}

impl Verb {
    /// Whether a tap of it approves an action (Edit too: the patch then
    /// counts as the approval).
    pub(crate) fn approves(self) -> bool {
        matches!(
            self,
            Verb::Approve
                | Verb::ApproveSession
                | Verb::ApproveHour
                | Verb::ApproveAlways
                | Verb::Edit
        )
    }
}

/// A decoded button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// Which kind of item the button belongs to.
    pub item: Item,
    /// Full item id.
    pub id: String,
    /// Revision the button was drawn for.
    pub revision: i64,
    /// What to do.
    pub verb: Verb,
}

/// Telegram's limit on callback data.
pub const MAX_LEN: usize = 64;

impl Callback {
    /// Encode for `InlineKeyboardButton::callback`.
    pub fn encode(&self) -> String {
        let k = match self.item {
            Item::Question => "q",
            Item::Row => "r",
            Item::Action => "a",
        };
        let (v, arg) = match self.verb {
            Verb::Option(n) => ("o", n.to_string()),
            Verb::Clarify => ("c", String::new()),
            Verb::Toggle(n) => ("t", n.to_string()),
            Verb::Done => ("dn", String::new()),
            Verb::Other => ("ot", String::new()),
            Verb::Decline => ("d", String::new()),
            Verb::Answer => ("n", String::new()),
            Verb::Handled => ("h", String::new()),
            Verb::Approve => ("ap", String::new()),
            Verb::ApproveSession => ("as", String::new()),
            Verb::ApproveHour => ("ah", String::new()),
            Verb::ApproveAlways => ("aa", String::new()),
            Verb::Reject => ("rj", String::new()),
            Verb::Edit => ("ed", String::new()),
            Verb::MarkExecuted => ("mx", String::new()),
            Verb::MarkFailed => ("mf", String::new()),
            Verb::Retry => ("rt", String::new()),
            Verb::Run => ("rn", String::new()),
            Verb::DoneByHand => ("dh", String::new()),
            Verb::NotRun => ("nr", String::new()),
        };
        format!("{k}|{v}|{}|{}|{arg}", self.id, self.revision)
    }

    /// Decode, or `None` for anything this bot did not draw.
    pub fn decode(data: &str) -> Option<Callback> {
        if data.len() > MAX_LEN {
            return None;
        }
        let mut parts = data.split('|');
        let (k, v, id, rev, arg) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        if parts.next().is_some() {
            return None;
        }
        let item = match k {
            "q" => Item::Question,
            "r" => Item::Row,
            "a" => Item::Action,
            _ => return None,
        };
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let revision: i64 = rev.parse().ok().filter(|r| *r >= 0)?;
        let no_arg = |verb| arg.is_empty().then_some(verb);
        let verb = match v {
            "o" => Verb::Option(arg.parse().ok().filter(|n| *n < 8)?),
            "c" => no_arg(Verb::Clarify)?,
            "t" => Verb::Toggle(arg.parse().ok().filter(|n| *n < 8)?),
            "dn" => no_arg(Verb::Done)?,
            "ot" => no_arg(Verb::Other)?,
            "d" => no_arg(Verb::Decline)?,
            "n" => no_arg(Verb::Answer)?,
            "h" => no_arg(Verb::Handled)?,
            "ap" => no_arg(Verb::Approve)?,
            "as" => no_arg(Verb::ApproveSession)?,
            "ah" => no_arg(Verb::ApproveHour)?,
            "aa" => no_arg(Verb::ApproveAlways)?,
            "rj" => no_arg(Verb::Reject)?,
            "ed" => no_arg(Verb::Edit)?,
            "mx" => no_arg(Verb::MarkExecuted)?,
            "mf" => no_arg(Verb::MarkFailed)?,
            "rt" => no_arg(Verb::Retry)?,
            "rn" => no_arg(Verb::Run)?,
            "dh" => no_arg(Verb::DoneByHand)?,
            "nr" => no_arg(Verb::NotRun)?,
            _ => return None,
        };
        // Verbs only make sense on their own kind of item.
        let fits = match verb {
            Verb::Option(_) | Verb::Clarify | Verb::Toggle(_) | Verb::Done | Verb::Other => {
                item == Item::Question
            }
            Verb::Decline => item != Item::Action,
            Verb::Answer | Verb::Handled => item == Item::Row,
            _ => item == Item::Action,
        };
        fits.then_some(Callback {
            item,
            id: id.to_string(),
            revision,
            verb,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_kind_reads_back_from_its_stored_name() {
        for item in [Item::Question, Item::Row, Item::Action] {
            assert_eq!(Item::from_kind(item.as_str()), Some(item));
        }
        assert_eq!(Item::from_kind("question"), Some(Item::Question));
        assert_eq!(Item::from_kind("board"), None);
        assert_eq!(Item::from_kind("Question"), None);
    }

    const ID: &str = "019ac5f0a1b27c3d8e9f00112233aabb";

    #[test]
    fn every_verb_round_trips_within_64_bytes() {
        let cases = [
            (Item::Question, Verb::Option(0)),
            (Item::Question, Verb::Option(3)),
            (Item::Question, Verb::Clarify),
            (Item::Question, Verb::Toggle(0)),
            (Item::Question, Verb::Toggle(7)),
            (Item::Question, Verb::Done),
            (Item::Question, Verb::Other),
            (Item::Question, Verb::Decline),
            (Item::Row, Verb::Answer),
            (Item::Row, Verb::Handled),
            (Item::Row, Verb::Decline),
            (Item::Action, Verb::Approve),
            (Item::Action, Verb::ApproveSession),
            (Item::Action, Verb::ApproveHour),
            (Item::Action, Verb::ApproveAlways),
            (Item::Action, Verb::Reject),
            (Item::Action, Verb::Edit),
            (Item::Action, Verb::MarkExecuted),
            (Item::Action, Verb::MarkFailed),
            (Item::Action, Verb::Retry),
            (Item::Action, Verb::Run),
            (Item::Action, Verb::DoneByHand),
            (Item::Action, Verb::NotRun),
        ];
        for (item, verb) in cases {
            let cb = Callback {
                item,
                id: ID.into(),
                revision: i64::from(u32::MAX),
                verb,
            };
            let s = cb.encode();
            assert!(s.len() <= MAX_LEN, "{s} is {} bytes", s.len());
            assert_eq!(Callback::decode(&s), Some(cb), "{s}");
        }
    }

    #[test]
    fn foreign_and_malformed_data_is_refused() {
        for bad in [
            "",
            "hello",
            "q|o|short|1|0",
            &format!("q|o|{ID}|1|9"),
            &format!("q|o|{ID}|1|8"),
            &format!("q|o|{ID}|-1|0"),
            &format!("q|ap|{ID}|1|"),
            &format!("a|o|{ID}|1|0"),
            &format!("x|c|{ID}|1|"),
            &format!("q|c|{ID}|1|extra"),
            &format!("q|t|{ID}|1|8"),
            &format!("q|t|{ID}|1|"),
            &format!("a|t|{ID}|1|0"),
            &format!("a|dn|{ID}|1|"),
            &format!("q|dn|{ID}|1|0"),
            &format!("q|c|{ID}|1||"),
            &format!("q|c|{}|1|", "z".repeat(32)),
        ] {
            assert_eq!(Callback::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn option_indexes_stop_at_seven() {
        let seventh = Callback::decode(&format!("q|o|{ID}|1|7")).expect("option 7 decodes");
        assert_eq!(seventh.verb, Verb::Option(7));
        assert_eq!(Callback::decode(&format!("q|o|{ID}|1|8")), None);
    }

    #[test]
    fn the_length_guard_is_exactly_telegrams_64_bytes() {
        // A revision padded with zeros still parses, so only the length
        // guard tells 64 bytes (Telegram's limit: accepted) from 65.
        let padded = |len: usize| {
            let head = format!("q|c|{ID}|");
            let rev = format!("{:0>width$}", 1, width = len - head.len() - 1);
            format!("{head}{rev}|")
        };
        let at_limit = padded(MAX_LEN);
        assert_eq!(at_limit.len(), MAX_LEN);
        let cb = Callback::decode(&at_limit).expect("64 bytes is within the limit");
        assert_eq!((cb.revision, cb.verb), (1, Verb::Clarify));
        let over = padded(MAX_LEN + 1);
        assert_eq!(over.len(), MAX_LEN + 1);
        assert_eq!(Callback::decode(&over), None, "65 bytes is over the limit");
    }
}
