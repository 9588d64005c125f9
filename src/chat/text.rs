//! Text helpers for chat messages: Telegram-HTML escaping, cutting to a
//! length, quoting a context.
//!
//! Texts use Telegram's HTML parse mode (for the collapsed context), so
//! every user-supplied string goes through [`esc`]. Parts are cut before
//! escaping so a message stays under 4096 characters without ever cutting a
//! tag in half.

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

pub(super) fn by(who: &str) -> String {
    if who.is_empty() {
        String::new()
    } else {
        format!(" by {}", esc(who))
    }
}

/// Collapsed context under an item's text: a newline and an expandable
/// quote of `s` cut to `n` characters, or nothing when `s` is empty.
pub(super) fn quote(s: &str, n: usize) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("\n<blockquote expandable>{}</blockquote>", esc(&cut(s, n)))
    }
}
