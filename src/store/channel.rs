//! The one name for the door a write came through: [`Channel`].
//!
//! Every reply, annotation, decision, event and audit row records it. The
//! asymmetric rule reads it: an Inbox (or CLI) answer always wins, a chat
//! answer never replaces an unclaimed one, an agent's own answer arrives
//! already seen. The stored spelling is the lowercase name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Through which door a human, an agent or the daemon itself acted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// The web Inbox, or `handoff reply` / `board annotate`: a human's
    /// answer that always wins. The default door of a human's write.
    #[default]
    Inbox,
    /// Chat (Telegram): never replaces an unclaimed answer.
    Chat,
    /// The agent, recording an answer given in its own terminal, or calling
    /// the API/MCP on its own behalf.
    Agent,
    /// The command line (actions, sessions, the ledger).
    Cli,
    /// The daemon itself: rules, recovery, expiry, deliveries.
    Daemon,
    /// An inbound wake webhook.
    Webhook,
}

impl Channel {
    /// Every channel, in the order help texts list them.
    pub const ALL: [Channel; 6] = [
        Channel::Inbox,
        Channel::Chat,
        Channel::Agent,
        Channel::Cli,
        Channel::Daemon,
        Channel::Webhook,
    ];

    /// The stored spelling (events, audit, JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Inbox => "inbox",
            Channel::Chat => "chat",
            Channel::Agent => "agent",
            Channel::Cli => "cli",
            Channel::Daemon => "daemon",
            Channel::Webhook => "webhook",
        }
    }

    /// Where an answer came from, in words (`in the Inbox`, …).
    pub fn door(self) -> &'static str {
        match self {
            Channel::Inbox => "in the Inbox",
            Channel::Chat => "in Telegram",
            Channel::Agent => "by the agent",
            Channel::Cli => "on the command line",
            Channel::Daemon | Channel::Webhook => "elsewhere",
        }
    }

    /// `name` when it is one of `allowed` (exactly, as a schema enum
    /// says), or a message naming the allowed spellings.
    pub fn one_of(name: &str, allowed: &[Channel]) -> Result<Channel, String> {
        allowed
            .iter()
            .copied()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|c| c.as_str()).collect();
                format!("`{name}` is not a channel here: use {}", names.join(" or "))
            })
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Channel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Channel::one_of(s, &Channel::ALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_channel_reads_back_from_its_stored_spelling() {
        for c in Channel::ALL {
            assert_eq!(c.as_str().parse::<Channel>(), Ok(c));
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        assert!("Inbox ".parse::<Channel>().is_err());
        let e = Channel::one_of("cli", &[Channel::Inbox, Channel::Chat]).unwrap_err();
        assert!(e.contains("use inbox or chat"), "{e}");
    }
}
