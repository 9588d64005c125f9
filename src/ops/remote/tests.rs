//! Unit tests of the remote backend: host-only refusals, URL building, and
//! how failures map to the local error variants.

use super::*;

#[test]
fn a_host_only_refusal_is_known_by_its_type_not_its_words() {
    let e = host_only("`reply --via chat`");
    assert!(is_host_only(&e));
    assert_eq!((e.reason(), kind_of(&e).as_str()), ("invalid", "host_only"));
    // The same words from the daemon (a plain 422) are not the marker.
    let echoed = Error::invalid(e.to_string());
    assert!(!is_host_only(&echoed));
}

fn kind_of(e: &Error) -> String {
    serde_json::to_value(e).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn urls_are_checked_and_segments_encoded() {
    let r = Remote::new("http://127.0.0.1:8642", Some(" hnd_x ".into())).unwrap();
    assert_eq!(r.token.as_deref(), Some("hnd_x"));
    assert_eq!(
        r.route(&["boards", "Launch plan", "rows", "a/b"]).as_str(),
        "http://127.0.0.1:8642/v1/boards/Launch%20plan/rows/a%2Fb"
    );
    let under = Remote::new("https://example.com/handoff", None).unwrap();
    assert_eq!(
        under.route(&["pending"]).as_str(),
        "https://example.com/handoff/v1/pending"
    );
    assert!(Remote::new("127.0.0.1:8642", None).is_err());
    assert!(Remote::new("ftp://x", None).is_err());
    let e = Remote::new("nope", None).unwrap_err().to_string();
    assert!(e.contains("HANDOFF_URL"), "{e}");
    assert!(
        !format!("{r:?}").contains("hnd_x"),
        "the token never prints"
    );
}

#[test]
fn failures_map_to_the_local_error_variants() {
    let f = |status: u16, reason: &str| Failure {
        status,
        reason: reason.into(),
        message: "m".into(),
        detail: Some(serde_json::json!({"x": 1})),
    };
    let kind = |e: Error| match e {
        Error::Denied { .. } => "denied",
        Error::NotFound { .. } => "not_found",
        Error::Ambiguous { .. } => "ambiguous",
        Error::Refused { .. } => "refused",
        Error::Invalid { .. } | Error::HostOnly { .. } => "invalid",
        Error::Busy { .. } => "busy",
        Error::Internal { .. } => "internal",
    };
    for (status, reason, want) in [
        (401, "unauthorized", "denied"),
        (403, "wrong_role", "denied"),
        (404, "not_found", "not_found"),
        (409, "ambiguous", "ambiguous"),
        (422, "invalid", "invalid"),
        (503, "busy", "busy"),
        (0, "unreachable", "internal"),
    ] {
        assert_eq!(
            kind(Error::from(f(status, reason))),
            want,
            "{status} {reason}"
        );
    }
    match Error::from(f(409, "stale")) {
        Error::Refused { reason, detail, .. } => {
            assert_eq!(reason, "stale");
            assert_eq!(detail["x"], 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        Error::from(f(403, "wrong_project")).reason(),
        "wrong_project"
    );
}
