use std::net::SocketAddr;

use super::*;

fn parse(s: &str) -> Result<Config, Error> {
    Config::parse(s, Path::new("test.toml"))
}

#[test]
fn empty_config_is_all_defaults() {
    let c = parse("").unwrap();
    assert!(c.telegram.token.is_empty());
    assert_eq!(c.http.listen.port(), 8642);
    assert!(
        !c.http.open,
        "the API needs tokens unless opened explicitly"
    );
    assert_eq!(c.telegram.digest_threshold, 5);
    assert_eq!(c.route("p", "a", None), None);
}

#[test]
fn unknown_keys_are_errors() {
    for bad in [
        "colour = 1",
        "[telegram]\ntokn = \"x\"",
        "[[telegram.chats]]\nname=\"a\"\nchat_id=1\nanswr=[1]",
        "[[route]]\nchat=\"a\"\nprojekt=\"x\"",
    ] {
        let e = parse(bad).unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{bad}: {e}");
    }
}

#[test]
fn routes_first_match_then_first_chat() {
    let c = parse(
        r#"
        [[telegram.chats]]
        name = "me"
        chat_id = 1
        [[telegram.chats]]
        name = "ops"
        chat_id = -100
        topic = 7
        [[route]]
        project = "infra"
        kind = "deploy"
        chat = "ops"
        [[route]]
        agent = "reviewer"
        chat = "ops"
        topic = 9
        "#,
    )
    .unwrap();
    assert_eq!(c.route("infra", "x", Some("deploy")).unwrap().chat_id, -100);
    assert_eq!(
        c.route("infra", "x", Some("deploy")).unwrap().topic,
        Some(7)
    );
    assert_eq!(c.route("infra", "x", None).unwrap().chat, "me");
    assert_eq!(c.route("web", "reviewer", None).unwrap().topic, Some(9));
    assert_eq!(c.route("web", "coder", None).unwrap().chat, "me");
}

#[test]
fn invalid_combinations_are_explained() {
    let e = parse("[[route]]\nchat = \"nowhere\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no [[telegram.chats]]"), "{e}");
    let e = parse(
        "[[telegram.chats]]\nname=\"a\"\nchat_id=1\n[[telegram.chats]]\nname=\"a\"\nchat_id=2",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("two"), "{e}");
    let e = parse("[telegram]\nmode = \"webhook\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("webhook_url"), "{e}");
}

#[test]
fn discipline_settings_parse_and_bad_ones_name_key_and_line() {
    let c = parse(
        "[[kinds]]\nmatch = 'claude.Bash'\ngrace_secs = 0\n\n[[kinds]]\nmatch = 'claude.*'\ngrace_secs = 5\ntimeout_secs = 600\n\n[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22:00-07:00'\nutc_offset = '+01:00'\n",
    )
    .unwrap();
    assert_eq!(
        c.grace_ms(Some("claude.Bash")),
        0,
        "the first entry setting it wins"
    );
    assert_eq!(c.grace_ms(Some("claude.Edit")), 5000);
    assert_eq!(c.grace_ms(Some("deploy")), 0);
    assert_eq!(c.grace_ms(None), 0, "questions and rows have no kind");
    assert_eq!(
        c.kind_timeout("claude.Bash"),
        Some(std::time::Duration::from_secs(600)),
        "a later entry sets what the first leaves out"
    );
    assert_eq!(c.kind_timeout("codex.Bash"), None);
    assert!(c.telegram.chats[0].quiet().is_some());
    for (text, line, key) in [
        (
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22-7'\n",
            4,
            "quiet_hours",
        ),
        (
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '07:00-07:00'\n",
            4,
            "quiet_hours",
        ),
        (
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22:00-07:00'\nutc_offset = 'CET'\n",
            5,
            "utc_offset",
        ),
        (
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nutc_offset = '+01:00'\n",
            4,
            "utc_offset",
        ),
        (
            "\n[[kinds]]\nmatch = 'claude.*'\ntimeout_secs = 0\n",
            2,
            "timeout_secs",
        ),
        (
            "\n[[kinds]]\nmatch = 'claude.*'\n",
            2,
            "grace_secs, timeout_secs",
        ),
        ("\n[[kinds]]\nmatch = '*x'\ngrace_secs = 1\n", 2, "match"),
    ] {
        match parse(text) {
            Err(Error::Invalid {
                line: Some(n),
                message,
                ..
            }) => {
                assert_eq!(n, line, "{text}: {message}");
                assert!(message.contains(key), "{text}: {message}");
                assert_eq!(message.lines().count(), 1, "{message}");
            }
            other => panic!("{text}: expected an error with a line, got {other:?}"),
        }
    }
    for bad in [
        "[[kinds]]\nmatch = 'a'\ngrace = 1\n",
        "[[kinds]]\nkind = 'a'\ngrace_secs = 1\n",
        "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet = '22:00-07:00'\n",
    ] {
        let e = parse(bad).unwrap_err().to_string();
        assert!(
            e.contains("unknown field") || e.contains("missing field"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn parse_errors_are_one_line_naming_line_and_key() {
    for (text, want) in [
        (
            "[http]\nopen = true\nopen = false\n",
            "line 3: duplicate key (`open`)",
        ),
        (
            "\n[[kinds]]\nmatch = 'a'\ngrace = 1\n",
            "line 4: unknown field `grace`",
        ),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn errors_found_after_parsing_name_their_line() {
    for (text, line) in [
        (
            "[[rule]]\nname = 'a'\nkind = 'x'\ndecide = 'approve'\n\n[[rule]]\nname = 'b'\nkind = 'x'\ndecide = 'approve'\nwhen = [{ pointer = 'nope', equals = 1 }]\n",
            6,
        ),
        (
            "[telegram]\ndigest_threshold = 5\npoll_timeout_secs = 60\n",
            3,
        ),
        ("\n[http]\nheader_timeout_secs = 0\n", 3),
        (
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\n\n[[route]]\nchat = 'b'\n",
            5,
        ),
        ("# wake\n[[notify]]\nevents = ['nope']\nexec = ['x']\n", 2),
        ("[telegram]\nmode = 'webhook'\n", 2),
    ] {
        match parse(text) {
            Err(Error::Invalid { line: Some(n), .. }) => assert_eq!(n, line, "{text}"),
            other => panic!("{text}: expected an error with a line, got {other:?}"),
        }
    }
    let e = parse("[http]\nmax_connections = 0\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "config test.toml line 2: http.max_connections must be at least 1"
    );
    // A rule's message names it once.
    let e = parse("[[rule]]\nname = 'r'\nkind = 'x'\ndecide = 'approve'\nwhen = [{ pointer = 'p', equals = 1 }]\n")
        .unwrap_err()
        .to_string();
    assert_eq!(e.matches("`r`").count(), 1, "{e}");
}

#[test]
fn listen_takes_an_address_or_a_host_name() {
    let c = parse("[http]\nlisten = 'localhost:8642'").unwrap();
    assert_eq!(c.http.listen, SocketAddr::from(([127, 0, 0, 1], 8642)));
    let c = parse("[http]\nlisten = '[::1]:9'").unwrap();
    assert_eq!(c.http.listen.port(), 9);
    for bad in ["localhost", "127.0.0.1", ":8642"] {
        let e = parse(&format!("[http]\nlisten = '{bad}'"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("localhost:8642"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn secrets_do_not_leak_through_debug() {
    let c = parse("[telegram]\ntoken = \"123:abc\"").unwrap();
    let shown = format!("{c:?}");
    assert!(!shown.contains("123:abc"), "{shown}");
    assert_eq!(c.telegram.token.expose(), "123:abc");
}

#[cfg(test)]
mod example {
    /// The example file in `config/` must always parse.
    #[test]
    fn the_example_config_parses() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/handoff.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let c = super::Config::parse(&text, &path).unwrap();
        assert_eq!(c.telegram.chats.len(), 2);
        assert!(c.rules.is_empty(), "a copy decides nothing by itself");
        // Its commented rules parse once uncommented.
        let (head, rest) = text.split_once("Uncomment and adapt:\n").unwrap();
        let (rules, tail) = rest.split_once("\n\n").unwrap();
        let rules: String = rules
            .lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
            .collect::<Vec<_>>()
            .join("\n");
        let with = format!("{head}\n{rules}\n\n{tail}");
        let c = super::Config::parse(&with, &path).unwrap();
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.route("infra", "x", Some("deploy")).unwrap().chat, "ops");
        // The commented notification-discipline examples parse once uncommented.
        let mut on = text.clone();
        for key in [
            "quiet_hours = ",
            "utc_offset = ",
            "[[kinds]]",
            "match = ",
            "grace_secs = ",
            "timeout_secs = 600",
        ] {
            on = on.replacen(&format!("# {key}"), key, 1);
        }
        let c = super::Config::parse(&on, &path).unwrap();
        assert!(c.telegram.chats[0].quiet().is_some());
        assert_eq!(c.grace_ms(Some("claude.Bash")), 5000);
        assert_eq!(
            c.kind_timeout("claude.Bash"),
            Some(std::time::Duration::from_secs(600))
        );
    }
}

#[cfg(test)]
mod wake_example {
    /// The commented wake-up examples in the example file parse once uncommented.
    #[test]
    fn the_commented_wake_examples_parse() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/handoff.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let tail = &text[text.find("# Wake-ups:").expect("wake section")..];
        let uncommented: String = tail
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let c = super::Config::parse(&uncommented, &path).unwrap();
        assert_eq!(c.notify.len(), 2);
        assert_eq!(c.wake.sources.len(), 3);
        assert!(c.wake.webhook_allowed("https://ci.example.com/x"));
        assert!(!c.wake.webhook_allowed("https://ci.example.com.evil/x"));
    }
}
