//! `[voice]`: how voice notes sent in chat are turned into text. handoff
//! has no recogniser of its own: either a `command` (a program given the
//! audio file's path that prints the transcript) or a `url` (an
//! OpenAI-compatible `/v1/audio/transcriptions` endpoint). Neither set:
//! voice replies are off and the bot says how to turn them on.

use std::path::PathBuf;

use serde::Deserialize;

use super::Secret;

/// Telegram's Bot API serves files up to 20 MB to bots.
pub const TELEGRAM_MAX_BYTES: u64 = 20 * 1024 * 1024;

/// `[voice]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceConfig {
    /// A shell command line; the audio file's path is appended as its last
    /// argument (and is in `$HANDOFF_VOICE_FILE`, the language in
    /// `$HANDOFF_VOICE_LANGUAGE`). Its standard output is the transcript.
    #[serde(default)]
    pub command: Option<String>,
    /// An OpenAI-compatible transcription endpoint, the whole URL
    /// (`http://127.0.0.1:8080/v1/audio/transcriptions`).
    #[serde(default)]
    pub url: Option<String>,
    /// Its API key, sent as `Authorization: Bearer …` (or
    /// `HANDOFF_VOICE_KEY`, which wins).
    #[serde(default)]
    pub key: Secret,
    /// The model the endpoint is asked for.
    #[serde(default = "default_model")]
    pub model: String,
    /// The spoken language (ISO 639-1, `en`), passed on; empty: the
    /// transcriber's own default or guess.
    #[serde(default)]
    pub language: String,
    /// How long one transcription may take (seconds).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// The longest voice note taken (seconds, as Telegram reports it).
    #[serde(default = "default_max_duration")]
    pub max_duration_secs: u64,
    /// The largest audio file downloaded (bytes; at most Telegram's 20 MB).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// How long a transcript waits for Send / Edit / Discard (seconds).
    #[serde(default = "default_expire")]
    pub expire_secs: u64,
    /// Keep the audio files after transcription (in `dir`); by default
    /// each is deleted once transcribed.
    #[serde(default)]
    pub keep: bool,
    /// Where audio files are written while transcribed (default: the
    /// system's temporary directory, `handoff-voice`).
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

fn default_model() -> String {
    "whisper-1".into()
}
fn default_timeout() -> u64 {
    60
}
fn default_max_duration() -> u64 {
    300
}
fn default_max_bytes() -> u64 {
    TELEGRAM_MAX_BYTES
}
fn default_expire() -> u64 {
    600
}

impl Default for VoiceConfig {
    fn default() -> Self {
        VoiceConfig {
            command: None,
            url: None,
            key: Secret::default(),
            model: default_model(),
            language: String::new(),
            timeout_secs: default_timeout(),
            max_duration_secs: default_max_duration(),
            max_bytes: default_max_bytes(),
            expire_secs: default_expire(),
            keep: false,
            dir: None,
        }
    }
}

impl VoiceConfig {
    /// Whether a transcriber is configured.
    pub fn is_on(&self) -> bool {
        self.command.is_some() || self.url.is_some()
    }

    /// Where audio files go.
    pub fn dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("handoff-voice"))
    }

    /// What parsing cannot check.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.command.is_some() && self.url.is_some() {
            return Err(
                "[voice] sets both `command` and `url`: keep the one transcriber to use".into(),
            );
        }
        if self.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err("[voice] command is empty: give the program that prints the transcript of the audio file it is given, or remove the key".into());
        }
        if let Some(u) = &self.url {
            match url::Url::parse(u) {
                Ok(p) if matches!(p.scheme(), "http" | "https") => {}
                _ => {
                    return Err(format!(
                        "[voice] url `{u}` is not an http(s) URL: give the whole endpoint, e.g. http://127.0.0.1:8080/v1/audio/transcriptions"
                    ));
                }
            }
        }
        if self.timeout_secs == 0 || self.timeout_secs > 3600 {
            return Err("[voice] timeout_secs must be between 1 and 3600".into());
        }
        if self.max_duration_secs == 0 {
            return Err("[voice] max_duration_secs must be at least 1".into());
        }
        if self.max_bytes == 0 || self.max_bytes > TELEGRAM_MAX_BYTES {
            return Err(format!(
                "[voice] max_bytes must be between 1 and {TELEGRAM_MAX_BYTES} (Telegram serves bots files up to 20 MB)"
            ));
        }
        if self.expire_secs == 0 {
            return Err("[voice] expire_secs must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<VoiceConfig, String> {
        let v: VoiceConfig = toml::from_str(s).map_err(|e| e.to_string())?;
        v.check().map(|_| v)
    }

    #[test]
    fn defaults_are_off_with_ten_minutes_to_confirm() {
        let v = parse("").unwrap();
        assert!(!v.is_on());
        assert_eq!(v.expire_secs, 600);
        assert_eq!(v.max_bytes, TELEGRAM_MAX_BYTES);
    }

    #[test]
    fn bad_settings_are_refused_in_words() {
        for (s, want) in [
            (
                "command = \"x\"\nurl = \"http://h/v1/audio/transcriptions\"",
                "both",
            ),
            ("command = \" \"", "empty"),
            ("url = \"ftp://h\"", "not an http"),
            ("timeout_secs = 0", "timeout_secs"),
            ("max_bytes = 30000000", "20 MB"),
            ("expire_secs = 0", "expire_secs"),
            ("commands = \"x\"", "unknown field"),
        ] {
            let e = parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
        assert!(
            parse("url = \"http://127.0.0.1:1/v1/audio/transcriptions\"")
                .unwrap()
                .is_on()
        );
    }
}
