//! Turning an audio file into text with the configured transcriber: a
//! `command` (the file's path appended; its standard output is the text)
//! or an OpenAI-compatible `url`. Every failure comes back as one line
//! saying what went wrong, for the chat; the audio goes nowhere else.

use std::path::Path;
use std::time::Duration;

use crate::config::voice::VoiceConfig;

/// The longest transcript taken (Telegram's messages hold 4,096
/// characters, and the transcript is shown back in one).
const MAX_CHARS: usize = 3500;

/// The transcript of `audio`, or why there is none.
pub(super) async fn transcribe(cfg: &VoiceConfig, audio: &Path) -> Result<String, String> {
    let limit = Duration::from_secs(cfg.timeout_secs);
    match (&cfg.command, &cfg.url) {
        (Some(cmd), _) => by_command(cmd, cfg, audio, limit).await,
        (None, Some(url)) => by_url(url, cfg, audio, limit).await,
        (None, None) => Err("voice replies are off (no [voice] command or url)".into()),
    }
}

async fn by_command(
    cmd: &str,
    cfg: &VoiceConfig,
    audio: &Path,
    limit: Duration,
) -> Result<String, String> {
    let mut c = tokio::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("{cmd} \"$@\""))
        .arg("handoff-voice")
        .arg(audio)
        .env("HANDOFF_VOICE_FILE", audio)
        .env("HANDOFF_VOICE_LANGUAGE", &cfg.language)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // Its own process group, so a timeout ends the programs it started
        // too (a converter piped into a recogniser), not only the shell.
        .process_group(0)
        .kill_on_drop(true);
    let child = c
        .spawn()
        .map_err(|e| format!("the transcriber could not be started ({e})"))?;
    let pid = child.id();
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Err(format!(
                "the transcriber took longer than {}s ([voice] timeout_secs)",
                limit.as_secs()
            ))
        }
        Ok(Err(e)) => Err(format!("the transcriber could not be run ({e})")),
        Ok(Ok(out)) if !out.status.success() => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty());
            Err(format!(
                "the transcriber failed ({}){}",
                out.status,
                last.map(|l| format!(": {}", super::super::text::cut(l.trim(), 200)))
                    .unwrap_or_default()
            ))
        }
        Ok(Ok(out)) => clean(&out.stdout),
    }
}

async fn by_url(
    url: &str,
    cfg: &VoiceConfig,
    audio: &Path,
    limit: Duration,
) -> Result<String, String> {
    let bytes = tokio::fs::read(audio)
        .await
        .map_err(|e| format!("the audio file cannot be read ({e})"))?;
    let name = audio
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "voice.ogg".into());
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name(name)
        .mime_str("audio/ogg")
        .map_err(|e| format!("cannot build the upload ({e})"))?;
    let mut form = reqwest::multipart::Form::new()
        .part("file", part)
        .text("model", cfg.model.clone())
        .text("response_format", "json");
    if !cfg.language.is_empty() {
        form = form.text("language", cfg.language.clone());
    }
    let client = reqwest::Client::builder()
        .timeout(limit)
        .build()
        .map_err(|e| format!("cannot start an HTTP client ({e})"))?;
    let mut req = client.post(url).multipart(form);
    if !cfg.key.is_empty() {
        req = req.bearer_auth(cfg.key.expose());
    }
    let late = || {
        format!(
            "the transcription service took longer than {}s ([voice] timeout_secs)",
            limit.as_secs()
        )
    };
    let resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            late()
        } else {
            format!(
                "the transcription service cannot be reached ({})",
                crate::one_line(&e)
            )
        }
    })?;
    let status = resp.status();
    let body = resp.text().await.map_err(|e| {
        if e.is_timeout() {
            late()
        } else {
            format!(
                "the transcription service's answer broke off ({})",
                crate::one_line(&e)
            )
        }
    })?;
    if !status.is_success() {
        return Err(format!("the transcription service answered {status}"));
    }
    let v: serde_json::Value = serde_json::from_str(&body)
        .map_err(|_| "the transcription service's answer is not JSON with a `text`".to_string())?;
    let text = v["text"]
        .as_str()
        .ok_or_else(|| "the transcription service's answer has no `text`".to_string())?;
    clean(text.as_bytes())
}

/// The transcript from a transcriber's output: one line of words, or why
/// the output is not one (empty, not text, no words, too long).
pub(super) fn clean(out: &[u8]) -> Result<String, String> {
    let s = std::str::from_utf8(out)
        .map_err(|_| "the transcriber's output is not text (not UTF-8)".to_string())?;
    if s.chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err("the transcriber's output is not text (control characters)".into());
    }
    let t = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.is_empty() {
        return Err("the transcriber heard no words (its output was empty)".into());
    }
    if !t.chars().any(char::is_alphanumeric) {
        return Err("the transcriber's output has no words in it".into());
    }
    if t.chars().count() > MAX_CHARS {
        return Err(format!(
            "the transcript is over {MAX_CHARS} characters: send a shorter note"
        ));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn output_becomes_one_line_of_words_or_a_reason() {
        assert_eq!(clean(b"  yes go\n ahead \n").unwrap(), "yes go ahead");
        for (out, why) in [
            (&b""[..], "empty"),
            (b" \n\t", "empty"),
            (b"\xff\xfe", "UTF-8"),
            (b"ok\x00\x01", "control"),
            (b"... !!", "no words"),
        ] {
            let e = clean(out).unwrap_err();
            assert!(e.contains(why), "{out:?}: {e}");
        }
        assert!(
            clean("a ".repeat(2000).as_bytes())
                .unwrap_err()
                .contains("over")
        );
    }
}
