//! When a grant ends, from what a person typed: `for 2h` (or just `2h`),
//! `until 18:00`, `until 2026-12-01T18:00:00+01:00`. Pure functions, no
//! SQL, no clock of their own: the caller passes "now" from the store's
//! clock. A bare `HH:MM` has no time zone on the host, so it is read as
//! UTC unless an offset follows (`18:00+01:00`); the web Inbox sends the
//! person's local time with its offset.

use crate::clock::{format_rfc3339, parse_duration_ms, parse_rfc3339, parse_utc_offset_ms};

const DAY_MS: i64 = 86_400_000;

/// The end (ms) that `spec` gives at `now`, or why it gives none. A time
/// of day already past today is tomorrow's.
pub fn parse(spec: &str, now: i64) -> Result<i64, String> {
    let t = spec.trim();
    let bad = || {
        format!(
            "`{spec}` is not an end for a grant: give `for 2h` (30m, 1h, 7d …), `until 18:00` (UTC, or with an offset: 18:00+01:00) or `until 2026-12-01T18:00:00Z`"
        )
    };
    let end = if let Some(rest) = t.strip_prefix("until ") {
        until(rest.trim(), now).ok_or_else(bad)?
    } else {
        let d = t.strip_prefix("for ").unwrap_or(t).trim();
        let ms = parse_duration_ms(d).map_err(|_| bad())?;
        now.checked_add(ms).ok_or_else(bad)?
    };
    if end <= now {
        return Err(format!(
            "`{spec}` ends at {}, which is not after now: give a later end",
            format_rfc3339(end)
        ));
    }
    Ok(end)
}

/// `HH:MM[offset]` (the next such moment after `now`) or an RFC 3339 time.
fn until(s: &str, now: i64) -> Option<i64> {
    if let Ok(at) = parse_rfc3339(s) {
        return Some(at);
    }
    let (hm, offset_ms) = match s.find(['+', '-', 'Z']) {
        Some(i) => (&s[..i], parse_utc_offset_ms(&s[i..])?),
        None => (s, 0),
    };
    let (h, m) = hm.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..24).contains(&h) || !(0..60).contains(&m) || hm.len() > 5 {
        return None;
    }
    // The moment of HH:MM in that zone on the day of `now` there.
    let local_now = now + offset_ms;
    let day = local_now.div_euclid(DAY_MS) * DAY_MS;
    let mut at = day + (h * 60 + m) * 60_000 - offset_ms;
    if at <= now {
        at += DAY_MS;
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_from_words() {
        // 2026-12-01T10:00:00Z
        let now = parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
        let at = |s: &str| parse(s, now).map(format_rfc3339);
        assert_eq!(at("for 2h").unwrap(), "2026-12-01T12:00:00.000Z");
        assert_eq!(at("90m").unwrap(), "2026-12-01T11:30:00.000Z");
        assert_eq!(at("until 18:00").unwrap(), "2026-12-01T18:00:00.000Z");
        // Already past today: tomorrow's.
        assert_eq!(at("until 09:00").unwrap(), "2026-12-02T09:00:00.000Z");
        assert_eq!(at("until 18:00+01:00").unwrap(), "2026-12-01T17:00:00.000Z");
        assert_eq!(at("until 10:30-0500").unwrap(), "2026-12-01T15:30:00.000Z");
        assert_eq!(
            at("until 2026-12-03T08:00:00Z").unwrap(),
            "2026-12-03T08:00:00.000Z"
        );
        for bad in [
            "",
            "soon",
            "for",
            "until 25:00",
            "until 18:61",
            "for -1h",
            "until 2026-11-01T00:00:00Z",
            "0s",
        ] {
            assert!(parse(bad, now).is_err(), "{bad}");
        }
        assert!(
            parse("until 2026-11-01T00:00:00Z", now)
                .unwrap_err()
                .contains("not after now")
        );
    }
}
