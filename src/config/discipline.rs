//! Notification discipline: `[[kinds]]`, a grace period
//! and a timeout per action kind, and quiet hours per chat. This module
//! parses and checks them and answers "how long", "until when"; the chat
//! bridge holds pushes back and the hooks take their timeout from here.
//!
//! Quiet hours use a fixed UTC offset, not a time-zone name: no time-zone
//! database is linked in, so a change to or from summer time means editing
//! `utc_offset`.

use serde::Deserialize;

/// `[[kinds]]`: settings for actions whose kind matches `match`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KindConfig {
    /// Action kind: exact, or a prefix ending in `*` (`claude.*`), as in
    /// `[[rule]]`.
    #[serde(rename = "match")]
    pub pattern: String,
    /// Do not push a matching action to chat until it has been pending
    /// this long; settled sooner, it is never pushed. 0 pushes at once.
    #[serde(default)]
    pub grace_secs: Option<u64>,
    /// How long a permission-prompt hook waits for a decision before it
    /// denies (fail closed), unless its `--timeout` / `HANDOFF_HOOK_TIMEOUT`
    /// says otherwise.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// The longest grace period (a day): longer is a typo, not discipline.
const MAX_GRACE: u64 = 86_400;
/// The longest hook timeout (a week).
const MAX_TIMEOUT: u64 = 7 * 86_400;

impl KindConfig {
    /// Whether this entry applies to actions of `kind`.
    pub fn matches(&self, kind: &str) -> bool {
        crate::store::actions::kind_matches(&self.pattern, kind)
    }

    /// What is wrong with the entry, in words naming the key.
    pub(super) fn check(&self) -> Result<(), String> {
        let p = self.pattern.trim();
        if p.is_empty() || p.trim_end_matches('*').contains('*') {
            return Err(format!(
                "[[kinds]] match = \"{}\" must be a kind, or a prefix ending in * (e.g. \"claude.*\")",
                self.pattern
            ));
        }
        let who = format!("[[kinds]] `{}`", self.pattern);
        if self.grace_secs.is_none() && self.timeout_secs.is_none() {
            return Err(format!(
                "{who} sets nothing: give grace_secs, timeout_secs or both"
            ));
        }
        if let Some(g) = self.grace_secs.filter(|g| *g > MAX_GRACE) {
            return Err(format!(
                "{who}: grace_secs must be 0 to {MAX_GRACE} seconds, not {g}"
            ));
        }
        if let Some(t) = self.timeout_secs.filter(|t| !(1..=MAX_TIMEOUT).contains(t)) {
            return Err(format!(
                "{who}: timeout_secs must be 1 to {MAX_TIMEOUT} seconds, not {t}"
            ));
        }
        Ok(())
    }
}

/// A chat's quiet hours: a daily window of local time at a fixed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    /// Start, in ms after local midnight.
    start: i64,
    /// End (exclusive), in ms after local midnight; before `start` when the
    /// window crosses midnight.
    end: i64,
    /// Local time minus UTC, in ms.
    offset: i64,
}

const DAY: i64 = 86_400_000;

impl QuietHours {
    /// Parse `quiet_hours = "22:00-07:00"` (`HH:MM` or `HH:MM:SS` each
    /// side) and `utc_offset = "+01:00"` (default UTC).
    pub fn parse(hours: &str, offset: Option<&str>) -> Result<QuietHours, String> {
        let shape = format!(
            "quiet_hours = \"{hours}\" is not a daily window like \"22:00-07:00\" (HH:MM-HH:MM, 24-hour)"
        );
        let (a, b) = hours.split_once('-').ok_or_else(|| shape.clone())?;
        let (start, end) = match (clock(a), clock(b)) {
            (Some(s), Some(e)) => (s, e),
            _ => return Err(shape),
        };
        if start == end {
            return Err(format!(
                "quiet_hours = \"{hours}\" starts and ends at the same time: give a window like \"22:00-07:00\""
            ));
        }
        let offset = match offset {
            None => 0,
            Some(o) => parse_offset(o).ok_or_else(|| {
                format!("utc_offset = \"{o}\" is not an offset like \"+01:00\" or \"-05:30\" (at most ±14:00)")
            })?,
        };
        Ok(QuietHours { start, end, offset })
    }

    /// When the quiet period `now` (ms since the epoch) falls in ends;
    /// `None` when `now` is not quiet.
    pub fn until(&self, now: i64) -> Option<i64> {
        let local = (now + self.offset).rem_euclid(DAY);
        let inside = if self.start < self.end {
            self.start <= local && local < self.end
        } else {
            local >= self.start || local < self.end
        };
        inside.then(|| now + (self.end - local).rem_euclid(DAY))
    }
}

/// `HH:MM` or `HH:MM:SS` as ms after midnight.
fn clock(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.trim().split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let n: Vec<i64> = parts
        .iter()
        .map(|p| {
            p.parse()
                .ok()
                .filter(|_| p.bytes().all(|c| c.is_ascii_digit()))
        })
        .collect::<Option<_>>()?;
    let (h, m, sec) = (n[0], n[1], n.get(2).copied().unwrap_or(0));
    (h < 24 && m < 60 && sec < 60).then_some(((h * 60 + m) * 60 + sec) * 1000)
}

/// `+HH:MM` / `-HH:MM` (or `Z`) as ms, at most ±14:00.
fn parse_offset(s: &str) -> Option<i64> {
    let s = s.trim();
    let ms = crate::clock::parse_utc_offset_ms(s)?;
    (s == "Z" || (s.len() == 6 && ms.abs() <= 14 * 3_600_000)).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn windows_cross_midnight_and_honour_the_offset() {
        let q = QuietHours::parse("22:00-07:00", None).unwrap();
        let day = 20_000 * DAY;
        assert_eq!(q.until(day + 23 * H), Some(day + DAY + 7 * H));
        assert_eq!(q.until(day + 3 * H), Some(day + 7 * H));
        assert_eq!(q.until(day + 7 * H), None, "the end is not quiet");
        assert_eq!(q.until(day + 12 * H), None);
        // At +02:00, 21:00 UTC is 23:00 local: quiet until 05:00 UTC.
        let q = QuietHours::parse("22:00-07:00", Some("+02:00")).unwrap();
        assert_eq!(q.until(day + 21 * H), Some(day + DAY + 5 * H));
        assert_eq!(q.until(day + 19 * H), None);
        let q = QuietHours::parse("12:00:00-12:00:30", Some("-05:30")).unwrap();
        let noon_local = day + 17 * H + H / 2;
        assert_eq!(q.until(noon_local + 1000), Some(noon_local + 30_000));
    }

    #[test]
    fn bad_windows_and_offsets_are_refused_by_name() {
        for bad in [
            "",
            "22:00",
            "22-07",
            "25:00-07:00",
            "22:00-07:60",
            "2:00-07:00",
            "22:00-22:00",
            "a:bc-07:00",
        ] {
            let e = QuietHours::parse(bad, None).unwrap_err();
            assert!(e.starts_with("quiet_hours"), "{bad}: {e}");
        }
        for bad in ["1", "+1", "+15:00", "01:00", "+01:00:00", "+ab:cd"] {
            let e = QuietHours::parse("22:00-07:00", Some(bad)).unwrap_err();
            assert!(e.starts_with("utc_offset"), "{bad}: {e}");
        }
        assert!(QuietHours::parse("22:00-07:00", Some("Z")).is_ok());
    }

    #[test]
    fn kinds_entries_must_say_something_sensible() {
        let k = |p: &str, g: Option<u64>, t: Option<u64>| KindConfig {
            pattern: p.into(),
            grace_secs: g,
            timeout_secs: t,
        };
        assert!(k("claude.*", Some(5), Some(600)).check().is_ok());
        assert!(k("deploy", Some(0), None).check().is_ok());
        for (bad, key) in [
            (k("", Some(1), None), "match"),
            (k("a*b", Some(1), None), "match"),
            (k("claude.*", None, None), "sets nothing"),
            (k("claude.*", None, Some(0)), "timeout_secs"),
            (k("claude.*", Some(86_401), None), "grace_secs"),
        ] {
            let e = bad.check().unwrap_err();
            assert!(e.contains(key), "{e}");
        }
    }
}
