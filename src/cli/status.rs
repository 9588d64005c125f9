//! `handoff init` and `handoff status`: where the commands' database is.
//!
//! `init` creates the database every other command will use (the same
//! resolution: `--db`, `HANDOFF_DB`, the config's `[store] path`, the
//! default), folder included; running it again only says so. `status` says
//! which config file and database the commands use, what waits in it, whether
//! a daemon at the configured address serves that same file (its `/healthz`
//! names the file by [`crate::store::fingerprint`] to a caller with a
//! token; without one, the daemon answering on the file's owner-only socket
//! must be the same daemon), whether chat is on, and,
//! with `HANDOFF_URL` set, whether that daemon answers. Neither calls Telegram,
//! and `status` creates nothing.

use std::time::Duration;

use serde::Serialize;

use serde_json::json;

use super::{Ctx, exit, fail};
use crate::config::DatabaseRef;
use crate::store::{Store, counts::Overview};

/// How long `status` waits for a daemon's `/healthz`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// `handoff init`: create the database at the resolved path.
pub(crate) async fn init(ctx: &Ctx) -> anyhow::Result<u8> {
    ctx.local_only("init")?;
    let (path, source) = ctx.database()?;
    let existed = path.exists();
    // Opening creates the folder and the file and applies the schema; on an
    // existing file it only brings the schema up to date.
    let store = Store::open(&path).await?;
    store.close().await;
    let v = serde_json::json!({"database": {
        "path": path,
        "named_by": source.to_string(),
        "created": !existed,
    }});
    ctx.print(&v, || {
        if existed {
            format!(
                "the database {} ({source}) already exists; its schema is up to date",
                path.display()
            )
        } else {
            format!("created the database {} ({source})", path.display())
        }
    });
    Ok(exit::OK)
}

/// `handoff migrate`: apply this build's missing migrations to the
/// database and exit, saying which it applied. Unlike `init` it creates
/// nothing: a deploy step that names a database that is not there is a
/// mistake to report, not a fresh file to make.
pub(crate) async fn migrate(ctx: &Ctx) -> anyhow::Result<u8> {
    ctx.local_only("migrate")?;
    let (at, source) = ctx.database_ref()?;
    let (place, shown, applied, version) = match at {
        DatabaseRef::File(path) => {
            if !path.exists() {
                return Err(fail(exit::INVALID, super::missing_database(&path, &source)));
            }
            let (store, applied) = Store::open_migrating(&path).await?;
            store.close().await;
            let shown = path.display().to_string();
            (
                json!({"path": path}),
                shown,
                applied,
                crate::store::schema_version(),
            )
        }
        DatabaseRef::Postgres(url) => {
            let applied = crate::store::postgres::migrate(&url).await?;
            let shown = crate::store::postgres::shown(&url);
            (
                json!({"url": shown}),
                shown,
                applied,
                crate::store::postgres::schema_version(),
            )
        }
    };
    let mut v = json!({"database": place});
    v["database"]["named_by"] = json!(source.to_string());
    v["database"]["schema_version"] = json!(version);
    v["database"]["applied"] = json!(applied);
    ctx.print(&v, || match applied.len() {
        0 => format!(
            "the database {shown} ({source}) is at schema version {version}: nothing to apply"
        ),
        n => format!(
            "applied {n} migration{} to the database {shown} ({source}); its schema is at version {version}",
            if n == 1 { "" } else { "s" },
        ),
    });
    Ok(exit::OK)
}

/// What `handoff status` reports.
#[derive(Debug, Serialize)]
struct Status {
    /// The config file read, or `None` (the defaults).
    config: Option<String>,
    /// The local database (not in remote mode).
    database: Option<Database>,
    /// The daemon at the config's listen address (not in remote mode).
    daemon: Option<Daemon>,
    /// Chat as the config sets it up.
    chat: Chat,
    /// The daemon at `HANDOFF_URL`, when set.
    remote: Option<Daemon>,
}

#[derive(Debug, Serialize)]
struct Database {
    path: String,
    named_by: String,
    /// Named by `--db`, `HANDOFF_DB` or the config (so it must exist), not
    /// the default location (created by the first command that needs it).
    named: bool,
    exists: bool,
    counts: Option<Overview>,
}

#[derive(Debug, Serialize)]
struct Daemon {
    url: String,
    /// `/healthz` answered.
    running: bool,
    /// It serves the database above (`None`: unknown, e.g. remote mode or
    /// a daemon too old to say).
    serves_this_database: Option<bool>,
    /// Why it is not running, or what it answered.
    note: String,
    /// The daemon's opaque id (`/healthz` `daemon`).
    #[serde(skip)]
    id: Option<String>,
}

#[derive(Debug, Serialize)]
struct Chat {
    on: bool,
    /// The bot's numeric id, the part of the token before `:`.
    bot_id: Option<String>,
    mode: &'static str,
    chats: Vec<String>,
}

/// A failure `status` ends with, after its report: the exit code and the
/// one-line message.
type Missing = Option<(u8, String)>;

/// `handoff status`.
pub(crate) async fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let (cfg, cfg_path) = ctx.config()?;
    let mut status = Status {
        config: cfg_path.map(|p| p.display().to_string()),
        database: None,
        daemon: None,
        chat: chat(cfg),
        remote: None,
    };
    // The one-line error `status` ends with, after the report: a named
    // database that does not exist, or a remote daemon that does not answer
    // (every command would fail the same way).
    let missing = match &ctx.url {
        Some(url) => remote(&mut status, url).await,
        None => local(&mut status, ctx, cfg).await?,
    };
    match missing {
        None => {
            ctx.show("status", &status, || text(&status));
            Ok(exit::OK)
        }
        // The report still helps: as text before the error line, and with
        // --json as the error's detail.
        Some((code, m)) => {
            if !ctx.json {
                ctx.show("status", &status, || text(&status));
            }
            let detail = super::one("status", &status, serde_json::Value::Null);
            Err(super::refusal(code, &detail, m))
        }
    }
}

/// Chat as the config sets it up (the token itself never shown).
fn chat(cfg: &crate::config::Config) -> Chat {
    let token = cfg.telegram.token.expose();
    Chat {
        on: !token.is_empty(),
        bot_id: token
            .split_once(':')
            .map(|(id, _)| id.to_string())
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())),
        mode: match cfg.telegram.mode {
            crate::config::TelegramMode::Polling => "polling",
            crate::config::TelegramMode::Webhook => "webhook",
        },
        chats: cfg.telegram.chats.iter().map(|c| c.name.clone()).collect(),
    }
}

/// With `HANDOFF_URL`: whether that daemon answers.
async fn remote(status: &mut Status, url: &str) -> Missing {
    let remote = probe(url.trim_end_matches('/'), None).await;
    let missing = (!remote.running).then(|| {
        (
            exit::INTERNAL,
            format!(
                "the daemon at HANDOFF_URL={} does not answer: {}; start it there, or fix or unset HANDOFF_URL",
                remote.url, remote.note
            ),
        )
    });
    status.remote = Some(remote);
    missing
}

/// Without `HANDOFF_URL`: the local database, what waits in it, and
/// whether a daemon at the config's listen address serves that same file.
async fn local(
    status: &mut Status,
    ctx: &Ctx,
    cfg: &crate::config::Config,
) -> anyhow::Result<Missing> {
    let (path, source) = ctx.database()?;
    let exists = path.exists();
    let counts = match exists {
        true => Some(Store::open(&path).await?.overview().await?),
        false => None,
    };
    let missing = (!exists && source.is_named())
        .then(|| (exit::INVALID, super::missing_database(&path, &source)));
    let mine = exists.then(|| crate::store::fingerprint(&path));
    let url = super::inbox::daemon_url(&cfg.http);
    status.daemon = Some(if cfg.http.listen.port() == 0 {
        Daemon {
            url,
            running: false,
            serves_this_database: None,
            note: "[http] listen has port 0 (any free port): cannot tell where a daemon is".into(),
            id: None,
        }
    } else {
        let base = format!("http://{}", super::inbox::loopback_of(cfg.http.listen));
        let mut d = probe(&base, mine.as_deref()).await;
        if let (true, None, Some(id), Some(mine)) = (
            d.running,
            d.serves_this_database,
            d.id.as_deref(),
            mine.as_deref(),
        ) {
            let serves = serves_over_socket(&path, id, mine).await;
            d.serves_this_database = Some(serves);
            d.note = note(Some(serves));
        }
        d.url = url;
        d
    });
    status.database = Some(Database {
        path: path.display().to_string(),
        named_by: source.to_string(),
        named: source.is_named(),
        exists,
        counts,
    });
    Ok(missing)
}

/// Ask `base/healthz`; `mine` is the local database's fingerprint.
async fn probe(base: &str, mine: Option<&str>) -> Daemon {
    let down = |note: String| Daemon {
        url: base.to_string(),
        running: false,
        serves_this_database: None,
        note,
        id: None,
    };
    let client = match reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => return down(format!("cannot make an HTTP client: {e}")),
    };
    let resp = match client.get(format!("{base}/healthz")).send().await {
        Ok(r) => r,
        Err(e) if e.is_connect() => return down("not running (nothing answers there)".into()),
        Err(e) if e.is_timeout() => return down("no answer within 3 s".into()),
        Err(e) => return down(format!("unreachable: {e}")),
    };
    let code = resp.status();
    let body: serde_json::Value = resp.json().await.unwrap_or_default();
    if !code.is_success() || body["ok"] != true {
        return down(format!("answers {code}, not healthy: {body}"));
    }
    let theirs = body["database"].as_str();
    let serves = match (mine, theirs) {
        (Some(m), Some(t)) => Some(m == t),
        (None, Some(_)) => Some(false),
        _ => None,
    };
    Daemon {
        url: base.to_string(),
        running: true,
        serves_this_database: serves,
        note: note(serves),
        id: body["daemon"].as_str().map(str::to_string),
    }
}

fn note(serves: Option<bool>) -> String {
    match serves {
        Some(true) => "running, serving this database".into(),
        Some(false) => "running, but serving another database file".into(),
        None => "running".into(),
    }
}

/// Whether the daemon `id` (which named no database: `/healthz` gives that
/// only to a caller with a token) serves the database at `path`: the
/// daemon serving a file answers on the owner-only socket next to it, and
/// says there which daemon it is and which file it serves. No answer
/// there: it serves another file.
async fn serves_over_socket(path: &std::path::Path, id: &str, mine: &str) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .unix_socket(crate::store::socket_path(path))
        .timeout(PROBE_TIMEOUT)
        .build()
    else {
        return false;
    };
    let Ok(resp) = client.get("http://localhost/healthz").send().await else {
        return false;
    };
    let body: serde_json::Value = resp.json().await.unwrap_or_default();
    body["daemon"] == id && body["database"] == mine
}

fn text(s: &Status) -> String {
    let mut out = format!(
        "config:   {}\n",
        s.config
            .as_deref()
            .unwrap_or("none (defaults; looked for --config, HANDOFF_CONFIG, config/handoff.toml, ~/.config/handoff/handoff.toml)")
    );
    if let Some(r) = &s.remote {
        out += &format!("remote:   HANDOFF_URL={} ({})\n", r.url, r.note);
    }
    if let Some(d) = &s.database {
        out += &format!("database: {} ({})", d.path, d.named_by);
        match &d.counts {
            Some(c) => {
                out += &format!(
                    "\n          {} open questions, {} pending actions, {} unknown outcomes, {} blocked rows, {} live sessions, {} events\n",
                    c.open_questions,
                    c.pending_actions,
                    c.unknown_actions,
                    c.blocked_rows,
                    c.live_sessions,
                    c.last_seq
                );
            }
            None if d.named => out += ": does not exist (`handoff init` creates it)\n",
            None => {
                out += ": does not exist yet (the first command or `handoff init` creates it)\n"
            }
        }
    }
    if let Some(d) = &s.daemon {
        out += &format!("daemon:   {}: {}\n", d.url, d.note);
    }
    out += &match (&s.chat.on, &s.chat.bot_id) {
        (false, _) => "chat:     off (no Telegram token)\n".to_string(),
        (true, bot) => format!(
            "chat:     on, {}, {} mode, chats: {}\n",
            bot.as_ref()
                .map_or("bot id unknown".to_string(), |b| format!("bot {b}")),
            s.chat.mode,
            if s.chat.chats.is_empty() {
                "none configured".to_string()
            } else {
                s.chat.chats.join(", ")
            }
        ),
    };
    out
}
