//! Wall-clock time for everything the store writes.
//!
//! Every stored "now" (created_at, replied_at, expires_at, …) comes from a
//! [`Clock`], so tests can pin time with [`ManualClock`] and exercise
//! same-millisecond ties and TTL edges. Durations and timeouts do *not* use
//! this module: they use `tokio::time`, which tests can pause.
//!
//! Also here: RFC 3339 formatting and parsing of millisecond timestamps (by
//! chrono), the JSON representation of every time the store holds.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

/// A source of "now", in milliseconds since the Unix epoch (UTC).
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            // A clock set before 1970 is a broken machine; 0 keeps ordering sane.
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to. For tests.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `ms`.
    pub fn new(ms: i64) -> Self {
        Self(AtomicI64::new(ms))
    }
    /// Put the clock at `ms` (backwards is allowed: tests need it).
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    /// Move the clock by `delta_ms` (may be negative).
    pub fn advance(&self, delta_ms: i64) {
        self.0.fetch_add(delta_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Format milliseconds since the epoch as RFC 3339 UTC, e.g.
/// `2026-11-29T11:03:41.123Z`. (Beyond chrono's range, ±262,000 years, the
/// nearest representable instant.)
pub fn format_rfc3339(ms: i64) -> String {
    let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or(if ms < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    });
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parse an RFC 3339 timestamp (`2026-11-29T11:03:41Z`, with optional
/// fraction and `±hh:mm` offset) or a bare date (`2026-11-29`, midnight UTC)
/// into milliseconds since the epoch. A date that does not exist
/// (`2026-02-30`) is refused, not rolled over.
pub fn parse_rfc3339(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
        .ok_or_else(|| format!("`{s}` is not a date: use 2026-11-29 or 2026-11-29T10:00:00Z"))
}

/// Parse a duration such as `90s`, `15m`, `24h`, `7d`, `500ms` or a bare
/// number of seconds into milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    let bad = || format!("`{s}` is not a duration: use e.g. 30s, 15m, 24h or 7d");
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    // Exactly the grammar the API's schema states for durations: a number
    // of at most 9 digits without leading zeros, then an optional unit.
    if n.is_empty() || n.len() > 9 || (n.len() > 1 && n.starts_with('0')) {
        return Err(bad());
    }
    let n: i64 = n.parse().map_err(|_| bad())?;
    let mult = match unit {
        "" | "s" | "sec" | "secs" => 1000,
        "ms" => 1,
        "m" | "min" | "mins" => 60_000,
        "h" | "hr" | "hrs" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// A UTC offset, `Z`, `±HH:MM` or `±HHMM`, in ms east of UTC (hours
/// under 24, minutes under 60).
pub fn parse_utc_offset_ms(s: &str) -> Option<i64> {
    if s == "Z" {
        return Some(0);
    }
    let (sign, rest) = match s.as_bytes() {
        [b'+', rest @ ..] => (1, rest),
        [b'-', rest @ ..] => (-1, rest),
        _ => return None,
    };
    let (h, m) = match rest {
        [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => ([*h1, *h2], [*m1, *m2]),
        _ => return None,
    };
    let two = |d: [u8; 2]| {
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| i64::from(d[0] - b'0') * 10 + i64::from(d[1] - b'0'))
    };
    let (h, m) = (two(h)?, two(m)?);
    (h < 24 && m < 60).then_some(sign * (h * 60 + m) * 60_000)
}

/// A duration in words people read at a glance: `40 s`, `3 min`, `2 h`, `5 d`.
pub fn how_long(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..5400 => format!("{} min", s / 60),
        5400..129_600 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

/// Serde helpers: milliseconds in Rust, RFC 3339 strings in JSON.
pub mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialize milliseconds as RFC 3339.
    pub fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_rfc3339(*ms))
    }

    /// Deserialize RFC 3339 into milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_rfc3339(&s).map_err(serde::de::Error::custom)
    }

    /// The same for `Option<i64>` (`null` when absent).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        /// Serialize optional milliseconds as RFC 3339 or `null`.
        pub fn serialize<S: Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
            match ms {
                Some(ms) => s.serialize_str(&crate::clock::format_rfc3339(*ms)),
                None => s.serialize_none(),
            }
        }

        /// Deserialize RFC 3339 or `null` into optional milliseconds.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
            let s = Option::<String>::deserialize(d)?;
            s.map(|s| crate::clock::parse_rfc3339(&s).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

/// A timestamp field's JSON form, codec and schema in one: a field kept
/// as milliseconds takes `#[serde(with = "crate::clock::Timestamp")]`,
/// which serde reads as the [`rfc3339`] codec below and schemars as this
/// type's schema (RFC 3339 text), so the two cannot drift apart.
pub struct Timestamp;

impl Timestamp {
    /// Serialize milliseconds as RFC 3339.
    pub fn serialize<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        rfc3339::serialize(ms, s)
    }

    /// Deserialize RFC 3339 into milliseconds.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        rfc3339::deserialize(d)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "RFC 3339, UTC"})
    }
}

/// [`Timestamp`] for an optional field (`null` when absent):
/// `#[serde(with = "crate::clock::MaybeTimestamp")]`.
pub struct MaybeTimestamp;

impl MaybeTimestamp {
    /// Serialize optional milliseconds as RFC 3339 or `null`.
    pub fn serialize<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        rfc3339::option::serialize(ms, s)
    }

    /// Deserialize RFC 3339 or `null` into optional milliseconds.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        rfc3339::option::deserialize(d)
    }
}

impl schemars::JsonSchema for MaybeTimestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Option<Timestamp>>::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        <Option<Timestamp>>::schema_id()
    }

    fn inline_schema() -> bool {
        <Option<Timestamp>>::inline_schema()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<Timestamp>>::json_schema(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_offsets_read_in_both_spellings_and_nothing_else() {
        assert_eq!(parse_utc_offset_ms("Z"), Some(0));
        assert_eq!(parse_utc_offset_ms("+01:00"), Some(3_600_000));
        assert_eq!(parse_utc_offset_ms("-0530"), Some(-19_800_000));
        assert_eq!(parse_utc_offset_ms("+23:59"), Some(86_340_000));
        for bad in [
            "",
            "+",
            "01:00",
            "+24:00",
            "+01:60",
            "+1:00",
            "+01:0",
            "+0:100",
            "+01:00:00",
            "+é:00",
            "+0é00",
        ] {
            assert_eq!(parse_utc_offset_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn rfc3339_round_trips() {
        for ms in [
            0,
            1,
            999,
            1_649_367_553_000,
            1_796_000_000_123,
            951_782_400_000,
        ] {
            assert_eq!(parse_rfc3339(&format_rfc3339(ms)).unwrap(), ms, "{ms}");
        }
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn parses_dates_offsets_and_rejects_junk() {
        assert_eq!(parse_rfc3339("1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00").unwrap(), 0);
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00.5Z").unwrap(), 500);
        assert_eq!(parse_rfc3339("1970-01-01 00:00:01z").unwrap(), 1000);
        assert_eq!(parse_rfc3339(" 2026-11-29 ").unwrap(), 1_795_910_400_000);
        for junk in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-11-29T25:00:00Z",
            "2026-11-29T10:00",
            "2026-02-30",
            "2026-02-29T10:00:00Z",
        ] {
            assert!(parse_rfc3339(junk).is_err(), "{junk}");
        }
    }

    #[test]
    fn durations_read_at_a_glance() {
        for (ms, want) in [
            (-5, "0 s"),
            (40_000, "40 s"),
            (180_000, "3 min"),
            (2 * 3_600_000, "2 h"),
            (5 * 86_400_000, "5 d"),
        ] {
            assert_eq!(how_long(ms), want, "{ms}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("24h").unwrap(), 86_400_000);
        assert_eq!(parse_duration_ms("90").unwrap(), 90_000);
        assert_eq!(parse_duration_ms("250ms").unwrap(), 250);
        assert_eq!(parse_duration_ms("7d").unwrap(), 604_800_000);
        assert!(parse_duration_ms("soon").is_err());
        assert!(parse_duration_ms("5 parsecs").is_err());
        for off_grammar in ["", "30 s", " 30s", "030s", "1234567890s", "s"] {
            assert!(parse_duration_ms(off_grammar).is_err(), "{off_grammar:?}");
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(10);
        assert_eq!(c.now_ms(), 10);
        c.advance(5);
        assert_eq!(c.now_ms(), 15);
        c.set(3);
        assert_eq!(c.now_ms(), 3);
    }
}
