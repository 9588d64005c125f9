//! The scenario's questions and boards.

use super::{Runner, n, s};

/// Every question command, refusals included.
pub fn questions(r: &mut Runner) {
    let q1 = r.ok(
        "ask",
        &[
            "ask",
            "Which database?",
            "--detail",
            "for the orders service",
            "--option",
            "Postgres",
            "--option",
            "SQLite",
            "--recommend",
            "1",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--session",
            "s-1",
            "--key",
            "db",
        ],
    );
    let q1 = s(&q1["question"]["id"]);
    let q1_short = &q1[q1.len() - 8..];
    r.ok(
        "ask again in place",
        &[
            "ask",
            "Which DB?",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--session",
            "s-1",
            "--key",
            "db",
        ],
    );
    r.run(
        "ask --wait times out",
        &[
            "ask",
            "Which DB?",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--key",
            "db",
            "--wait",
            "--timeout",
            "300ms",
        ],
    );
    r.ok("questions", &["questions", "--project", "demo"]);
    r.ok("show (short id)", &["show", q1_short]);
    r.run("show unknown", &["show", "ffffffff"]);
    r.ok(
        "reply",
        &[
            "reply",
            q1_short,
            "Postgres",
            "--by",
            "tester",
            "--context",
            "we run it",
        ],
    );
    r.run(
        "answer refused: a human's reply waits",
        &["answer", &q1, "SQLite", "--by", "tester"],
    );
    r.ok(
        "pending",
        &["pending", "--project", "demo", "--by", "tester"],
    );
    r.ok(
        "pending again",
        &["pending", "--project", "demo", "--by", "tester"],
    );
    r.ok("answer", &["answer", &q1, "Postgres 16", "--by", "tester"]);
    r.run(
        "reply stale revision",
        &["reply", &q1, "MySQL", "--by", "tester", "--revision", "1"],
    );
    r.ok("snooze", &["snooze", &q1, "--for", "2h", "--by", "tester"]);
    r.ok(
        "resolve",
        &["resolve", &q1, "--outcome", "Postgres", "--by", "tester"],
    );
    r.run(
        "reply on a resolved question",
        &["reply", &q1, "late", "--by", "tester"],
    );
    r.text("show (text)", &["show", &q1]);
    let q2 = r.ok(
        "ask to dismiss",
        &[
            "ask",
            "Ship on Friday?",
            "--project",
            "demo",
            "--agent",
            "tester",
        ],
    );
    let q2 = s(&q2["question"]["id"]);
    r.ok(
        "dismiss",
        &["dismiss", &q2, "--reason", "moot", "--by", "tester"],
    );
    r.run("dismiss again", &["dismiss", &q2, "--by", "tester"]);
    r.ok("questions all", &["questions", "--status", "all"]);

    // ask --wait picks up a reply given while it waits.
    let waiter = r.spawn(&[
        "ask",
        "Deploy now?",
        "--project",
        "demo",
        "--agent",
        "tester",
        "--key",
        "deploy",
        "--wait",
        "--timeout",
        "30s",
    ]);
    let listed = r.until(
        "the waiting question",
        &["questions", "--project", "demo"],
        |v| {
            v["questions"]
                .as_array()
                .is_some_and(|l| l.iter().any(|q| q["key"] == "deploy"))
        },
    );
    let q3 = listed["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["key"] == "deploy")
        .map(|q| s(&q["id"]))
        .unwrap();
    r.ok(
        "reply to the waiter",
        &["reply", &q3, "yes", "--by", "tester"],
    );
    r.collect("ask --wait got the reply", waiter);
}

/// Every board command, refusals included.
pub fn boards(r: &mut Runner) {
    let rows = r#"[{"label":"db","status":"blocked","next_step":"pick a database","owner":"decision"},{"label":"ci","status":"done"}]"#;
    let b = r.ok(
        "board upsert",
        &[
            "board",
            "upsert",
            "demo",
            "Launch",
            "--rows",
            rows,
            "--agent",
            "tester",
            "--session",
            "s-1",
        ],
    );
    let version = n(&b["board"]["board_version"]);
    let db_rev = n(&b["board"]["rows"][0]["revision"]);
    r.run(
        "board upsert stale",
        &[
            "board",
            "upsert",
            "demo",
            "Launch",
            "--rows",
            "[]",
            "--version",
            "99",
        ],
    );
    let b = r.ok(
        "board row",
        &[
            "board",
            "row",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--note",
            "orders need it",
            "--by",
            "tester",
        ],
    );
    let db_rev = n(&b["board"]["rows"][0]["revision"]);
    r.run(
        "board row stale",
        &[
            "board",
            "row",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            "1",
            "--note",
            "x",
            "--by",
            "tester",
        ],
    );
    r.run(
        "board get unknown",
        &["board", "get", "Nope", "--project", "demo"],
    );
    r.ok(
        "board annotate",
        &[
            "board",
            "annotate",
            "Launch",
            "db",
            "use Postgres",
            "--project",
            "demo",
            "--by",
            "tester",
        ],
    );
    r.ok(
        "board handled",
        &[
            "board",
            "handled",
            "Launch",
            "db",
            "--project",
            "demo",
            "--by",
            "tester",
        ],
    );
    r.ok(
        "board handoffs",
        &["board", "handoffs", "--project", "demo"],
    );
    r.ok(
        "board pending --peek",
        &["board", "pending", "--project", "demo", "--peek"],
    );
    r.ok(
        "board pending",
        &[
            "board",
            "pending",
            "--project",
            "demo",
            "--reader",
            "tester",
        ],
    );
    let b = r.ok(
        "board get",
        &["board", "get", "Launch", "--project", "demo"],
    );
    let db_rev = {
        let _ = db_rev;
        n(&b["board"]["rows"][0]["revision"])
    };
    let version = {
        let _ = version;
        n(&b["board"]["board_version"])
    };
    let b = r.ok(
        "board advance",
        &[
            "board",
            "advance",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--version",
            &version,
            "--outcome",
            "Postgres chosen",
            "--next-step",
            "provision it",
            "--owner",
            "task",
            "--by",
            "tester",
        ],
    );
    let db_rev = n(&b["board"]["rows"][0]["revision"]);
    r.run(
        "board advance stale",
        &[
            "board",
            "advance",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--version",
            "1",
            "--next-step",
            "x",
            "--by",
            "tester",
        ],
    );
    let b = r.ok(
        "board outcome",
        &[
            "board",
            "outcome",
            "Launch",
            "db",
            "provisioned",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--by",
            "tester",
        ],
    );
    let version = n(&b["board"]["board_version"]);
    r.ok(
        "board get summary",
        &["board", "get", "--project", "demo", "--all"],
    );
    r.ok(
        "board get --full",
        &["board", "get", "--project", "demo", "--full", "--all"],
    );
    r.text(
        "board get (text)",
        &["board", "get", "Launch", "--project", "demo"],
    );
    r.run(
        "board archive stale",
        &[
            "board",
            "archive",
            "Launch",
            "--project",
            "demo",
            "--version",
            "1",
            "--by",
            "tester",
        ],
    );
    r.run(
        "board archive an auto-archived board",
        &[
            "board",
            "archive",
            "Launch",
            "--project",
            "demo",
            "--version",
            &version,
            "--by",
            "tester",
        ],
    );
    let later = r.ok(
        "board upsert another",
        &["board", "upsert", "demo", "Later", "--agent", "tester"],
    );
    r.ok(
        "board archive",
        &[
            "board",
            "archive",
            "Later",
            "--project",
            "demo",
            "--version",
            &n(&later["board"]["board_version"]),
            "--by",
            "tester",
        ],
    );
}
