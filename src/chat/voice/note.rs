//! What a transcript's buttons and a voice message carry, read without
//! anything else of the bridge (the dispatcher asks it first).

use teloxide::types::Message;

/// What a Send / Edit / Discard button asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tap {
    Send,
    Edit,
    Discard,
}

/// The callback data of a transcript's button: `v|s|<32-hex id>` (at most
/// 37 bytes).
pub(super) fn data(tap: Tap, id: &str) -> String {
    let v = match tap {
        Tap::Send => "s",
        Tap::Edit => "e",
        Tap::Discard => "d",
    };
    format!("v|{v}|{id}")
}

/// A transcript button's meaning, or `None` for other buttons.
pub(crate) fn tap_of(data: &str) -> Option<(Tap, &str)> {
    let mut parts = data.split('|');
    let (k, v, id) = (parts.next()?, parts.next()?, parts.next()?);
    if k != "v" || parts.next().is_some() {
        return None;
    }
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tap = match v {
        "s" => Tap::Send,
        "e" => Tap::Edit,
        "d" => Tap::Discard,
        _ => return None,
    };
    Some((tap, id))
}

/// The audio a message carries: a voice note or an audio file.
pub(crate) struct Note {
    pub(super) file_id: String,
    pub(super) duration: u32,
    /// Telegram's size, when it gave one.
    pub(super) size: Option<u32>,
}

/// The note in `m`, if it carries one.
pub(crate) fn note_of(m: &Message) -> Option<Note> {
    let (file, duration) = match (m.voice(), m.audio()) {
        (Some(v), _) => (&v.file, v.duration),
        (None, Some(a)) => (&a.file, a.duration),
        (None, None) => return None,
    };
    Some(Note {
        file_id: file.id.0.clone(),
        duration: duration.seconds(),
        // teloxide fills a missing size with u32::MAX.
        size: (file.size != u32::MAX).then_some(file.size),
    })
}
