//! `[http]`: the daemon's listener, its timeouts and connection limits, and
//! how a listen address is read.

use std::net::SocketAddr;

use serde::Deserialize;

use super::{Bad, Seg};

/// `[http]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Address to listen on: an IP and port, or a host name and port
    /// resolved when the config is read (`localhost:8642`).
    #[serde(default = "default_listen", deserialize_with = "de_listen")]
    pub listen: SocketAddr,
    /// Serve the `/v1` API without tokens. Only honoured on a loopback
    /// address, and only when set explicitly; by default every `/v1` route
    /// needs `Authorization: Bearer hnd_…` (see `handoff token create`).
    #[serde(default)]
    pub open: bool,
    /// The URL people and proxies reach the daemon at (`https://…` behind a
    /// TLS proxy). With `https`, the Inbox cookie is marked `Secure`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Seconds a connection may take to send a request's headers, counted
    /// from when it opens or finishes its previous request: also how long
    /// an idle keep-alive connection is kept.
    #[serde(default = "default_header_timeout")]
    pub header_timeout_secs: u64,
    /// Seconds a request's whole body may take to arrive.
    #[serde(default = "default_body_timeout")]
    pub body_timeout_secs: u64,
    /// Seconds a new connection may take to send its first byte (at most
    /// `header_timeout_secs`).
    #[serde(default = "default_first_byte_timeout")]
    pub first_byte_timeout_secs: u64,
    /// Connections served at once. A newcomer beyond them closes the
    /// oldest idle connection that presented no token; when there is none
    /// it is answered 503 and closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections one client address may hold that have not presented a
    /// valid token or Inbox session; past it, its own oldest idle one is
    /// closed for the newcomer.
    #[serde(default = "default_max_unauthenticated_per_client")]
    pub max_unauthenticated_per_client: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: default_listen(),
            open: false,
            public_url: None,
            header_timeout_secs: default_header_timeout(),
            body_timeout_secs: default_body_timeout(),
            first_byte_timeout_secs: default_first_byte_timeout(),
            max_connections: default_max_connections(),
            max_unauthenticated_per_client: default_max_unauthenticated_per_client(),
        }
    }
}

impl HttpConfig {
    /// Whether people reach the daemon over HTTPS (`public_url`).
    pub fn is_https(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    pub(super) fn check(&self) -> Result<(), Bad> {
        let at = |key| vec![Seg::Key("http"), Seg::Key(key)];
        if let Some(u) = &self.public_url {
            let ok = url::Url::parse(u.trim())
                .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
            if !ok {
                return Err(Bad::at(
                    at("public_url"),
                    format!(
                        "http.public_url `{u}` is not an http:// or https:// URL (e.g. \"https://handoff.example.com\")"
                    ),
                ));
            }
        }
        for (key, v) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_timeout_secs", self.body_timeout_secs),
            ("first_byte_timeout_secs", self.first_byte_timeout_secs),
        ] {
            if !(1..=3600).contains(&v) {
                return Err(Bad::at(
                    at(key),
                    format!("http.{key} must be 1 to 3600 seconds, not {v}"),
                ));
            }
        }
        for (key, v) in [
            ("max_connections", self.max_connections),
            (
                "max_unauthenticated_per_client",
                self.max_unauthenticated_per_client,
            ),
        ] {
            if v == 0 {
                return Err(Bad::at(at(key), format!("http.{key} must be at least 1")));
            }
        }
        Ok(())
    }
}

fn default_header_timeout() -> u64 {
    10
}

fn default_body_timeout() -> u64 {
    30
}

fn default_first_byte_timeout() -> u64 {
    5
}

fn default_max_connections() -> usize {
    512
}

fn default_max_unauthenticated_per_client() -> usize {
    64
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8642))
}

fn de_listen<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    resolve_listen(&text).map_err(serde::de::Error::custom)
}

/// A listen address: `IP:port`, or `host:port` with the host resolved now
/// (its first IPv4 address, so `localhost` is 127.0.0.1, else its first).
pub fn resolve_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let text = text.trim();
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    let shape = "give an address and port like 127.0.0.1:8642 or localhost:8642";
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("`{text}` is not a listen address ({e}): {shape}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("`{text}` resolves to no address: {shape}"))
}
