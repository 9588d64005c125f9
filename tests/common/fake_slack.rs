//! A fake Slack: the Web API over HTTP (`/api/<method>`) and a Socket Mode
//! websocket, both on loopback, with fault injection (429 + Retry-After,
//! 5xx, slow answers, `message_not_found`, a dropped websocket) and a way
//! to send envelopes (twice, for duplicates) and read their acks, and
//! modals opened with `views.open` and submitted back. A channel's
//! messages can be read back with `conversations.history` (newest first,
//! their metadata only when asked for, as Slack does).
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// One Web API call as the fake saw it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub body: Value,
    pub token: String,
    pub at: Instant,
}

/// What the next call of a method gets instead of its answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `Retry-After: secs`.
    RateLimit(u64),
    /// A 500.
    ServerError,
    /// The real answer, after this long.
    Slow(Duration),
    /// The call takes effect at once (a post is in the channel), and its
    /// answer comes this long after: a caller killed meanwhile never
    /// learns what it made.
    Late(Duration),
    /// `{"ok":false,"error":"message_not_found"}`.
    NotFound,
}

/// A message in a channel, as last posted or updated.
#[derive(Debug, Clone)]
pub struct Msg {
    pub channel: String,
    pub ts: String,
    pub text: String,
    pub blocks: Value,
    pub updates: usize,
    /// The metadata it was posted (or last updated) with, or null.
    pub metadata: Value,
    /// The bot token that posted it.
    pub token: String,
    /// When it was posted.
    pub at: Instant,
}

impl Msg {
    /// The `value` of the button whose label contains `label`.
    pub fn button(&self, label: &str) -> String {
        self.buttons()
            .into_iter()
            .find(|(l, _)| l.contains(label))
            .unwrap_or_else(|| panic!("no button {label} in {:#?}", self.blocks))
            .1
    }

    /// Every button: (label, value).
    pub fn buttons(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for b in self.blocks.as_array().into_iter().flatten() {
            for e in b["elements"].as_array().into_iter().flatten() {
                if e["type"] == "button" {
                    out.push((
                        e["text"]["text"].as_str().unwrap_or("").to_string(),
                        e["value"].as_str().unwrap_or("").to_string(),
                    ));
                }
            }
        }
        out
    }

    /// The section text (mrkdwn).
    pub fn shown(&self) -> String {
        self.blocks[0]["text"]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    /// Per method: (a text the call's body must contain, or any), fault.
    faults: HashMap<String, VecDeque<(Option<String>, Fault)>>,
    messages: Vec<Msg>,
    ephemeral: Vec<(String, String, String)>,
    /// Acknowledgements: (envelope id, the payload it carried or null).
    acks: Vec<(String, Value)>,
    /// Modals opened with `views.open`, as Slack answered them (with an id).
    views: Vec<Value>,
    /// The last message's ts, in µs.
    next_ts: u64,
    /// Frames to the current websocket connection.
    socket: Option<mpsc::UnboundedSender<String>>,
    connections: usize,
}

/// The fake Slack.
#[derive(Clone)]
pub struct FakeSlack {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeSlack {
    /// Start both servers on 127.0.0.1:0.
    pub async fn start() -> FakeSlack {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let ws = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ws_url = format!("ws://{}/link", ws.local_addr().unwrap());
        let state = (inner.clone(), ws_url);
        let app = axum::Router::new()
            .route(
                "/api/{method}",
                axum::routing::post(web_api).get(web_api_get),
            )
            .with_state(state);
        let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api", http.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(http, app).await.unwrap() });
        tokio::spawn(accept_sockets(ws, inner.clone()));
        FakeSlack { url, inner }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    /// Queue a fault for the next call(s) of `method`.
    pub fn fault(&self, method: &str, f: Fault) {
        self.lock()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back((None, f));
    }

    /// Queue a fault for the next call of `method` whose body contains
    /// `needle` (one message's `ts`, one channel): other calls pass.
    pub fn fault_when(&self, method: &str, needle: &str, f: Fault) {
        self.lock()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back((Some(needle.to_string()), f));
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    pub fn messages(&self, channel: &str) -> Vec<Msg> {
        self.lock()
            .messages
            .iter()
            .filter(|m| m.channel == channel)
            .cloned()
            .collect()
    }

    /// Forget a message, as if someone deleted it in Slack.
    pub fn delete(&self, channel: &str, ts: &str) {
        self.lock()
            .messages
            .retain(|m| !(m.channel == channel && m.ts == ts));
    }

    /// Ephemeral notes: (channel, user, text).
    pub fn ephemeral(&self) -> Vec<(String, String, String)> {
        self.lock().ephemeral.clone()
    }

    pub fn acks(&self) -> Vec<String> {
        self.lock().acks.iter().map(|(id, _)| id.clone()).collect()
    }

    /// The payload the (last) acknowledgement of `envelope` carried: a
    /// `view_submission`'s `response_action`; None before it is acked.
    pub fn ack_payload(&self, envelope: &str) -> Option<Value> {
        self.lock()
            .acks
            .iter()
            .rev()
            .find(|(id, _)| id == envelope)
            .map(|(_, p)| p.clone())
    }

    /// Modals opened so far, as `views.open` answered them.
    pub fn views(&self) -> Vec<Value> {
        self.lock().views.clone()
    }

    /// A modal's submission: `text` typed in its (first) input field.
    pub fn submit_frame(envelope: &str, user: &str, view: &Value, text: &str) -> Value {
        let input = view["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|b| b["type"] == "input")
            .expect("the modal has an input field");
        let block = input["block_id"].as_str().unwrap_or("");
        let action = input["element"]["action_id"].as_str().unwrap_or("");
        let mut v = view.clone();
        v["state"] =
            json!({"values": {block: {action: {"type": "plain_text_input", "value": text}}}});
        json!({
            "type": "interactive",
            "envelope_id": envelope,
            "accepts_response_payload": true,
            "payload": {
                "type": "view_submission",
                "team": {"id": "T1"},
                "user": {"id": user},
                "api_app_id": "A1",
                "trigger_id": format!("trig-{envelope}"),
                "view": v
            }
        })
    }

    /// How many Socket Mode connections were opened so far.
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    /// Whether a Socket Mode connection is open now.
    pub fn connected(&self) -> bool {
        self.lock().socket.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Close the current websocket from Slack's side.
    pub fn drop_socket(&self) {
        self.lock().socket = None;
    }

    /// Send an envelope frame on the current connection.
    pub fn send(&self, frame: Value) {
        let tx = self
            .lock()
            .socket
            .clone()
            .expect("no Socket Mode connection");
        tx.send(frame.to_string()).expect("the connection is gone");
    }

    /// Send an envelope frame on the current connection, if one is open:
    /// whether it went out.
    pub fn try_send(&self, frame: Value) -> bool {
        let tx = self.lock().socket.clone();
        tx.is_some_and(|tx| tx.send(frame.to_string()).is_ok())
    }

    /// Drop every queued fault.
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// A button tap envelope (`envelope_id` chosen by the caller, so a
    /// test can send the same envelope twice).
    pub fn tap_frame(
        envelope: &str,
        channel: &str,
        user: &str,
        ts: &str,
        value: &str,
        action_ts: &str,
    ) -> Value {
        json!({
            "type": "interactive",
            "envelope_id": envelope,
            "accepts_response_payload": false,
            "payload": {
                "type": "block_actions",
                "team": {"id": "T1"},
                "user": {"id": user},
                "api_app_id": "A1",
                "container": {"type": "message", "message_ts": ts, "channel_id": channel},
                "trigger_id": format!("trig-{action_ts}"),
                "channel": {"id": channel},
                "actions": [{"type": "button", "action_id": "h0.0", "value": value, "action_ts": action_ts}]
            }
        })
    }

    /// A message posted in the thread of `thread_ts`.
    pub fn reply_frame(
        envelope: &str,
        event_id: &str,
        channel: &str,
        user: &str,
        thread_ts: &str,
        text: &str,
    ) -> Value {
        json!({
            "type": "events_api",
            "envelope_id": envelope,
            "accepts_response_payload": false,
            "payload": {
                "type": "event_callback",
                "team_id": "T1",
                "api_app_id": "A1",
                "event_id": event_id,
                "event_time": 1_700_000_000,
                "event": {
                    "type": "message",
                    "channel": channel,
                    "user": user,
                    "text": text,
                    "ts": format!("{thread_ts}1"),
                    "thread_ts": thread_ts
                }
            }
        })
    }

    /// Poll `f` every 20 ms until it returns Some, or panic after `secs`.
    pub async fn until<T>(
        &self,
        secs: u64,
        what: &str,
        mut f: impl FnMut(&Self) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            if Instant::now() > deadline {
                let calls: Vec<(String, Value)> = self
                    .lock()
                    .calls
                    .iter()
                    .map(|c| (c.method.clone(), c.body.clone()))
                    .collect();
                panic!("timed out waiting for {what}; calls: {calls:#?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

type St = (Arc<Mutex<Inner>>, String);

/// A method called with GET (`conversations.history`): its query string
/// read as the body.
async fn web_api_get(
    state: State<St>,
    method: Path<String>,
    headers: HeaderMap,
    axum::extract::Query(query): axum::extract::Query<HashMap<String, String>>,
) -> Response {
    answer(state, method, headers, json!(query)).await
}

async fn web_api(
    state: State<St>,
    method: Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
        // Form-encoded calls: keep them readable as JSON.
        let s = String::from_utf8_lossy(&body).to_string();
        json!({ "raw": s })
    });
    answer(state, method, headers, body).await
}

async fn answer(
    State((inner, ws_url)): State<St>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Value,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim_start_matches("Bearer ")
        .to_string();
    let fault = {
        let mut g = inner.lock().unwrap();
        g.calls.push(Call {
            method: method.clone(),
            body: body.clone(),
            token: token.clone(),
            at: Instant::now(),
        });
        let text = body.to_string();
        g.faults.get_mut(&method).and_then(|q| {
            let i = q
                .iter()
                .position(|(needle, _)| needle.as_ref().is_none_or(|n| text.contains(n)))?;
            q.remove(i).map(|(_, f)| f)
        })
    };
    match fault {
        Some(Fault::RateLimit(secs)) => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", secs.to_string())],
                axum::Json(json!({"ok": false, "error": "ratelimited"})),
            )
                .into_response();
        }
        Some(Fault::ServerError) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
        }
        Some(Fault::NotFound) => {
            return axum::Json(json!({"ok": false, "error": "message_not_found"})).into_response();
        }
        Some(Fault::Slow(d)) => tokio::time::sleep(d).await,
        Some(Fault::Late(_)) | None => {}
    }
    let late = match fault {
        Some(Fault::Late(d)) => Some(d),
        _ => None,
    };
    let reply = answer_now(&mut inner.lock().unwrap(), &method, &body, &ws_url, token);
    if let Some(d) = late {
        tokio::time::sleep(d).await;
    }
    axum::Json(reply).into_response()
}

/// What a call does and answers, the fake's state locked.
fn answer_now(g: &mut Inner, method: &str, body: &Value, ws_url: &str, token: String) -> Value {
    match method {
        "apps.connections.open" => json!({"ok": true, "url": ws_url}),
        "chat.postMessage" => {
            // Slack's ts: its clock at the post, in µs, unique per message.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros() as u64;
            g.next_ts = now.max(g.next_ts + 1);
            let ts = format!("{}.{:06}", g.next_ts / 1_000_000, g.next_ts % 1_000_000);
            let channel = body["channel"].as_str().unwrap_or("").to_string();
            g.messages.push(Msg {
                channel: channel.clone(),
                ts: ts.clone(),
                text: body["text"].as_str().unwrap_or("").to_string(),
                blocks: body["blocks"].clone(),
                updates: 0,
                metadata: body["metadata"].clone(),
                token,
                at: Instant::now(),
            });
            json!({"ok": true, "channel": channel, "ts": ts, "message": {"ts": ts, "text": body["text"]}})
        }
        "chat.update" => {
            let channel = body["channel"].as_str().unwrap_or("");
            let ts = body["ts"].as_str().unwrap_or("");
            match g
                .messages
                .iter_mut()
                .find(|m| m.channel == channel && m.ts == ts)
            {
                Some(m) => {
                    m.text = body["text"].as_str().unwrap_or("").to_string();
                    m.blocks = body["blocks"].clone();
                    m.updates += 1;
                    if !body["metadata"].is_null() {
                        m.metadata = body["metadata"].clone();
                    }
                    json!({"ok": true, "channel": channel, "ts": ts, "message": {"text": body["text"]}})
                }
                None => json!({"ok": false, "error": "message_not_found"}),
            }
        }
        "conversations.history" => {
            // Newest first, after `oldest`; one page (the fake's channels
            // are short).
            let channel = body["channel"].as_str().unwrap_or("");
            let oldest = body["oldest"].as_str().map(ts_key).unwrap_or_default();
            let with_metadata = body["include_all_metadata"] == "true";
            let messages: Vec<Value> = g
                .messages
                .iter()
                .rev()
                .filter(|m| m.channel == channel && ts_key(&m.ts) > oldest)
                .map(|m| {
                    let mut v =
                        json!({"type": "message", "ts": m.ts, "text": m.text, "bot_id": "B1"});
                    if with_metadata && !m.metadata.is_null() {
                        v["metadata"] = m.metadata.clone();
                    }
                    v
                })
                .collect();
            json!({"ok": true, "messages": messages, "has_more": false})
        }
        "views.open" => {
            let n = g.views.len() + 1;
            let mut view = body["view"].clone();
            view["id"] = json!(format!("V{n}"));
            view["team_id"] = json!("T1");
            view["hash"] = json!(format!("h{n}"));
            g.views.push(view.clone());
            json!({"ok": true, "view": view})
        }
        "chat.postEphemeral" => {
            g.ephemeral.push((
                body["channel"].as_str().unwrap_or("").to_string(),
                body["user"].as_str().unwrap_or("").to_string(),
                body["text"].as_str().unwrap_or("").to_string(),
            ));
            json!({"ok": true, "message_ts": "1700000000.999999"})
        }
        _ => json!({"ok": false, "error": "unknown_method"}),
    }
}

/// A `ts` ("seconds.micros") as a number pair, for ordering.
fn ts_key(ts: &str) -> (u64, u64) {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    (s.parse().unwrap_or(0), f.parse().unwrap_or(0))
}

/// Accept Socket Mode connections: each gets `hello`, then whatever the
/// test sends; acks are recorded. A newer connection replaces the older.
async fn accept_sockets(listener: tokio::net::TcpListener, inner: Arc<Mutex<Inner>>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let inner = inner.clone();
        tokio::spawn(async move {
            let Ok(ws) = tokio_tungstenite::accept_async(tcp).await else {
                return;
            };
            let (mut write, mut read) = ws.split();
            let (tx, mut rx) = mpsc::unbounded_channel::<String>();
            {
                let mut g = inner.lock().unwrap();
                g.connections += 1;
                g.socket = Some(tx.clone());
            }
            let hello = json!({
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": "A1"},
                "debug_info": {"host": "fake"}
            });
            let _ = tx.send(hello.to_string());
            drop(tx);
            use tokio_tungstenite::tungstenite::Message;
            loop {
                tokio::select! {
                    out = rx.recv() => match out {
                        Some(text) => if write.send(Message::text(text)).await.is_err() { return },
                        // Dropped by the test (or replaced): close it.
                        None => { let _ = write.send(Message::Close(None)).await; return }
                    },
                    msg = read.next() => match msg {
                        Some(Ok(Message::Text(t))) => {
                            let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                            if let Some(id) = v["envelope_id"].as_str() {
                                let payload = v["payload"].clone();
                                inner.lock().unwrap().acks.push((id.to_string(), payload));
                            }
                        }
                        Some(Ok(Message::Ping(p))) => { let _ = write.send(Message::Pong(p)).await; }
                        Some(Ok(_)) => {}
                        _ => return,
                    }
                }
            }
        });
    }
}
