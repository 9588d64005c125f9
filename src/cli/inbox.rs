//! `handoff inbox-link`: a one-time login link to the web Inbox.
//!
//! The link carries a random code (only its hash is stored) that works once,
//! until `--ttl` passes; opening it in a browser starts a 7-day session
//! acting as `--as`. The daemon serves the page; this command only writes
//! the code, into the database the daemon of the same config serves, and
//! builds the link from that config's `[http] public_url` or listen address.
//! Host-only: against `HANDOFF_URL` it refuses (the code must be written
//! into the daemon's own database).

use super::{Ctx, exit, fail};

/// Build the login URL for `base` (the daemon's address) and `code`.
fn login_url(base: &str, code: &str) -> anyhow::Result<String> {
    let bad = |why: &str| {
        fail(
            exit::INVALID,
            format!("--url `{base}` {why}: give the daemon's address, e.g. http://127.0.0.1:8642"),
        )
    };
    let mut url = url::Url::parse(base.trim()).map_err(|_| bad("is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad("is not an http(s) address"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("has a query or fragment"));
    }
    // Keep a path prefix (a reverse proxy may serve the daemon under one).
    let path = format!("{}/inbox/login", url.path().trim_end_matches('/'));
    url.set_path(&path);
    url.query_pairs_mut().append_pair("code", code);
    Ok(url.to_string())
}

/// The address a browser reaches the daemon of `http` at: its public URL,
/// else its listen address (a wildcard address is reached over loopback).
pub(crate) fn daemon_url(http: &crate::config::HttpConfig) -> String {
    if let Some(u) = http.public_url.as_deref().map(str::trim) {
        return u.to_string();
    }
    format!("http://{}", loopback_of(http.listen))
}

/// The address to reach a daemon listening on `addr` at (a wildcard
/// address is reached over loopback).
pub(crate) fn loopback_of(mut addr: std::net::SocketAddr) -> std::net::SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr
}

/// Why no daemon answers `base/healthz` (within 3 s), or `None` when one does.
async fn daemon_down(base: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(3))
        .build()
        .ok()?;
    match client.get(format!("{base}/healthz")).send().await {
        Ok(r) if r.status().is_success() => None,
        Ok(r) => Some(format!("it answers {}", r.status())),
        Err(e) if e.is_connect() => Some("nothing answers there".into()),
        Err(e) if e.is_timeout() => Some("no answer within 3 s".into()),
        Err(e) => Some(format!("unreachable: {e}")),
    }
}

/// Create the code and print the link.
pub(crate) async fn run(
    url: Option<String>,
    ttl: &str,
    name: &str,
    ctx: &Ctx,
) -> anyhow::Result<u8> {
    if ctx.remote() {
        return Err(fail(
            exit::INVALID,
            "`handoff inbox-link` must run on the daemon's host: it writes the login code into the database there (unset HANDOFF_URL, or run it on that host)",
        ));
    }
    let ttl_ms = crate::clock::parse_duration_ms(ttl)
        .map_err(|e| fail(exit::INVALID, format!("--ttl: {e}")))?;
    let url = match url {
        Some(u) => u,
        None => daemon_url(&ctx.config()?.0.http),
    };
    let url = url.as_str();
    // Validate the URL before writing anything.
    login_url(url, &"0".repeat(64))?;
    let store = ctx.store().await?;
    let link = store
        .inbox_link_create(name, ttl_ms)
        .await
        .map_err(|e| crate::cli::store_failure(&e))?;
    let full = login_url(url, &link.code)?;
    // A link to where no daemon answers is dead until one starts: say so,
    // the link itself stays valid until it expires.
    let down = daemon_down(url.trim_end_matches('/')).await;
    let warning = down.as_ref().map(|why| {
        format!(
            "the link leads nowhere yet ({url}: {why}): start the daemon with `handoff serve`, then open it"
        )
    });
    let v = serde_json::json!({"inbox_link": {
        "url": full,
        "name": link.name,
        "expires_at": crate::clock::format_rfc3339(link.expires_at),
        "daemon_running": down.is_none(),
        "warning": warning,
    }});
    if let (Some(w), false) = (&warning, ctx.json) {
        eprintln!("handoff: warning: {w}");
    }
    ctx.print(&v, || {
        format!(
            "{full}\n\nOpen it in a browser to log in to the Inbox as `{}`. It works once, until {}.",
            link.name,
            crate::clock::format_rfc3339(link.expires_at)
        )
    });
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_host_and_prefix_and_refuse_junk() {
        assert_eq!(
            login_url("http://127.0.0.1:8642", "ab").unwrap(),
            "http://127.0.0.1:8642/inbox/login?code=ab"
        );
        assert_eq!(
            login_url("https://box.example/handoff/", "ab").unwrap(),
            "https://box.example/handoff/inbox/login?code=ab"
        );
        for bad in ["127.0.0.1:8642", "ftp://x", "http://x/?a=1", "not a url"] {
            assert!(login_url(bad, "ab").is_err(), "{bad}");
        }
    }
}
