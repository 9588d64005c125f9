//! Unit tests of the Inbox session cookie and the same-origin check.

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn the_cookie_is_found_among_others() {
    let h = headers(&[("cookie", "a=1; handoff_inbox=abc ; b=2")]);
    assert_eq!(cookie_secret(&h).as_deref(), Some("abc"));
    let h = headers(&[("cookie", "a=1"), ("cookie", "handoff_inbox=x")]);
    assert_eq!(cookie_secret(&h).as_deref(), Some("x"));
    assert_eq!(
        cookie_secret(&headers(&[("cookie", "xhandoff_inbox=1")])),
        None
    );
    assert_eq!(cookie_secret(&HeaderMap::new()), None);
}

#[test]
fn the_session_cookie_is_strict_and_http_only() {
    let v = session_cookie("abc", 60, false).unwrap();
    let text = v.to_str().unwrap();
    for part in [
        "handoff_inbox=abc",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=60",
    ] {
        assert!(text.contains(part), "{text} lacks {part}");
    }
    assert!(!text.contains("Secure"), "{text}");
    let tls = session_cookie("", 0, true).unwrap();
    let tls = tls.to_str().unwrap();
    assert!(tls.contains("Secure") && tls.contains("Max-Age=0"), "{tls}");
}

#[test]
fn same_origin_needs_an_origin_matching_the_host() {
    let ok = [
        ("host", "127.0.0.1:8642"),
        ("origin", "http://127.0.0.1:8642"),
    ];
    assert!(same_origin(&headers(&ok)));
    let tls = [
        ("host", "inbox.example"),
        ("origin", "https://inbox.example"),
    ];
    assert!(same_origin(&headers(&tls)));
    for bad in [
        vec![
            ("host", "127.0.0.1:8642"),
            ("origin", "https://evil.example"),
        ],
        vec![
            ("host", "127.0.0.1:8642"),
            ("origin", "http://127.0.0.1:9999"),
        ],
        vec![("host", "127.0.0.1:8642"), ("origin", "null")],
        vec![("host", "127.0.0.1:8642")],
    ] {
        assert!(!same_origin(&headers(&bad)), "{bad:?}");
    }
}
