//! An item's [`View`] as a Slack message: its text turned from Telegram's
//! HTML into Slack's mrkdwn, its buttons into Block Kit `actions` blocks
//! whose `value` is the same callback data Telegram's buttons carry. Pure:
//! nothing here calls Slack.

use slack_morphism::prelude::*;

use crate::chat::view::View;

/// Slack's limit on a section block's text, in characters.
const MAX_SECTION: usize = 3000;

/// Slack's limit on the elements of one `actions` block.
const MAX_ACTIONS: usize = 25;

/// The message content showing `view`: a section with its text, then one
/// `actions` block per row of buttons. The plain `text` is the
/// notification's fallback.
pub(crate) fn content(view: &View) -> SlackMessageContent {
    let text = mrkdwn(&view.text);
    let mut blocks = vec![SlackBlock::Section(
        SlackSectionBlock::new().with_text(md!(cut(&text, MAX_SECTION))),
    )];
    for (r, row) in view.buttons.iter().enumerate() {
        let elements: Vec<SlackActionBlockElement> = row
            .iter()
            .take(MAX_ACTIONS)
            .enumerate()
            .map(|(i, (label, cb))| {
                // Why the index in the id: Slack wants action ids unique
                // within a message; the meaning travels in `value`.
                SlackActionBlockElement::Button(
                    SlackBlockButtonElement::new(pt!(cut(&plain(label), 75)))
                        .with_action_id(format!("h{r}.{i}").into())
                        .with_value(cb.encode()),
                )
            })
            .collect();
        if !elements.is_empty() {
            blocks.push(SlackBlock::Actions(SlackActionsBlock::new(elements)));
        }
    }
    SlackMessageContent::new()
        .with_text(cut(&plain(&view.text), MAX_SECTION))
        .with_blocks(blocks)
}

/// Telegram HTML as Slack mrkdwn: bold, italics, code and quotes keep
/// their meaning; other tags go. Entities stay escaped: Slack escapes
/// `&`, `<` and `>` the same way.
pub(crate) fn mrkdwn(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut quoting = false;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('>') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let tag = &rest[open + 1..open + close];
        let name = tag.split_whitespace().next().unwrap_or("");
        match name {
            "b" | "/b" => out.push('*'),
            "i" | "/i" => out.push('_'),
            "code" | "/code" => out.push('`'),
            "pre" | "/pre" => out.push_str("```"),
            "blockquote" => {
                quoting = true;
                out.push_str("> ");
            }
            "/blockquote" => quoting = false,
            _ => {}
        }
        rest = &rest[open + close + 1..];
        if quoting {
            // Every line of a quote carries the marker in mrkdwn.
            let end = rest.find('<').unwrap_or(rest.len());
            out.push_str(&rest[..end].replace('\n', "\n> "));
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// Text with no markup at all (fallback texts, button labels): tags
/// dropped, entities read back.
pub(crate) fn plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut inside = false;
    for c in html.chars() {
        match c {
            '<' => inside = true,
            '>' if inside => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn cut(s: &str, n: usize) -> String {
    crate::chat::text::cut(s, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Callback, Item, Verb};

    #[test]
    fn telegram_html_reads_the_same_in_mrkdwn() {
        let cases = [
            ("<b>Deploy?</b> now", "*Deploy?* now"),
            ("<i>by</i> <code>a&lt;b</code>", "_by_ `a&lt;b`"),
            (
                "x\n<blockquote expandable>one\ntwo</blockquote>",
                "x\n> one\n> two",
            ),
            ("<pre>{}</pre>", "```{}```"),
            ("a < b", "a < b"),
        ];
        for (html, want) in cases {
            assert_eq!(mrkdwn(html), want, "{html}");
        }
        assert_eq!(plain("<b>a &amp; b</b> &lt;x&gt;"), "a & b <x>");
    }

    #[test]
    fn buttons_carry_their_callback_data() {
        let cb = Callback {
            item: Item::Action,
            id: "0".repeat(32),
            revision: 3,
            verb: Verb::Approve,
        };
        let view = View {
            text: "<b>t</b>".into(),
            buttons: vec![vec![("✅ Approve".into(), cb.clone())]],
            attachment: None,
        };
        let json = serde_json::to_value(content(&view)).expect("serialises");
        assert_eq!(json["blocks"][1]["type"], "actions");
        assert_eq!(json["blocks"][1]["elements"][0]["value"], cb.encode());
        assert_eq!(json["blocks"][0]["text"]["text"], "*t*");
        assert_eq!(json["text"], "t");
    }
}
