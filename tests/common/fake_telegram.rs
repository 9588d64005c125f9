//! A fake Telegram Bot API in axum, bound to 127.0.0.1:0, for the real
//! teloxide client to talk to. Records every call, serves injected updates
//! through a held-open `getUpdates`, keeps the current text and buttons of
//! every message, and can answer 429 with `retry_after`. Faults can be
//! injected per method (optionally for one message): a 5xx, an `ok` reply
//! whose body does not parse, "message to edit not found", "message is
//! not modified", or a slow answer.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Json};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// One recorded Bot API call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Method name, lower-cased (`sendmessage`).
    pub method: String,
    /// JSON body (`{}` for non-JSON bodies).
    pub body: Value,
    /// When the fake took the request (its body read), for latency benches.
    pub at: std::time::Instant,
    /// The `N` of a bot token ending `:EN` (which daemon process called).
    pub token_epoch: Option<u64>,
}

/// A message as the chat shows it now.
#[derive(Debug, Clone)]
pub struct Msg {
    pub chat_id: i64,
    pub message_id: i64,
    pub text: String,
    pub markup: Value,
    pub thread_id: Option<i64>,
    /// Which daemon process sent it, for the crash harness: the `N` of a
    /// bot token ending `:EN` (one per daemon process, when several run
    /// at once), else the [`FakeTelegram::set_epoch`] value when it was sent.
    pub epoch: u64,
    /// When the fake took its `sendMessage`.
    pub sent_at: std::time::Instant,
}

impl Msg {
    /// Callback data of every button, in order.
    pub fn buttons(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(rows) = self.markup["inline_keyboard"].as_array() {
            for row in rows {
                for b in row.as_array().into_iter().flatten() {
                    out.push((
                        b["text"].as_str().unwrap_or_default().to_string(),
                        b["callback_data"].as_str().unwrap_or_default().to_string(),
                    ));
                }
            }
        }
        out
    }

    /// Callback data of the button whose label contains `label`.
    pub fn button(&self, label: &str) -> String {
        self.buttons()
            .into_iter()
            .find(|(t, _)| t.contains(label))
            .unwrap_or_else(|| panic!("no button {label:?} on {self:?}"))
            .1
    }
}

/// A fault the fake answers with instead of doing the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 500 with `{"ok":false,"error_code":500,"description":"Internal Server Error"}`.
    ServerError,
    /// HTTP 502 with an HTML body (a proxy in front of the Bot API).
    BadGateway,
    /// `{"ok":true,"result":null}`: ok, but no message teloxide can parse.
    UnparsableOk,
    /// "Bad Request: message to edit not found".
    NotFound,
    /// "Bad Request: message is not modified" (the call changes nothing).
    NotModified,
    /// Do the call, but answer only after this long.
    Slow(Duration),
    /// HTTP 401 "Unauthorized": the Bot API refuses the token.
    Unauthorized,
}

/// Where a fault applies: a method, optionally one chat and message.
#[derive(Debug, Clone)]
struct FaultRule {
    method: String,
    target: Option<(i64, i64)>,
    fault: Fault,
}

impl FaultRule {
    fn applies(&self, method: &str, body: &Value) -> bool {
        self.method == method
            && self.target.is_none_or(|(c, m)| {
                body["chat_id"].as_i64() == Some(c) && body["message_id"].as_i64() == Some(m)
            })
    }
}

#[derive(Default)]
struct Inner {
    /// Standing faults, until cleared.
    faults: Vec<FaultRule>,
    /// Calls answered with a fault, by lower-cased method.
    faulted: HashMap<String, u64>,
    calls: Vec<Call>,
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    messages: HashMap<(i64, i64), Msg>,
    /// (method, retry_after seconds): the next call of `method` gets a 429.
    fail: VecDeque<(String, u64)>,
    /// Minimum spacing between accepted sendMessage calls (a rate limit).
    send_spacing: Option<Duration>,
    last_send: Option<std::time::Instant>,
    rejected_429: u64,
    /// How many `getUpdates` answers carried each update id.
    served: HashMap<i64, u32>,
    /// Stamped on every message sent (see [`FakeTelegram::set_epoch`]).
    epoch: u64,
    /// Every update ever pushed, by id (for [`FakeTelegram::redeliver`]).
    pushed: HashMap<i64, Value>,
    /// Bumped by every `getUpdates`: a poll still held open when a newer
    /// one arrives is ended with 409 Conflict, as Telegram does when two
    /// consumers poll one bot.
    poll_generation: u64,
    /// How many polls were ended that way.
    conflicts: u64,
    /// Updates a webhook acknowledged (see [`FakeTelegram::webhook_acked`]).
    acked: std::collections::HashSet<i64>,
    /// Files `getFile` hands out, by file id: (file path, content).
    files: HashMap<String, (String, Vec<u8>)>,
    /// Downloads served, by file path.
    downloads: HashMap<String, u32>,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeTelegram {
    /// Base URL to give teloxide (`set_api_url`), no trailing slash.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    updated: Arc<Notify>,
}

pub const BOT_ID: i64 = 4242;

impl FakeTelegram {
    /// Start on 127.0.0.1:0.
    pub async fn start() -> FakeTelegram {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fake = FakeTelegram {
            url,
            inner: Arc::new(Mutex::new(Inner {
                next_update_id: 1,
                next_message_id: 100,
                ..Default::default()
            })),
            updated: Arc::new(Notify::new()),
        };
        let app = Router::new()
            .route("/{bot}/{method}", axum::routing::post(handle))
            .route("/file/{bot}/{*path}", axum::routing::get(download))
            .with_state(fake.clone());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        fake
    }

    /// Every call so far of `method` (case-insensitive), in order.
    pub fn calls(&self, method: &str) -> Vec<Call> {
        let m = method.to_lowercase();
        self.inner
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|c| c.method == m)
            .cloned()
            .collect()
    }

    /// Every call so far.
    pub fn all_calls(&self) -> Vec<Call> {
        self.inner.lock().unwrap().calls.clone()
    }

    /// The messages of a chat, oldest first.
    pub fn messages(&self, chat_id: i64) -> Vec<Msg> {
        let mut v: Vec<Msg> = self
            .inner
            .lock()
            .unwrap()
            .messages
            .values()
            .filter(|m| m.chat_id == chat_id)
            .cloned()
            .collect();
        v.sort_by_key(|m| m.message_id);
        v
    }

    /// One message by id.
    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<Msg> {
        self.inner
            .lock()
            .unwrap()
            .messages
            .get(&(chat_id, message_id))
            .cloned()
    }

    /// Make the next call of `method` fail with 429 and `retry_after`.
    pub fn fail_next(&self, method: &str, retry_after: u64) {
        self.inner
            .lock()
            .unwrap()
            .fail
            .push_back((method.to_lowercase(), retry_after));
    }

    /// Enforce a minimum spacing between sendMessage calls; calls that come
    /// sooner get 429 with retry_after 1.
    pub fn rate_limit_sends(&self, spacing: Duration) {
        self.inner.lock().unwrap().send_spacing = Some(spacing);
    }

    /// Answer every call of `method` with `fault` from now on (until
    /// [`clear_faults`](Self::clear_faults)).
    pub fn fault(&self, method: &str, fault: Fault) {
        self.add_fault(method, None, fault);
    }

    /// Answer calls of `method` about message `message_id` in `chat_id`
    /// with `fault` from now on.
    pub fn fault_message(&self, method: &str, chat_id: i64, message_id: i64, fault: Fault) {
        self.add_fault(method, Some((chat_id, message_id)), fault);
    }

    fn add_fault(&self, method: &str, target: Option<(i64, i64)>, fault: Fault) {
        self.inner.lock().unwrap().faults.push(FaultRule {
            method: method.to_lowercase(),
            target,
            fault,
        });
    }

    /// Lift every standing fault.
    pub fn clear_faults(&self) {
        self.inner.lock().unwrap().faults.clear();
    }

    /// Lift every standing fault and drop the 429s still queued by
    /// [`fail_next`](Self::fail_next): the weather is over. Why both: a
    /// burst queued while nothing was calling outlasts the weather that
    /// queued it, and then fails every later edit in turn.
    pub fn calm(&self) {
        let mut g = self.inner.lock().unwrap();
        g.faults.clear();
        g.fail.clear();
    }

    /// How many calls of `method` were answered with a fault (a slow
    /// answer counts from the moment it is held; the call itself is
    /// recorded once it is done).
    pub fn faulted(&self, method: &str) -> u64 {
        let g = self.inner.lock().unwrap();
        g.faulted.get(&method.to_lowercase()).copied().unwrap_or(0)
    }

    /// Delete a message, as a user in the chat would: later edits of it
    /// get "message to edit not found".
    pub fn delete(&self, chat_id: i64, message_id: i64) {
        self.inner
            .lock()
            .unwrap()
            .messages
            .remove(&(chat_id, message_id));
    }

    /// How many calls were answered with 429.
    pub fn rejected_429(&self) -> u64 {
        self.inner.lock().unwrap().rejected_429
    }

    fn push_update(&self, update: Value) {
        self.push_raw(update);
    }

    /// Inject `update` exactly as given (plus its `update_id`, returned),
    /// even one the bot cannot parse.
    pub fn push_raw(&self, mut update: Value) -> i64 {
        let mut g = self.inner.lock().unwrap();
        let id = g.next_update_id;
        update["update_id"] = json!(id);
        g.next_update_id += 1;
        g.pushed.insert(id, update.clone());
        g.updates.push(update);
        drop(g);
        self.updated.notify_waiters();
        id
    }

    /// Serve update `id` again, the same update id and body, as Telegram
    /// does when an offset was never confirmed (to the next poller).
    pub fn redeliver(&self, id: i64) {
        let mut g = self.inner.lock().unwrap();
        let update = g.pushed.get(&id).expect("an update pushed before").clone();
        g.updates.push(update);
        drop(g);
        self.updated.notify_waiters();
    }

    /// The secret token each `setWebhook` so far registered, in order
    /// (teloxide sends setWebhook as multipart form data).
    pub fn webhook_secrets(&self) -> Vec<Option<String>> {
        self.calls("setwebhook")
            .iter()
            .map(|c| {
                let form = c.body["multipart"].as_str()?;
                let (_, after) = form.split_once("name=\"secret_token\"")?;
                let value = after.trim_start_matches(['\r', '\n']);
                Some(value.lines().next()?.trim().to_string())
            })
            .collect()
    }

    /// How many `getUpdates` were ended by a newer one (409 Conflict: two
    /// consumers polling the bot at once).
    pub fn conflicts(&self) -> u64 {
        self.inner.lock().unwrap().conflicts
    }

    /// The updates not yet taken, oldest first: what a webhook sender
    /// (tests/chaos_support's postman, standing in for Telegram in webhook
    /// mode) still has to deliver.
    pub fn undelivered(&self) -> Vec<Value> {
        self.inner.lock().unwrap().updates.clone()
    }

    /// Count one delivery attempt of update `id` to a webhook (as a
    /// `getUpdates` answer carrying it counts), and when the webhook
    /// answered 200, take it off the queue as delivered.
    pub fn webhook_delivered(&self, id: i64, acked: bool) {
        let mut g = self.inner.lock().unwrap();
        *g.served.entry(id).or_default() += 1;
        if acked {
            g.acked.insert(id);
            g.updates.retain(|u| u["update_id"].as_i64() != Some(id));
        }
    }

    /// Whether the bot has confirmed update `id`: asked for updates past it,
    /// or (webhook mode) answered its delivery with 200.
    pub fn confirmed(&self, id: i64) -> bool {
        if self.inner.lock().unwrap().acked.contains(&id) {
            return true;
        }
        self.calls("getupdates")
            .iter()
            .any(|c| c.body["offset"].as_i64().is_some_and(|o| o > id))
    }

    /// Inject a button tap on `message_id` by `user`.
    pub fn tap(&self, chat_id: i64, user: i64, message_id: i64, data: &str) {
        self.tap_traced(chat_id, user, message_id, data);
    }

    /// [`tap`](Self::tap), returning the callback query id and update id.
    pub fn tap_traced(
        &self,
        chat_id: i64,
        user: i64,
        message_id: i64,
        data: &str,
    ) -> (String, i64) {
        let msg = self.message(chat_id, message_id);
        let text = msg.map(|m| m.text).unwrap_or_default();
        let cb = format!("cb{}", rand_id());
        let update = self.push_raw(json!({
            "callback_query": {
                "id": cb,
                "from": user_json(user),
                "chat_instance": "ci",
                "data": data,
                "message": message_json(chat_id, message_id, &text, None),
            }
        }));
        (cb, update)
    }

    /// How many `getUpdates` answers carried update `id` (more than one:
    /// the bot restarted before confirming it, and it was replayed).
    pub fn served(&self, id: i64) -> u32 {
        self.inner
            .lock()
            .unwrap()
            .served
            .get(&id)
            .copied()
            .unwrap_or(0)
    }

    /// The texts of every answerCallbackQuery call for callback `id`.
    pub fn answers_to(&self, id: &str) -> Vec<String> {
        self.calls("answercallbackquery")
            .iter()
            .filter(|c| c.body["callback_query_id"].as_str() == Some(id))
            .map(|c| c.body["text"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Stamp messages sent from now on with `epoch` (the crash harness
    /// bumps it at each daemon restart).
    pub fn set_epoch(&self, epoch: u64) {
        self.inner.lock().unwrap().epoch = epoch;
    }

    /// Inject a text message from `user`, optionally as a reply to `reply_to`.
    pub fn send_text(&self, chat_id: i64, user: i64, text: &str, reply_to: Option<i64>) {
        let id = {
            let mut g = self.inner.lock().unwrap();
            g.next_message_id += 1;
            g.next_message_id
        };
        let mut m = message_json(chat_id, id, text, Some(user));
        if let Some(r) = reply_to {
            let orig = self.message(chat_id, r).map(|m| m.text).unwrap_or_default();
            m["reply_to_message"] = message_json(chat_id, r, &orig, None);
        }
        self.push_update(json!({ "message": m }));
    }

    /// Offer `content` as file `file_id` (served by `getFile` and its
    /// download URL, as Telegram serves a voice note's audio).
    pub fn add_file(&self, file_id: &str, content: Vec<u8>) {
        let path = format!("voice/{file_id}.oga");
        self.inner
            .lock()
            .unwrap()
            .files
            .insert(file_id.to_string(), (path, content));
    }

    /// How many times file `file_id` was downloaded.
    pub fn downloads(&self, file_id: &str) -> u32 {
        let path = format!("voice/{file_id}.oga");
        *self
            .inner
            .lock()
            .unwrap()
            .downloads
            .get(&path)
            .unwrap_or(&0)
    }

    /// Inject a voice note from `user` (`file_id` offered with
    /// [`FakeTelegram::add_file`]), optionally as a reply to `reply_to`
    /// and with a caption; `size` as Telegram reports it (default: the
    /// file's). The note's message id. (One argument per field of the
    /// note: clearer at the call sites than a builder for a test helper.)
    #[allow(clippy::too_many_arguments)]
    pub fn send_voice(
        &self,
        chat_id: i64,
        user: i64,
        file_id: &str,
        duration: u32,
        reply_to: Option<i64>,
        caption: Option<&str>,
        size: Option<u64>,
    ) -> i64 {
        let (id, len) = {
            let mut g = self.inner.lock().unwrap();
            g.next_message_id += 1;
            let len = g.files.get(file_id).map_or(0, |f| f.1.len() as u64);
            (g.next_message_id, len)
        };
        let mut m = message_json(chat_id, id, "", Some(user));
        m.as_object_mut().unwrap().remove("text");
        m["voice"] = json!({
            "file_id": file_id, "file_unique_id": format!("u{file_id}"),
            "duration": duration, "mime_type": "audio/ogg", "file_size": size.unwrap_or(len),
        });
        if let Some(c) = caption {
            m["caption"] = json!(c);
        }
        if let Some(r) = reply_to {
            let orig = self.message(chat_id, r).map(|m| m.text).unwrap_or_default();
            m["reply_to_message"] = message_json(chat_id, r, &orig, None);
        }
        self.push_update(json!({ "message": m }));
        id
    }

    /// The raw multipart bodies of sendDocument calls, in order (each holds
    /// the chat id, the file name and the file's content).
    pub fn documents(&self) -> Vec<String> {
        self.calls("senddocument")
            .iter()
            .map(|c| c.body["multipart"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Answer texts of answerCallbackQuery calls, in order.
    pub fn toasts(&self) -> Vec<String> {
        self.calls("answercallbackquery")
            .iter()
            .map(|c| c.body["text"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Texts sent with sendMessage to `chat_id`, in order.
    pub fn sent_texts(&self, chat_id: i64) -> Vec<String> {
        self.calls("sendmessage")
            .iter()
            .filter(|c| c.body["chat_id"].as_i64() == Some(chat_id))
            .map(|c| c.body["text"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Reply `text` to the bot's prompt message `prompt` as `user`, and
    /// return what the bot said next. The bot files a prompt only once
    /// Telegram has answered its send; a reply that beats that gets "isn't
    /// one of my items" and is sent again.
    pub async fn reply_to_prompt(
        &self,
        chat_id: i64,
        user: i64,
        prompt: i64,
        text: &str,
    ) -> String {
        for _ in 0..50 {
            let before = self.sent_texts(chat_id).len();
            self.send_text(chat_id, user, text, Some(prompt));
            let said = self
                .until(30, "the bot's answer to a prompt reply", |f| {
                    f.sent_texts(chat_id)
                        .get(before..)
                        .and_then(|new| new.first().cloned())
                })
                .await;
            if !said.contains("isn't one of my items") {
                return said;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the bot never took a reply to its prompt {prompt}");
    }

    /// Poll `f` every 20 ms until it returns Some, or panic after `secs`.
    pub async fn until<T>(
        &self,
        secs: u64,
        what: &str,
        mut f: impl FnMut(&Self) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; calls: {:#?}",
                    self.all_calls()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

pub fn user_json(user: i64) -> Value {
    json!({"id": user, "is_bot": false, "first_name": format!("user{user}"), "username": format!("user{user}")})
}

fn chat_json(chat_id: i64) -> Value {
    if chat_id < 0 {
        json!({"id": chat_id, "type": "supergroup", "title": "team"})
    } else {
        json!({"id": chat_id, "type": "private", "first_name": "me"})
    }
}

fn message_json(chat_id: i64, id: i64, text: &str, from: Option<i64>) -> Value {
    let mut m = json!({
        "message_id": id,
        "date": 1_700_000_000,
        "chat": chat_json(chat_id),
        "text": text,
    });
    m["from"] = match from {
        Some(u) => user_json(u),
        None => {
            json!({"id": BOT_ID, "is_bot": true, "first_name": "handoff", "username": "handoff_bot"})
        }
    };
    m
}

fn ok(result: Value) -> axum::response::Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

async fn handle(
    State(fake): State<FakeTelegram>,
    Path((bot, method)): Path<(String, String)>,
    body: Bytes,
) -> axum::response::Response {
    let token_epoch = bot
        .rsplit_once(":E")
        .and_then(|(_, n)| n.parse::<u64>().ok());
    let at = std::time::Instant::now();
    let method = method.to_lowercase();
    // Uploads (sendDocument) are multipart, not JSON: kept as raw text.
    let body: Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
        if method == "senddocument" || method == "setwebhook" {
            json!({"multipart": String::from_utf8_lossy(&body)})
        } else {
            json!({})
        }
    });
    let fault = {
        let g = fake.inner.lock().unwrap();
        g.faults
            .iter()
            .find(|r| r.applies(&method, &body))
            .map(|r| r.fault.clone())
    };
    if let Some(fault) = fault {
        *fake
            .inner
            .lock()
            .unwrap()
            .faulted
            .entry(method.clone())
            .or_default() += 1;
        let answer = match fault {
            Fault::Slow(d) => {
                tokio::time::sleep(d).await;
                None
            }
            Fault::ServerError => Some(
                (
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    Json(json!({"ok": false, "error_code": 500, "description": "Internal Server Error"})),
                )
                    .into_response(),
            ),
            Fault::BadGateway => Some(
                (
                    axum::http::StatusCode::BAD_GATEWAY,
                    "<html><body>502 Bad Gateway</body></html>",
                )
                    .into_response(),
            ),
            Fault::UnparsableOk => Some(ok(Value::Null)),
            Fault::Unauthorized => Some(
                (
                    axum::http::StatusCode::UNAUTHORIZED,
                    Json(json!({"ok": false, "error_code": 401, "description": "Unauthorized"})),
                )
                    .into_response(),
            ),
            Fault::NotFound => Some(bad_request("message to edit not found")),
            Fault::NotModified => Some(bad_request(
                "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
            )),
        };
        if let Some(answer) = answer {
            let mut g = fake.inner.lock().unwrap();
            g.calls.push(Call {
                method: method.clone(),
                body: body.clone(),
                at,
                token_epoch,
            });
            return answer;
        }
    }
    {
        let mut g = fake.inner.lock().unwrap();
        g.calls.push(Call {
            method: method.clone(),
            body: body.clone(),
            at,
            token_epoch,
        });
        if let Some(pos) = g.fail.iter().position(|(m, _)| *m == method) {
            let (_, after) = g.fail.remove(pos).unwrap();
            g.rejected_429 += 1;
            return too_many(after);
        }
        if method == "sendmessage"
            && let Some(spacing) = g.send_spacing
        {
            let now = std::time::Instant::now();
            if g.last_send.is_some_and(|t| now.duration_since(t) < spacing) {
                g.rejected_429 += 1;
                return too_many(1);
            }
            g.last_send = Some(now);
        }
    }
    match method.as_str() {
        "getme" => ok(json!({
            "id": BOT_ID, "is_bot": true, "first_name": "handoff", "username": "handoff_bot",
            "can_join_groups": true, "can_read_all_group_messages": true,
            "supports_inline_queries": false, "has_main_web_app": false
        })),
        "getwebhookinfo" => {
            ok(json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0}))
        }
        "setwebhook" | "deletewebhook" | "setmycommands" => ok(json!(true)),
        "answercallbackquery" => ok(json!(true)),
        "getupdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            let timeout = body["timeout"].as_u64().unwrap_or(0).min(5);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
            let generation = {
                let mut g = fake.inner.lock().unwrap();
                g.poll_generation += 1;
                g.poll_generation
            };
            // An older poll still waiting learns of this one.
            fake.updated.notify_waiters();
            loop {
                let notified = fake.updated.notified();
                let ready: Vec<Value> = {
                    let mut g = fake.inner.lock().unwrap();
                    if g.poll_generation != generation {
                        g.conflicts += 1;
                        return conflict();
                    }
                    g.updates
                        .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
                    g.updates.clone()
                };
                if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
                    let mut g = fake.inner.lock().unwrap();
                    for u in &ready {
                        *g.served
                            .entry(u["update_id"].as_i64().unwrap_or(0))
                            .or_default() += 1;
                    }
                    return ok(Value::Array(ready));
                }
                let _ = tokio::time::timeout_at(deadline, notified).await;
            }
        }
        "sendmessage" => {
            let chat_id = body["chat_id"].as_i64().unwrap_or(0);
            let text = body["text"].as_str().unwrap_or_default().to_string();
            if text.chars().count() > 4096 {
                return Json(json!({"ok": false, "error_code": 400, "description": "Bad Request: message is too long"}))
                    .into_response();
            }
            let mut g = fake.inner.lock().unwrap();
            g.next_message_id += 1;
            let id = g.next_message_id;
            let msg = Msg {
                chat_id,
                message_id: id,
                text: text.clone(),
                markup: body["reply_markup"].clone(),
                thread_id: body["message_thread_id"].as_i64(),
                epoch: token_epoch.unwrap_or(g.epoch),
                sent_at: at,
            };
            g.messages.insert((chat_id, id), msg);
            ok(message_json(chat_id, id, &text, None))
        }
        "editmessagetext" | "editmessagereplymarkup" => {
            let chat_id = body["chat_id"].as_i64().unwrap_or(0);
            let id = body["message_id"].as_i64().unwrap_or(0);
            let mut g = fake.inner.lock().unwrap();
            let Some(m) = g.messages.get_mut(&(chat_id, id)) else {
                return Json(json!({"ok": false, "error_code": 400, "description": "Bad Request: message to edit not found"}))
                    .into_response();
            };
            if method == "editmessagetext" {
                let text = body["text"].as_str().unwrap_or_default().to_string();
                if text.chars().count() > 4096 {
                    return Json(json!({"ok": false, "error_code": 400, "description": "Bad Request: message is too long"}))
                        .into_response();
                }
                m.text = text;
            }
            m.markup = body["reply_markup"].clone();
            let (t, c) = (m.text.clone(), m.chat_id);
            ok(message_json(c, id, &t, None))
        }
        // A forum topic's id is the id of the service message that opens
        // it, as in Telegram: taken from the message counter.
        "createforumtopic" => {
            let mut g = fake.inner.lock().unwrap();
            g.next_message_id += 1;
            let id = g.next_message_id;
            ok(
                json!({"message_thread_id": id, "name": body["name"].clone(), "icon_color": 7322096}),
            )
        }
        "getfile" => {
            let id = body["file_id"].as_str().unwrap_or_default();
            let g = fake.inner.lock().unwrap();
            match g.files.get(id) {
                Some((path, content)) => ok(json!({
                    "file_id": id, "file_unique_id": format!("u{id}"),
                    "file_size": content.len(), "file_path": path,
                })),
                None => bad_request("wrong file_id or the file is temporarily unavailable"),
            }
        }
        "senddocument" => {
            let mut g = fake.inner.lock().unwrap();
            g.next_message_id += 1;
            let id = g.next_message_id;
            let raw = body["multipart"].as_str().unwrap_or_default();
            let chat_id = raw
                .split_once("name=\"chat_id\"")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            ok(message_json(chat_id, id, "", None))
        }
        _ => Json(
            json!({"ok": false, "error_code": 404, "description": "Not Found: method not found"}),
        )
        .into_response(),
    }
}

/// A file download (`/file/bot<token>/<path>`), as `getFile` named it.
async fn download(
    State(fake): State<FakeTelegram>,
    Path((_bot, path)): Path<(String, String)>,
) -> axum::response::Response {
    let mut g = fake.inner.lock().unwrap();
    *g.downloads.entry(path.clone()).or_default() += 1;
    let found = g
        .files
        .values()
        .find(|(p, _)| *p == path)
        .map(|f| f.1.clone());
    match found {
        Some(content) => content.into_response(),
        None => (axum::http::StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}

fn bad_request(what: &str) -> axum::response::Response {
    (
        axum::http::StatusCode::BAD_REQUEST,
        Json(
            json!({"ok": false, "error_code": 400, "description": format!("Bad Request: {what}")}),
        ),
    )
        .into_response()
}

fn too_many(after: u64) -> axum::response::Response {
    (
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        Json(json!({
            "ok": false, "error_code": 429,
            "description": format!("Too Many Requests: retry after {after}"),
            "parameters": {"retry_after": after}
        })),
    )
        .into_response()
}

/// Telegram's answer to a poll ended by another consumer's poll.
fn conflict() -> axum::response::Response {
    (
        axum::http::StatusCode::CONFLICT,
        Json(json!({
            "ok": false, "error_code": 409,
            "description": "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
        })),
    )
        .into_response()
}
