//! Voice replies through the real daemon, the real teloxide client and the
//! fake Bot API (which serves the audio by `getFile` and its download
//! URL): a real recogniser (speech from `espeak-ng`, OGG/Opus from
//! `ffmpeg`, Debian's `pocketsphinx` through `[voice] command`), a fake
//! OpenAI-compatible transcription service with faults, commands that
//! fail, a restart between transcription and Send, and the rule that an
//! unread Inbox answer wins.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::daemon::{Daemon, FAULTS_OK, write_config};
use common::fake_telegram::{FakeTelegram, Fault, Msg};
use common::{TempDb, json};

const ME: i64 = 111;

/// The phrase the real-recogniser test speaks. Of the phrases tried
/// ("use postgres", "please run the tests", "deploy on monday", "the
/// answer is yes", …) this is the one pocketsphinx's packaged English
/// model hears word for word from espeak-ng's `en-us` voice at 120–140
/// words a minute, run after run (at 110 it hears "yes go on head").
const PHRASE: &str = "yes go ahead";

/// Debian's pocketsphinx 0.8 reads 16 kHz mono audio from a file; the
/// note comes as OGG/Opus, so ffmpeg converts it first (README, `[voice]`).
const POCKETSPHINX: &str = r#"sh -c 'ffmpeg -loglevel error -y -i "$1" -ar 16000 -ac 1 "$1.wav" && pocketsphinx_continuous -infile "$1.wav" -logfn /dev/null; s=$?; rm -f "$1.wav"; exit $s' sh"#;

fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "this test needs `{tool}` (Debian: espeak-ng, ffmpeg, pocketsphinx, pocketsphinx-en-us); ./test installs them"
    );
}

/// `text` spoken by espeak-ng and encoded as Telegram sends a voice note
/// (OGG/Opus).
fn speak(dir: &Path, text: &str) -> Vec<u8> {
    need("espeak-ng");
    need("ffmpeg");
    let wav = dir.join("spoken.wav");
    let ogg = dir.join("spoken.ogg");
    let ok = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "130", "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .unwrap();
    assert!(ok.success(), "espeak-ng failed");
    let ok = Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y", "-i"])
        .arg(&wav)
        .args(["-c:a", "libopus", "-b:a", "24k"])
        .arg(&ogg)
        .status()
        .unwrap();
    assert!(ok.success(), "ffmpeg failed");
    std::fs::read(&ogg).unwrap()
}

async fn setup(voice: &str) -> (TempDb, FakeTelegram, Daemon, PathBuf) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let audio = db.dir.path().join("audio");
    let extra = format!(
        "\n[voice]\ndir = {:?}\n{voice}\n",
        audio.display().to_string()
    );
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        &extra,
    );
    let daemon = Daemon::start(&db.path, &cfg);
    (db, fake, daemon, audio)
}

fn ask(db: &TempDb, args: &[&str]) -> String {
    let mut a = vec!["--json", "ask"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    json(&out)["question"]["id"].as_str().unwrap().to_string()
}

async fn message_of(fake: &FakeTelegram, id: &str) -> Msg {
    let short = id[id.len() - 8..].to_string();
    fake.until(30, "the question's message", |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains(&short) && !m.buttons().is_empty())
    })
    .await
}

/// The transcript message the bot shows for question `id` (with buttons).
async fn transcript_of(fake: &FakeTelegram, id: &str, secs: u64) -> Msg {
    let short = id[id.len() - 8..].to_string();
    fake.until(secs, "the transcript with Send / Edit / Discard", |f| {
        f.messages(ME).into_iter().find(|m| {
            m.text.contains("Transcript") && m.text.contains(&short) && !m.buttons().is_empty()
        })
    })
    .await
}

/// The first text sent after `from` (an index into `sent_texts`) that contains `what`.
async fn said_after(fake: &FakeTelegram, from: usize, what: &str, secs: u64) -> String {
    fake.until(secs, what, |f| {
        f.sent_texts(ME)
            .get(from..)
            .and_then(|new| new.iter().find(|t| t.contains(what)).cloned())
    })
    .await
}

fn show(db: &TempDb, id: &str) -> serde_json::Value {
    json(&db.cli(&["--json", "show", id]))
}

fn voice_replies(v: &serde_json::Value) -> usize {
    v["replies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["medium"] == "voice")
        .count()
}

#[tokio::test]
async fn a_spoken_answer_is_transcribed_by_pocketsphinx_and_reaches_the_waiting_agent() {
    need("pocketsphinx_continuous");
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    assert!(
        readme.contains(POCKETSPHINX),
        "docs/configuration.md shows the recipe this test runs"
    );
    let (db, fake, _d, audio) = setup(&format!(
        "command = '''{POCKETSPHINX}'''\ntimeout_secs = 120"
    ))
    .await;
    fake.add_file("spoken", speak(db.dir.path(), PHRASE));
    let id = ask(&db, &["--session", "phone-1", "Deploy the release now?"]);
    let waiter = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "wait",
            "--session",
            "phone-1",
            "--timeout",
            "120s",
            "--json",
        ])
        .env("HANDOFF_DB", &db.path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let msg = message_of(&fake, &id).await;

    fake.send_voice(ME, ME, "spoken", 2, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &id, 120).await;
    let words = t.text.to_lowercase();
    assert!(words.contains("«yes go ahead»"), "{words}");
    // Nothing is sent unseen: the question has no reply until Send.
    assert!(show(&db, &id)["question"]["reply"].is_null());
    assert_eq!(fake.downloads("spoken"), 1);
    // The audio was deleted once transcribed.
    let left: Vec<_> = std::fs::read_dir(&audio).unwrap().collect();
    assert!(left.is_empty(), "audio kept: {left:?}");

    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let arrived = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        arrived.contains("yes go ahead") && arrived.contains(&id),
        "{arrived}"
    );
    let v = show(&db, &id);
    assert_eq!(v["question"]["reply"]["text"], "yes go ahead", "{v}");
    assert_eq!(v["question"]["reply"]["medium"], "voice", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "chat", "{v}");
    assert_eq!(voice_replies(&v), 1, "{v}");
    fake.until(30, "the transcript settled as sent", |f| {
        f.message(ME, t.message_id)
            .filter(|m| m.text.contains("Sent as your answer") && m.buttons().is_empty())
    })
    .await;
}

/// What the fake transcription service does with the next request.
#[derive(Clone, Debug)]
enum Mode {
    Text(&'static str),
    Slow(Duration),
    Status500,
    Empty,
    NotJson,
}

/// A fake OpenAI-compatible `/v1/audio/transcriptions` on 127.0.0.1:0;
/// the URL, the mode switch and the requests' bodies seen.
async fn transcription_service() -> (String, Arc<Mutex<Mode>>, Arc<Mutex<Vec<String>>>) {
    use axum::extract::State;
    use axum::response::IntoResponse;
    type St = (Arc<Mutex<Mode>>, Arc<Mutex<Vec<String>>>);
    async fn transcribe(
        State((mode, seen)): State<St>,
        headers: axum::http::HeaderMap,
        body: axum::body::Bytes,
    ) -> axum::response::Response {
        let head = String::from_utf8_lossy(&body[..body.len().min(2000)]).to_string();
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        seen.lock().unwrap().push(format!("{auth}\n{head}"));
        let m = mode.lock().unwrap().clone();
        match m {
            Mode::Text(t) => axum::Json(serde_json::json!({ "text": t })).into_response(),
            Mode::Slow(d) => {
                tokio::time::sleep(d).await;
                axum::Json(serde_json::json!({ "text": "too late" })).into_response()
            }
            Mode::Status500 => {
                (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
            }
            Mode::Empty => axum::Json(serde_json::json!({ "text": "  " })).into_response(),
            Mode::NotJson => "<html>oops</html>".into_response(),
        }
    }
    let mode = Arc::new(Mutex::new(Mode::Text("use postgres")));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/audio/transcriptions", axum::routing::post(transcribe))
        .with_state((mode.clone(), seen.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/audio/transcriptions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, mode, seen)
}

#[tokio::test]
async fn each_transcription_service_failure_is_one_line_and_holds_up_no_other_tap() {
    let (url, mode, seen) = transcription_service().await;
    let (db, fake, _d, _) = setup(&format!(
        "url = \"{url}\"\nkey = \"sk-test\"\nlanguage = \"en\"\ntimeout_secs = 3\nmax_duration_secs = 60\nmax_bytes = 1000000"
    ))
    .await;
    fake.add_file("note", b"OggS fake opus".to_vec());
    let id = ask(&db, &["Which database?"]);
    let other = ask(&db, &["Ship it?", "--option", "yes", "--option", "no"]);
    let msg = message_of(&fake, &id).await;
    let other_msg = message_of(&fake, &other).await;

    // Slow: while the transcription waits, the other item's tap is
    // answered at once (the transcription is off the update loop).
    *mode.lock().unwrap() = Mode::Slow(Duration::from_secs(8));
    let before = fake.sent_texts(ME).len();
    fake.send_voice(ME, ME, "note", 3, Some(msg.message_id), None, None);
    fake.until(10, "the request at the service", |_| {
        (!seen.lock().unwrap().is_empty()).then_some(())
    })
    .await;
    fake.tap(ME, ME, other_msg.message_id, &other_msg.button("Clarify"));
    fake.until(5, "the other item's toast", |f| {
        f.toasts().into_iter().find(|t| t.contains("correction"))
    })
    .await;
    assert!(
        !fake.sent_texts(ME)[before..]
            .iter()
            .any(|t| t.contains("not transcribed")),
        "the tap waited for the slow transcription"
    );
    let said = said_after(&fake, before, "not transcribed", 30).await;
    assert!(said.contains("took longer than 3s"), "{said}");
    assert!(said.contains("still open"), "{said}");
    let first = seen.lock().unwrap()[0].clone();
    assert!(first.starts_with("Bearer sk-test"), "{first}");
    assert!(
        first.contains("name=\"language\"") && first.contains("name=\"model\""),
        "{first}"
    );

    for (m, want) in [
        (Mode::Status500, "answered 500"),
        (Mode::Empty, "heard no words"),
        (Mode::NotJson, "not JSON"),
    ] {
        *mode.lock().unwrap() = m;
        let before = fake.sent_texts(ME).len();
        fake.send_voice(ME, ME, "note", 3, Some(msg.message_id), None, None);
        let said = said_after(&fake, before, "not transcribed", 30).await;
        assert!(said.contains(want), "{want}: {said}");
        assert_eq!(said.lines().count(), 1, "{said}");
    }

    // Too long, too big (both before any download), a failing getFile.
    let downloads = fake.downloads("note");
    let before = fake.sent_texts(ME).len();
    fake.send_voice(ME, ME, "note", 61, Some(msg.message_id), None, None);
    let said = said_after(&fake, before, "too long", 30).await;
    assert!(said.contains("61s") && said.contains("60s"), "{said}");
    let before = fake.sent_texts(ME).len();
    fake.send_voice(
        ME,
        ME,
        "note",
        3,
        Some(msg.message_id),
        None,
        Some(5_000_000),
    );
    said_after(&fake, before, "too big", 30).await;
    assert_eq!(fake.downloads("note"), downloads, "downloaded past a limit");
    fake.fault("getfile", Fault::ServerError);
    let before = fake.sent_texts(ME).len();
    fake.send_voice(ME, ME, "note", 3, Some(msg.message_id), None, None);
    let said = said_after(&fake, before, "not transcribed", 30).await;
    assert!(
        said.contains("Telegram did not hand over the audio"),
        "{said}"
    );
    fake.clear_faults();

    // Nothing was recorded by any of them; the question stays open and a
    // working transcription still goes through, by /answer too.
    let v = show(&db, &id);
    assert_eq!(v["question"]["status"], "open", "{v}");
    assert!(v["question"]["reply"].is_null(), "{v}");
    *mode.lock().unwrap() = Mode::Text("use postgres");
    let caption = format!("/answer {}", &id[id.len() - 8..]);
    fake.send_voice(ME, ME, "note", 3, None, Some(&caption), None);
    let t = transcript_of(&fake, &id, 30).await;
    assert!(t.text.contains("«use postgres»"), "{}", t.text);
    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    fake.until(30, "the Sent toast", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("Sent: use postgres"))
    })
    .await;
    assert_eq!(show(&db, &id)["question"]["reply"]["medium"], "voice");
}

#[tokio::test]
async fn a_command_that_fails_times_out_or_prints_garbage_gets_its_line_and_records_nothing() {
    let db_dir = tempfile::tempdir().unwrap();
    let mode = db_dir.path().join("mode");
    let script = db_dir.path().join("transcriber.sh");
    std::fs::write(
        &script,
        "case \"$(cat \"$(dirname \"$0\")/mode\")\" in\n  fail) echo 'model not found' >&2; exit 3;;\n  slow) sleep 30;;\n  garbage) printf '\\001\\002\\377';;\n  *) echo \"go ahead  $HANDOFF_VOICE_LANGUAGE\";;\nesac\n",
    )
    .unwrap();
    let (db, fake, _d, _) = setup(&format!(
        "command = \"sh {}\"\nlanguage = \"en\"\ntimeout_secs = 2",
        script.display()
    ))
    .await;
    fake.add_file("note", b"OggS".to_vec());
    let id = ask(&db, &["Go ahead?"]);
    let msg = message_of(&fake, &id).await;
    for (m, want) in [
        ("fail", "failed (exit status: 3): model not found"),
        ("slow", "took longer than 2s"),
        ("garbage", "not text"),
    ] {
        std::fs::write(&mode, m).unwrap();
        let before = fake.sent_texts(ME).len();
        fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
        let said = said_after(&fake, before, "not transcribed", 30).await;
        assert!(said.contains(want), "{m}: {said}");
    }
    assert!(show(&db, &id)["question"]["reply"].is_null());
    std::fs::write(&mode, "ok").unwrap();
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &id, 30).await;
    assert!(t.text.contains("«go ahead en»"), "{}", t.text);

    // Discard drops it; Edit's correction is a typed answer.
    fake.tap(ME, ME, t.message_id, &t.button("Discard"));
    fake.until(30, "the transcript discarded", |f| {
        f.message(ME, t.message_id)
            .filter(|m| m.text.contains("Discarded") && m.buttons().is_empty())
    })
    .await;
    assert!(show(&db, &id)["question"]["reply"].is_null());
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t2 = fake
        .until(30, "a second transcript", |f| {
            f.messages(ME).into_iter().find(|m| {
                m.message_id != t.message_id
                    && m.text.contains("Transcript")
                    && !m.buttons().is_empty()
            })
        })
        .await;
    fake.tap(ME, ME, t2.message_id, &t2.button("Edit"));
    let prompt = fake
        .until(30, "the correction prompt", |f| {
            f.messages(ME).into_iter().find(|m| {
                m.text.contains("Correct the transcript") && m.text.contains("go ahead en")
            })
        })
        .await;
    let said = fake
        .reply_to_prompt(ME, ME, prompt.message_id, "go ahead on Monday")
        .await;
    assert!(said.contains("Recorded"), "{said}");
    let v = show(&db, &id);
    assert_eq!(v["question"]["reply"]["text"], "go ahead on Monday", "{v}");
    assert_eq!(v["question"]["reply"]["medium"], "text", "{v}");
}

#[tokio::test]
async fn a_restart_between_transcription_and_send_keeps_the_buttons_working_once() {
    let (db, fake, mut d, _) = setup("command = \"sh -c 'echo use postgres' sh\"").await;
    fake.add_file("note", b"OggS".to_vec());
    let id = ask(&db, &["Which database?"]);
    let msg = message_of(&fake, &id).await;
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &id, 30).await;

    d.kill9();
    let cfg = db.dir.path().join("handoff.toml");
    let _d2 = Daemon::start(&db.path, &cfg);
    // A double tap: both taps of Send arrive together.
    let data = t.button("Send");
    fake.tap(ME, ME, t.message_id, &data);
    fake.tap(ME, ME, t.message_id, &data);
    fake.until(60, "Sent, then Already sent", |f| {
        let toasts = f.toasts();
        (toasts.iter().any(|t| t.starts_with("Sent: use postgres"))
            && toasts.iter().any(|t| t.contains("Already sent")))
        .then_some(())
    })
    .await;
    let v = show(&db, &id);
    assert_eq!(v["question"]["reply"]["text"], "use postgres", "{v}");
    assert_eq!(voice_replies(&v), 1, "written once: {v}");
    // Transcribed once, before the restart.
    assert_eq!(fake.downloads("note"), 1);
}

/// A blocked row's answer and its note are two writes: a daemon that dies
/// between them (the `die-mid-voice-send` crash point) must leave the
/// answer neither lost (the note settled, the row unanswered) nor written
/// twice when the tap comes again.
#[tokio::test]
async fn a_row_voice_answer_survives_a_crash_between_the_answer_and_the_note() {
    let (db, fake, mut d, _) = setup("command = \"sh -c 'echo use postgres' sh\"").await;
    let rows =
        r#"[{"label":"dns","status":"blocked","next_step":"Pick the database","owner":"task"}]"#;
    let out = db.cli(&[
        "--json", "board", "upsert", "infra", "Launch", "--rows", rows,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let row = json(&out)["board"]["rows"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let msg = fake
        .until(30, "the row's message", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Pick the database"))
        })
        .await;
    common::until_recorded(&db, ME, msg.message_id).await;
    fake.add_file("note", b"OggS".to_vec());
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &row, 30).await;
    let cfg = db.dir.path().join("handoff.toml");

    d.kill9();
    let mut dying = Daemon::start_with(
        &db.path,
        &cfg,
        &[("HANDOFF_FAULT", "die-mid-voice-send"), FAULTS_OK],
    );
    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    let store = db.open().await;
    for _ in 0..300 {
        if store.count_rows("board_row_annotations").await.unwrap() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.count_rows("board_row_annotations").await.unwrap(), 1);
    dying.kill9();

    // The next daemon takes the tap again (its update was never marked
    // done), and the person taps once more: one answer, the note sent.
    let _d = Daemon::start(&db.path, &cfg);
    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    fake.until(60, "the note settled as sent", |f| {
        f.message(ME, t.message_id)
            .filter(|m| m.text.contains("Sent as your answer") && m.buttons().is_empty())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        store.count_rows("board_row_annotations").await.unwrap(),
        1,
        "the answer is written once"
    );
    let v = json(&db.cli(&[
        "--json",
        "board",
        "get",
        "Launch",
        "--project",
        "infra",
        "--full",
    ]))
    .to_string();
    assert!(v.contains("use postgres"), "{v}");
}

#[tokio::test]
async fn an_unread_inbox_answer_beats_a_confirmed_voice_reply_and_the_speaker_is_told() {
    let (db, fake, _d, _) = setup("command = \"sh -c 'echo use postgres' sh\"").await;
    fake.add_file("note", b"OggS".to_vec());
    let id = ask(&db, &["Which database?"]);
    let msg = message_of(&fake, &id).await;
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &id, 30).await;

    let out = db.cli(&["reply", &id, "wait until Monday"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let before = fake.sent_texts(ME).len();
    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    let said = said_after(&fake, before, "Inbox answer", 30).await;
    assert!(
        said.contains("wait until Monday") && said.contains("not recorded"),
        "{said}"
    );
    let v = show(&db, &id);
    assert_eq!(v["question"]["reply"]["text"], "wait until Monday", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "inbox", "{v}");
    assert_eq!(voice_replies(&v), 0, "{v}");
}

#[tokio::test]
async fn without_a_transcriber_voice_is_off_and_an_unconfirmed_transcript_expires() {
    // Off: the bot says so and how to turn it on.
    let (db, fake, _d, _) = setup("").await;
    let id = ask(&db, &["Which database?"]);
    let msg = message_of(&fake, &id).await;
    fake.add_file("note", b"OggS".to_vec());
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let said = said_after(&fake, 0, "Voice replies are off", 30).await;
    assert!(
        said.contains("[voice] command") && said.contains("[voice] url"),
        "{said}"
    );
    assert_eq!(fake.downloads("note"), 0);
    drop(_d);

    // On, with one second to confirm: the transcript expires and says so.
    let (db, fake, _d, _) =
        setup("command = \"sh -c 'echo use postgres' sh\"\nexpire_secs = 1").await;
    fake.add_file("note", b"OggS".to_vec());
    let id = ask(&db, &["Which database?"]);
    let msg = message_of(&fake, &id).await;
    fake.send_voice(ME, ME, "note", 1, Some(msg.message_id), None, None);
    let t = transcript_of(&fake, &id, 30).await;
    fake.until(30, "the transcript to expire", |f| {
        f.message(ME, t.message_id)
            .filter(|m| m.text.contains("expired unsent") && m.buttons().is_empty())
    })
    .await;
    fake.tap(ME, ME, t.message_id, &t.button("Send"));
    fake.until(30, "the expired toast", |f| {
        f.toasts().into_iter().find(|t| t.contains("expired"))
    })
    .await;
    assert!(show(&db, &id)["question"]["reply"].is_null());
}
