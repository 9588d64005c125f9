//! The timing settings an operator may tune through the environment, each
//! with its default and the bounds outside which it is refused: the role
//! lease (`HANDOFF_LEASE_MS`), the daemon's fallback poll of the event log
//! (`HANDOFF_WATCH_FALLBACK_MS`) and how long the CLI waits for the local
//! daemon's socket (`HANDOFF_SOCKET_PROBE_MS`). A value outside its bounds
//! is an error every command stops on ([`check`]), not a silent fallback:
//! a lease of 30 ms would make daemons trade roles many times a second.
//!
//! This module reads and checks; the modules that use each setting read it
//! through [`Setting::get`].

use std::time::Duration;

/// One timing setting read from the environment, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The environment variable.
    pub var: &'static str,
    /// Used when the variable is unset or empty.
    pub default: Duration,
    /// The smallest value taken.
    pub min_ms: u64,
    /// The largest value taken.
    pub max_ms: u64,
}

/// The role lease period (docs/deployment.md, "Several daemons on one database"):
/// a holder renews every third of it and a dead holder's job moves within
/// it.
/// Below a second the daemons would mostly renew leases; above a minute a
/// dead holder's chat stays silent for that long.
pub const LEASE: Setting = Setting {
    var: "HANDOFF_LEASE_MS",
    default: Duration::from_secs(6),
    min_ms: 1_000,
    max_ms: 60_000,
};

/// How often the daemon (and a command waiting on PostgreSQL) reads the
/// event log when nothing told it of a change (a missed inotify event, a
/// filesystem without them, a lost LISTEN session). Tests of
/// notifications set it to an hour.
pub const WATCH_FALLBACK: Setting = Setting {
    var: "HANDOFF_WATCH_FALLBACK_MS",
    default: Duration::from_secs(2),
    min_ms: 100,
    max_ms: 3_600_000,
};

/// How long the CLI waits for the local daemon to answer on its socket
/// before it uses the database file itself (more on a loaded host).
pub const SOCKET_PROBE: Setting = Setting {
    var: "HANDOFF_SOCKET_PROBE_MS",
    default: Duration::from_millis(50),
    min_ms: 10,
    max_ms: 10_000,
};

impl Setting {
    /// The value the environment gives, or the default; `Err` names the
    /// variable, its value and the bounds when it is not a number of
    /// milliseconds within them.
    pub fn read(&self) -> Result<Duration, String> {
        self.parse(std::env::var(self.var).ok().as_deref())
    }

    /// [`read`](Self::read) of the variable's value `v`.
    fn parse(&self, v: Option<&str>) -> Result<Duration, String> {
        let Some(v) = v.filter(|v| !v.trim().is_empty()) else {
            return Ok(self.default);
        };
        match v.trim().parse::<u64>() {
            Ok(ms) if (self.min_ms..=self.max_ms).contains(&ms) => Ok(Duration::from_millis(ms)),
            _ => Err(format!(
                "{}={v} is not a number of milliseconds in {}-{} (unset it for the default, {})",
                self.var,
                self.min_ms,
                self.max_ms,
                self.default.as_millis()
            )),
        }
    }

    /// [`read`](Self::read), or the default when the value is refused
    /// (every command refuses to start with one first: [`check`]).
    pub fn get(&self) -> Duration {
        self.read().unwrap_or(self.default)
    }
}

/// Every setting, checked before any command runs: each is read deep in
/// the code that uses it, where a refusal could only fall back quietly.
pub fn check() -> Result<(), String> {
    for s in [LEASE, WATCH_FALLBACK, SOCKET_PROBE] {
        s.read()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_taken_within_bounds_and_refused_outside() {
        let ms = Duration::from_millis;
        for (setting, value, want) in [
            (LEASE, None, Ok(ms(6_000))),
            (LEASE, Some(" "), Ok(ms(6_000))),
            (LEASE, Some("1000"), Ok(ms(1_000))),
            (LEASE, Some(" 60000 "), Ok(ms(60_000))),
            (LEASE, Some("999"), Err(())),
            (LEASE, Some("30"), Err(())),
            (LEASE, Some("60001"), Err(())),
            (LEASE, Some("-5"), Err(())),
            (LEASE, Some("1.5s"), Err(())),
            (WATCH_FALLBACK, Some("100"), Ok(ms(100))),
            (WATCH_FALLBACK, Some("3600000"), Ok(ms(3_600_000))),
            (WATCH_FALLBACK, Some("0"), Err(())),
            (SOCKET_PROBE, None, Ok(ms(50))),
            (SOCKET_PROBE, Some("10000"), Ok(ms(10_000))),
            (SOCKET_PROBE, Some("9"), Err(())),
        ] {
            let got = setting.parse(value);
            assert_eq!(
                got.clone().map_err(|_| ()),
                want,
                "{} = {value:?}",
                setting.var
            );
            if let Err(why) = got {
                let v = value.unwrap_or_default();
                assert!(why.starts_with(&format!("{}={v} ", setting.var)), "{why}");
                let bounds = format!("{}-{}", setting.min_ms, setting.max_ms);
                assert!(why.contains(&bounds), "{why}");
            }
        }
    }
}
