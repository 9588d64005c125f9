//! A small W3C WebDriver client for tests: starts `chromedriver` on a free
//! port, opens a headless Chromium session, and speaks the protocol's JSON
//! REST API with reqwest (no WebDriver crate). Dropping the [`Browser`] ends
//! the session and kills chromedriver.
//!
//! Needs Debian's `chromium` and `chromium-driver` (installed by `.ci/run`);
//! without them [`Browser::start`] panics with what to install — the browser
//! tests fail loudly, they never skip.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The W3C key under which an element reference travels.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How many times [`Browser::wait_for`] re-checks (every 50 ms).
const WAIT_ROUNDS: u32 = 400;

/// A headless Chromium driven over WebDriver.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

/// An element reference.
#[derive(Debug, Clone)]
pub struct Element(pub String);

fn chromium_binary() -> PathBuf {
    std::env::var_os("HANDOFF_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

fn chromedriver_binary() -> PathBuf {
    std::env::var_os("HANDOFF_CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("chromedriver"))
}

fn missing(what: &str) -> ! {
    panic!(
        "the web Inbox browser test needs {what}: install Debian's chromium and chromium-driver \
         (`apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver`; \
         .ci/run does this), or point HANDOFF_CHROMIUM / HANDOFF_CHROMEDRIVER at them"
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Start chromedriver and a headless Chromium with a fresh profile and
    /// a `width`×`height` window.
    pub async fn start(width: u32, height: u32) -> Browser {
        let chromium = chromium_binary();
        if !chromium.exists() {
            missing(&format!("a Chromium binary at {}", chromium.display()));
        }
        let port = free_port();
        let driver = match Command::new(chromedriver_binary())
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => missing(&format!("chromedriver on PATH ({e})")),
        };
        let profile = tempfile::tempdir().expect("profile dir");
        let http = reqwest::Client::new();
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            http,
            _profile: profile,
        };
        b.wait_ready().await;
        let args = [
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", b._profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let v = b.raw("POST", "/session", Some(caps)).await;
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id from chromedriver: {v}"))
            .to_string();
        b
    }

    async fn wait_ready(&self) {
        for _ in 0..200 {
            if let Ok(r) = self
                .http
                .get(format!("http://127.0.0.1:{}/status", self.port))
                .send()
                .await
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not become ready on port {}", self.port);
    }

    /// One WebDriver command; returns `value`, panics on a WebDriver error.
    async fn raw(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_raw(method, path, body).await {
            Ok(v) => v,
            Err(e) => panic!("WebDriver {method} {path}: {e}"),
        }
    }

    async fn try_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let ok = resp.status().is_success();
        let v: Value = resp.json().await.map_err(|e| e.to_string())?;
        let value = v.get("value").cloned().unwrap_or(Value::Null);
        if ok {
            Ok(value)
        } else {
            Err(format!("{}: {}", value["error"], value["message"]))
        }
    }

    fn at(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Navigate to `url`.
    pub async fn goto(&self, url: &str) {
        self.raw("POST", &self.at("/url"), Some(json!({"url": url})))
            .await;
    }

    /// Resize the window to `width`×`height`.
    pub async fn set_window(&self, width: u32, height: u32) {
        let body = json!({"width": width, "height": height});
        self.raw("POST", &self.at("/window/rect"), Some(body)).await;
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        self.raw("GET", &self.at("/url"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The first element matching `css`, or `None`.
    pub async fn try_find(&self, css: &str) -> Option<Element> {
        let body = json!({"using": "css selector", "value": css});
        let v = self
            .try_raw("POST", &self.at("/element"), Some(body))
            .await
            .ok()?;
        v[ELEMENT].as_str().map(|s| Element(s.to_string()))
    }

    /// The first element matching `css` (waiting for it to appear).
    pub async fn find(&self, css: &str) -> Element {
        for _ in 0..WAIT_ROUNDS {
            if let Some(e) = self.try_find(css).await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no element matches `{css}`; page text:\n{}",
            self.body_text().await
        );
    }

    /// Click `css` (found afresh, so a re-rendered element is no problem).
    pub async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.raw("POST", &self.at(&format!("/element/{}/click", e.0)), None)
            .await;
    }

    /// Clear the field `css` and type `text` into it.
    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.raw("POST", &self.at(&format!("/element/{}/clear", e.0)), None)
            .await;
        let body = json!({"text": text});
        self.raw(
            "POST",
            &self.at(&format!("/element/{}/value", e.0)),
            Some(body),
        )
        .await;
    }

    /// The rendered text of `css`.
    pub async fn text(&self, css: &str) -> String {
        let e = self.find(css).await;
        self.raw("GET", &self.at(&format!("/element/{}/text", e.0)), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Run `script` (a function body; `arguments` holds `args`) and return its result.
    pub async fn exec(&self, script: &str, args: Value) -> Value {
        let body = json!({"script": script, "args": args});
        self.raw("POST", &self.at("/execute/sync"), Some(body))
            .await
    }

    /// The whole page's text (for failure messages).
    pub async fn body_text(&self) -> String {
        self.try_raw(
            "POST",
            &self.at("/execute/sync"),
            Some(json!({"script": "return document.body ? document.body.innerText : ''", "args": []})),
        )
        .await
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|e| format!("(cannot read the page: {e})"))
    }

    /// Wait (bounded) until `script` returns true; panics with `what` and
    /// the page text if it never does.
    pub async fn wait_for(&self, what: &str, script: &str, args: Value) {
        for _ in 0..WAIT_ROUNDS {
            let body = json!({"script": script, "args": args});
            if let Ok(v) = self
                .try_raw("POST", &self.at("/execute/sync"), Some(body))
                .await
                && v == Value::Bool(true)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "never happened: {what}; page text:\n{}",
            self.body_text().await
        );
    }

    /// Save a PNG screenshot of the viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let v = self.raw("GET", &self.at("/screenshot"), None).await;
        let png = base64_decode(v.as_str().expect("screenshot is base64"));
        assert!(png.starts_with(b"\x89PNG"), "screenshot is not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // End the session (chromedriver then quits Chromium) with a plain
        // blocking request: Drop cannot await.
        if !self.session.is_empty()
            && let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port))
        {
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let req = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session, self.port
            );
            if s.write_all(req.as_bytes()).is_ok() {
                let mut sink = Vec::new();
                let _ = s.read_to_end(&mut sink);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (with padding) to bytes.
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|&b| b != b'=').collect();
        let mut n = 0u32;
        for (i, &c) in data.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        for i in 0..data.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}
