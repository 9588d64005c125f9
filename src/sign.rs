//! Webhook signatures: signing outbound wake-ups per the Standard Webhooks
//! spec, and verifying inbound wakes (Standard Webhooks, GitHub's
//! `X-Hub-Signature-256`, bearer tokens). Pure functions; no I/O, no clock.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How far a Standard Webhooks timestamp may be from now, in seconds.
pub const TOLERANCE_SECS: i64 = 5 * 60;

/// The key bytes of a `whsec_<base64>` secret, or None if it is not one.
pub fn decode_whsec(secret: &str) -> Option<Vec<u8>> {
    let b = secret.strip_prefix("whsec_")?;
    B64.decode(b).ok().filter(|k| !k.is_empty())
}

fn mac(key: &[u8]) -> HmacSha256 {
    // Invariant: HMAC accepts keys of any length.
    HmacSha256::new_from_slice(key).expect("HMAC takes any key length")
}

/// The `webhook-signature` header value (`v1,<base64>`) for a message `id`
/// sent at `timestamp` (seconds) with `body`, signed with `key`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut m = mac(key);
    m.update(format!("{id}.{timestamp}.").as_bytes());
    m.update(body);
    format!("v1,{}", B64.encode(m.finalize().into_bytes()))
}

/// Why an inbound signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A required header is absent or not text.
    #[error("missing header `{0}`")]
    Missing(&'static str),
    /// The timestamp is not a number of seconds.
    #[error("bad webhook-timestamp")]
    BadTimestamp,
    /// The timestamp is more than 5 minutes from now.
    #[error("webhook-timestamp is more than 5 minutes away from now")]
    Stale,
    /// No signature matched.
    #[error("signature does not match")]
    BadSignature,
}

/// Verify a Standard Webhooks request: `signatures` is the
/// `webhook-signature` header (space-separated `v1,<base64>` entries, any
/// one may match), `now_secs` the current time.
pub fn verify_standard(
    key: &[u8],
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now_secs: i64,
) -> Result<(), Refused> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| Refused::BadTimestamp)?;
    if (now_secs - ts).abs() > TOLERANCE_SECS {
        return Err(Refused::Stale);
    }
    for sig in signatures.split_whitespace() {
        let Some(b64) = sig.strip_prefix("v1,") else {
            continue;
        };
        let Ok(raw) = B64.decode(b64) else {
            continue;
        };
        let mut m = mac(key);
        m.update(format!("{id}.{ts}.").as_bytes());
        m.update(body);
        // verify_slice compares in constant time.
        if m.verify_slice(&raw).is_ok() {
            return Ok(());
        }
    }
    Err(Refused::BadSignature)
}

/// Verify GitHub's `X-Hub-Signature-256: sha256=<hex>` over `body`.
pub fn verify_github(secret: &[u8], header: &str, body: &[u8]) -> Result<(), Refused> {
    let hex = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(Refused::BadSignature)?;
    let raw = decode_hex(hex).ok_or(Refused::BadSignature)?;
    let mut m = mac(secret);
    m.update(body);
    m.verify_slice(&raw).map_err(|_| Refused::BadSignature)
}

/// Compare two secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // Compare fixed-size digests so neither the length nor the first
    // differing byte shows in the timing.
    use sha2::Digest;
    let (x, y) = (Sha256::digest(a), Sha256::digest(b));
    x.iter()
        .zip(y.iter())
        .fold(0u8, |acc, (p, q)| acc | (p ^ q))
        == 0
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    const ID: &str = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
    const TS: i64 = 1649367553;
    const BODY: &str = r#"{"email":"test@example.com","username":"test_user"}"#;

    #[test]
    fn the_published_test_vector_signs_and_verifies() {
        let key = decode_whsec(SECRET).unwrap();
        let sig = sign(&key, ID, TS, BODY.as_bytes());
        assert_eq!(sig, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
        let header = format!("v1,bogus {sig}");
        assert_eq!(
            verify_standard(&key, ID, &TS.to_string(), &header, BODY.as_bytes(), TS + 10),
            Ok(())
        );
    }

    #[test]
    fn standard_refusals() {
        let key = decode_whsec(SECRET).unwrap();
        let sig = sign(&key, ID, TS, BODY.as_bytes());
        let ts = TS.to_string();
        let cases = [
            (ts.as_str(), sig.as_str(), "{}", TS, Refused::BadSignature),
            (ts.as_str(), "v1,AAAA", BODY, TS, Refused::BadSignature),
            (ts.as_str(), sig.as_str(), BODY, TS + 301, Refused::Stale),
            (ts.as_str(), sig.as_str(), BODY, TS - 301, Refused::Stale),
            ("soon", sig.as_str(), BODY, TS, Refused::BadTimestamp),
        ];
        for (ts, sig, body, now, want) in cases {
            assert_eq!(
                verify_standard(&key, ID, ts, sig, body.as_bytes(), now),
                Err(want.clone()),
                "{ts} {sig} {body} {now}"
            );
        }
        assert!(decode_whsec("C2FV").is_none());
        assert!(decode_whsec("whsec_!!").is_none());
    }

    #[test]
    fn github_signature() {
        // From GitHub's docs: secret "It's a Secret to Everybody", body "Hello, World!".
        let h = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            verify_github(b"It's a Secret to Everybody", h, b"Hello, World!"),
            Ok(())
        );
        assert!(verify_github(b"wrong", h, b"Hello, World!").is_err());
        assert!(verify_github(b"It's a Secret to Everybody", "sha1=00", b"x").is_err());
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
