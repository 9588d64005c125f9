//! Request bodies must be JSON objects: an array is not read as a struct's
//! fields by position, and a scalar or a body nested past the limit is
//! refused in the house error format (through the real `handoff serve`).

mod common;

use common::TempDb;
use common::daemon::Daemon;
use serde_json::{Value, json};

#[tokio::test]
async fn arrays_scalars_and_deep_bodies_are_refused_and_change_nothing() {
    let db = TempDb::new();
    let store = db.open().await;
    let q = common::ask(&store, "Keep me open").await;
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    let d = Daemon::start(&db.path, &cfg);
    let http = reqwest::Client::new();
    let post = |path: String, body: String| {
        http.post(format!("http://{}{path}", d.addr))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let before = store.last_event_seq().await.unwrap();
    let deep = format!(
        "{{\"title\":\"t\",\"x\":{}1{}}}",
        "[".repeat(70),
        "]".repeat(70)
    );
    let dismiss = format!("/v1/questions/{}/dismiss", q.id);
    let cases = [
        (
            "/v1/questions".to_string(),
            r#"["arr","","",null,"t"]"#.to_string(),
            "not_an_object",
            "an array",
        ),
        (
            dismiss.clone(),
            "[null,null]".into(),
            "not_an_object",
            "an array",
        ),
        (dismiss.clone(), "null".into(), "not_an_object", "null"),
        (
            "/v1/questions".into(),
            r#""title""#.into(),
            "not_an_object",
            "a string",
        ),
        (
            "/v1/questions".into(),
            " 42 ".into(),
            "not_an_object",
            "a number",
        ),
        ("/v1/questions".into(), deep, "too_deep", "nested 71 levels"),
    ];
    for (path, body, reason, says) in cases {
        let res = post(path.clone(), body.clone()).await.unwrap();
        let status = res.status().as_u16();
        let v: Value = res.json().await.unwrap();
        assert_eq!(
            (status, v["reason"].as_str()),
            (422, Some(reason)),
            "{path} {body}: {v}"
        );
        let msg = v["message"].as_str().unwrap();
        assert!(msg.contains(says) && msg.contains("send"), "{path}: {msg}");
    }
    assert_eq!(
        store.last_event_seq().await.unwrap(),
        before,
        "nothing changed"
    );
    assert_eq!(
        store
            .get_question(&q.id)
            .await
            .unwrap()
            .unwrap()
            .status
            .as_str(),
        "open"
    );

    // Objects still work, and malformed JSON stays a 400.
    let res = post(dismiss, "{}".into()).await.unwrap();
    assert_eq!(res.status().as_u16(), 200, "{:?}", res.text().await);
    let res = post("/v1/questions".into(), "[1,".into()).await.unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["reason"], json!("malformed_json"));
}
