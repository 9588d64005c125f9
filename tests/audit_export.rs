//! The tamper-evident audit export: `handoff audit export` writes JSON
//! Lines chained by SHA-256, `handoff audit verify` checks a file offline
//! and names the first entry changed, removed, inserted or reordered, the
//! head is recorded in the event log, secrets stay redacted, and `GET
//! /v1/audit/export` answers admin and auditor tokens only.
//!
//! The expected hashes are computed here from the documented canonical
//! encoding (compact JSON, keys sorted bytewise at every level) with this
//! file's own encoder, not handoff's.

mod api_support;
mod common;

use api_support::Api;
use axum::http::StatusCode;
use common::{TempDb, json, stderr, stdout};
use handoff::store::tokens::Role;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The canonical encoding, written independently: objects with keys in
/// bytewise order, no whitespace; scalars as JSON writes them.
fn canon(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canon(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canon).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn hash_of(entry: &Map<String, Value>) -> String {
    let mut m = entry.clone();
    m.remove("hash");
    sha(&canon(&Value::Object(m)))
}

/// A database with a few audited actions: one approved, one rejected, one
/// whose arguments hold a secret.
fn seeded() -> TempDb {
    let db = TempDb::new();
    let propose = |kind: &str, args: &str| {
        let out = db.cli(&[
            "--json",
            "propose",
            "--kind",
            kind,
            "--summary",
            "do it",
            "--args",
            args,
            "--as",
            "agent",
            "--project",
            "shop",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)["action"]["id"].as_str().unwrap().to_string()
    };
    let a = propose("deploy", r#"{"version":"1.2"}"#);
    assert!(db.cli(&["approve", &a, "--as", "alice"]).status.success());
    let b = propose(
        "email.send",
        r#"{"to":"x@example.com","api_token":"s3cret-value"}"#,
    );
    assert!(
        db.cli(&["reject", &b, "--as", "bob", "--reason", "not today"])
            .status
            .success()
    );
    propose("refund", r#"{"amount":5}"#);
    db
}

fn export(db: &TempDb) -> String {
    let out = db.cli(&["audit", "export"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// `handoff audit verify` on `text`: its exit code and JSON answer.
fn verify(db: &TempDb, text: &str) -> (Option<i32>, Value) {
    let path = db.dir.path().join("check.jsonl");
    std::fs::write(&path, text).unwrap();
    let out = db.cli(&["--json", "audit", "verify", path.to_str().unwrap()]);
    (out.status.code(), json(&out))
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn join(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// What verify says is broken: (kind, line, entry).
fn broken(v: &Value) -> (String, i64, Option<i64>) {
    let d = &v["error"]["detail"];
    (
        v["error"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        d["line"].as_i64().unwrap_or(-1),
        d["entry"].as_i64(),
    )
}

#[test]
fn the_chain_is_what_the_documented_encoding_gives_and_round_trips() {
    let db = seeded();
    let text = export(&db);
    let ls = lines(&text);
    assert!(ls.len() >= 6, "entries and a head: {text}");
    let (head, entries) = ls.split_last().unwrap();
    let mut prev = "0".repeat(64);
    for (i, l) in entries.iter().enumerate() {
        let Value::Object(e) = serde_json::from_str::<Value>(l).unwrap() else {
            panic!("an object per line: {l}");
        };
        assert_eq!(e["n"], i as u64 + 1);
        assert_eq!(
            e["prev"],
            prev.as_str(),
            "line {} chains to the one before",
            i + 1
        );
        assert_eq!(e["hash"], hash_of(&e).as_str(), "line {}", i + 1);
        assert_eq!(e["project"], "shop");
        assert_eq!(
            l,
            &canon(&Value::Object(e.clone())),
            "each line is itself canonical"
        );
        prev = e["hash"].as_str().unwrap().to_string();
    }
    let h: Value = serde_json::from_str(head).unwrap();
    assert_eq!(h["head"], prev.as_str());
    assert_eq!(h["entries"], entries.len());
    assert!(
        !text.contains("s3cret-value"),
        "secrets stay redacted: {text}"
    );
    assert!(text.contains("[redacted]"), "{text}");

    let (code, v) = verify(&db, &text);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["verified"]["head"], prev.as_str());

    // The daemon's log records the head of every export.
    let events = stdout(&db.cli(&["--json", "events", "--tail", "5"]));
    assert!(events.contains("audit.exported"), "{events}");
    assert!(events.contains(&prev), "{events}");

    // --head: the recorded head must be the file's.
    let path = db.dir.path().join("ok.jsonl");
    std::fs::write(&path, &text).unwrap();
    let p = path.to_str().unwrap();
    assert!(
        db.cli(&["audit", "verify", p, "--head", &prev])
            .status
            .success()
    );
    let other = db.cli(&["audit", "verify", p, "--head", &"1".repeat(64)]);
    assert_eq!(other.status.code(), Some(3), "{}", stderr(&other));

    // --project and --since narrow it; the narrowed file verifies too.
    let none = stdout(&db.cli(&["audit", "export", "--project", "elsewhere"]));
    assert_eq!(none.lines().count(), 1, "only the head: {none}");
    assert_eq!(verify(&db, &none).0, Some(0));
    let later = stdout(&db.cli(&["audit", "export", "--since", "2999-01-01T00:00:00Z"]));
    assert_eq!(later.lines().count(), 1, "{later}");
}

#[test]
fn each_kind_of_tampering_fails_naming_the_entry() {
    let db = seeded();
    let ls = lines(&export(&db));
    let k = 3; // the entry tampered with (n), on line 3

    // One byte changed: the actor's first letter.
    let mut edited = ls.clone();
    let at = edited[k - 1].find("\"actor\":\"").unwrap() + "\"actor\":\"".len();
    let mut bytes = edited[k - 1].clone().into_bytes();
    bytes[at] = if bytes[at] == b'z' { b'y' } else { b'z' };
    edited[k - 1] = String::from_utf8(bytes).unwrap();
    let (code, v) = verify(&db, &join(&edited));
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(
        broken(&v),
        ("changed".into(), k as i64, Some(k as i64)),
        "{v}"
    );

    // Dropped.
    let mut dropped = ls.clone();
    dropped.remove(k - 1);
    let (code, v) = verify(&db, &join(&dropped));
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(
        broken(&v),
        ("removed".into(), k as i64, Some(k as i64)),
        "{v}"
    );

    // Inserted: a well-formed entry forged to chain to the one before it.
    let before: Map<String, Value> = serde_json::from_str(&ls[k - 2]).unwrap();
    let mut forged: Map<String, Value> = serde_json::from_str(&ls[k - 1]).unwrap();
    forged.insert("actor".into(), json!("mallory"));
    forged.insert("prev".into(), before["hash"].clone());
    let h = hash_of(&forged);
    forged.insert("hash".into(), json!(h));
    let mut inserted = ls.clone();
    inserted.insert(k - 1, canon(&Value::Object(forged)));
    let (code, v) = verify(&db, &join(&inserted));
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(
        broken(&v),
        ("inserted".into(), k as i64, Some(k as i64)),
        "{v}"
    );

    // Inserted: a copy of an earlier entry.
    let mut copied = ls.clone();
    copied.insert(k, ls[0].clone());
    let (_, v) = verify(&db, &join(&copied));
    assert_eq!(
        broken(&v),
        ("inserted".into(), k as i64 + 1, Some(1)),
        "{v}"
    );

    // Swapped with the next one.
    let mut swapped = ls.clone();
    swapped.swap(k - 1, k);
    let (code, v) = verify(&db, &join(&swapped));
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(
        broken(&v),
        ("reordered".into(), k as i64, Some(k as i64 + 1)),
        "{v}"
    );

    // Cut short at the end (the last entry gone, the head kept).
    let mut cut = ls.clone();
    let last = cut.len() - 2;
    cut.remove(last);
    let (code, v) = verify(&db, &join(&cut));
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(broken(&v).0, "removed", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("entries"),
        "{v}"
    );
}

#[tokio::test]
async fn the_export_route_is_for_admin_and_auditor_tokens() {
    let api = Api::new().await;
    let agent = api.token("bot", Role::Agent, None).await;
    let human = api.token("hank", Role::Human, None).await;
    let auditor = api.token("audrey", Role::Auditor, None).await;
    let scoped = api.token("sam", Role::Auditor, Some("other")).await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&agent),
            Some(json!({"kind": "deploy", "summary": "ship", "args": {"password": "hunter2"}, "project": "p"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    for t in [&agent, &human] {
        let (st, v) = api.call("GET", "/v1/audit/export", Some(t), None).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
        assert_eq!(v["reason"], "wrong_role", "{v}");
    }
    let (st, v) = api
        .call("GET", "/v1/audit/export", Some(&auditor), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let text: String = v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{}\n", l.as_str().unwrap()))
        .collect();
    assert_eq!(v["entries"], 1, "{v}");
    assert!(!text.contains("hunter2"), "{text}");
    handoff::store::audit::verify(&text, v["head"].as_str()).expect("the file verifies");
    // An auditor sees arguments as a person does: redacted.
    let id = {
        let (_, l) = api.call("GET", "/v1/actions", Some(&auditor), None).await;
        l["items"][0]["id"].as_str().map(str::to_string)
    };
    if let Some(id) = id {
        let (_, a) = api
            .call("GET", &format!("/v1/actions/{id}"), Some(&auditor), None)
            .await;
        assert!(!a.to_string().contains("hunter2"), "{a}");
    }
    // A scoped auditor gets its own project's entries only.
    let (st, v) = api
        .call("GET", "/v1/audit/export", Some(&scoped), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["entries"], 0, "{v}");
    // Each export's head is in the event log.
    let (_, ev) = api
        .call("GET", "/v1/events?tail=5", Some(&auditor), None)
        .await;
    assert!(ev.to_string().contains("audit.exported"), "{ev}");
}

/// The export's `since` is documented as an RFC 3339 date-time, so an
/// empty value is outside the schema (and refused, saying what to give),
/// while any date-time the schema allows — offset, fraction — is taken.
#[tokio::test]
async fn since_is_documented_as_a_date_time_and_every_one_is_taken() {
    let api = Api::new().await;
    let (_, doc) = api.call("GET", "/v1/openapi.json", None, None).await;
    let params = doc["paths"]["/v1/audit/export"]["get"]["parameters"]
        .as_array()
        .expect("the export route has parameters")
        .clone();
    let since = params
        .iter()
        .find(|p| p["name"] == "since")
        .expect("since is a parameter");
    assert_eq!(since["schema"]["format"], "date-time", "{since}");
    let auditor = api.token("audrey", Role::Auditor, None).await;
    let (st, v) = api
        .call("GET", "/v1/audit/export?since=", Some(&auditor), None)
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v["message"].as_str().unwrap().contains("RFC 3339"), "{v}");
    for t in [
        "2026-12-01T00:00:00Z",
        "1999-12-31T23:59:59.123456%2B05:30",
        "2026-12-01",
    ] {
        let (st, v) = api
            .call(
                "GET",
                &format!("/v1/audit/export?since={t}"),
                Some(&auditor),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{t}: {v}");
    }
}
