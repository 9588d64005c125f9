//! What the tests read of a chat message, on either fake network: its
//! text and its buttons. Checks written once over [`ChatMsg`] hold for a
//! Telegram message and a Slack one alike.
#![allow(dead_code)]

use std::collections::HashMap;

/// A message a fake network holds.
pub trait ChatMsg: std::fmt::Debug {
    /// Its text (Telegram's HTML, Slack's plain fallback text).
    fn body(&self) -> &str;
    /// Every button: (label, the data it carries).
    fn button_list(&self) -> Vec<(String, String)>;
    /// How a failure names it (a message id, a `ts`).
    fn name(&self) -> String;
}

impl ChatMsg for super::fake_telegram::Msg {
    fn body(&self) -> &str {
        &self.text
    }
    fn button_list(&self) -> Vec<(String, String)> {
        self.buttons()
    }
    fn name(&self) -> String {
        self.message_id.to_string()
    }
}

impl ChatMsg for super::fake_slack::Msg {
    fn body(&self) -> &str {
        &self.text
    }
    fn button_list(&self) -> Vec<(String, String)> {
        self.buttons()
    }
    fn name(&self) -> String {
        self.ts.clone()
    }
}

/// A burst of 7 items (`Burst item 0` … `6`) to one chat: each shown in
/// exactly one message, 5 cards and one digest listing the other 2,
/// without buttons.
pub fn check_burst<M: ChatMsg>(msgs: &[M]) {
    let mut shown: HashMap<usize, usize> = HashMap::new();
    for m in msgs {
        for i in 0..7 {
            if m.body().contains(&format!("Burst item {i}")) {
                *shown.entry(i).or_default() += 1;
            }
        }
    }
    for i in 0..7 {
        assert_eq!(
            shown.get(&i).copied(),
            Some(1),
            "Burst item {i} in exactly one message: {msgs:#?}"
        );
    }
    let digests: Vec<&M> = msgs
        .iter()
        .filter(|m| m.body().contains("new items"))
        .collect();
    assert_eq!(digests.len(), 1, "one digest: {msgs:#?}");
    assert!(
        digests[0].body().contains("2 new items"),
        "{}",
        digests[0].body()
    );
    assert!(
        digests[0].button_list().is_empty(),
        "a digest has no buttons"
    );
    assert_eq!(msgs.len(), 6, "5 cards + 1 digest: {msgs:#?}");
}
