//! Property tests of the codecs at the edges: the chat callback-data codec
//! (every button round-trips within Telegram's 64 bytes; `decode` never
//! panics and what it accepts re-encodes to the same meaning) and config
//! parsing (never panics on arbitrary or TOML-shaped text; a generated valid
//! config round-trips field by field).

use std::path::Path;

use handoff::chat::{Callback, Item, Verb};
use handoff::config::Config;
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Callback data.

/// Telegram's limit on callback data, in bytes.
const MAX_LEN: usize = 64;

fn item_verb() -> impl Strategy<Value = (Item, Verb)> {
    prop_oneof![
        (0u8..8).prop_map(|n| (Item::Question, Verb::Option(n))),
        Just((Item::Question, Verb::Clarify)),
        Just((Item::Question, Verb::Decline)),
        Just((Item::Row, Verb::Answer)),
        Just((Item::Row, Verb::Handled)),
        Just((Item::Row, Verb::Decline)),
        Just((Item::Action, Verb::Approve)),
        Just((Item::Action, Verb::Reject)),
        Just((Item::Action, Verb::Edit)),
        Just((Item::Action, Verb::MarkExecuted)),
        Just((Item::Action, Verb::MarkFailed)),
        Just((Item::Action, Verb::Retry)),
    ]
}

fn callback() -> impl Strategy<Value = Callback> {
    (item_verb(), "[0-9a-f]{32}", 0..=i64::MAX).prop_map(|((item, verb), id, revision)| Callback {
        item,
        id,
        revision,
        verb,
    })
}

/// Strings shaped like callback data, so `decode` gets past its first checks.
fn callback_like() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["q", "r", "a", "x", "", "Q"]),
        prop::sample::select(vec![
            "o", "c", "d", "n", "h", "ap", "rj", "ed", "mx", "mf", "rt", "zz", "",
        ]),
        "[0-9a-fA-Fg]{0,34}",
        prop_oneof![
            "-?[0-9]{0,21}".boxed(),
            Just("+7".to_string()).boxed(),
            Just(" 1".to_string()).boxed()
        ],
        "[0-9a-z|]{0,4}",
    )
        .prop_map(|(k, v, id, rev, arg)| format!("{k}|{v}|{id}|{rev}|{arg}"))
}

/// `$PROPTEST_CASES` when set (CI's long run), else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn every_button_round_trips_within_64_bytes(cb in callback()) {
        let data = cb.encode();
        prop_assert!(data.len() <= MAX_LEN, "{} is {} bytes", data, data.len());
        prop_assert_eq!(Callback::decode(&data), Some(cb));
    }

    #[test]
    fn decode_never_panics_and_what_it_accepts_is_canonical(
        data in prop_oneof![any::<String>(), callback_like()]
    ) {
        if let Some(cb) = Callback::decode(&data) {
            prop_assert!(data.len() <= MAX_LEN);
            // Whatever was accepted means the same once re-encoded.
            prop_assert_eq!(Callback::decode(&cb.encode()), Some(cb));
        }
    }
}

// ---------------------------------------------------------------------------
// Config.

fn parse(text: &str) -> Result<Config, handoff::config::Error> {
    Config::parse(text, Path::new("prop.toml"))
}

/// A TOML string literal.
fn lit(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn toml_ish() -> impl Strategy<Value = String> {
    let header = prop::sample::select(vec![
        "",
        "[telegram]",
        "[telegram.limits]",
        "[[telegram.chats]]",
        "[[route]]",
        "[[notify]]",
        "[wake]",
        "[[wake.sources]]",
        "[http]",
        "[store]",
        "[redact]",
        "[[rule]]",
        "[[rule.when]]",
        "[telegram",
    ]);
    let key = prop::sample::select(vec![
        "token",
        "api_url",
        "mode",
        "webhook_url",
        "digest_threshold",
        "poll_timeout_secs",
        "per_chat_per_sec",
        "name",
        "chat_id",
        "topic",
        "answer",
        "approve",
        "chat",
        "project",
        "kind",
        "events",
        "exec",
        "webhook",
        "secret",
        "timeout_secs",
        "retry_schedule_ms",
        "allowed_webhook_urls",
        "listen",
        "open",
        "path",
        "keys",
        "decide",
        "pointer",
        "equals",
        "command",
        "unknown_key",
    ]);
    let value = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "0",
            "-1",
            "1e400",
            "nan",
            "true",
            "\"\"",
            "[]",
            "[0]",
            "[1, -1]",
            "\"webhook\"",
            "\"polling\"",
            "\"approve\"",
            "\"question.answered\"",
            "[\"question.answered\", \"nope\"]",
            "[\"/bin/true\"]",
            "\"whsec_AAAA\"",
            "\"whsec_!!\"",
            "\"0.0.0.0:1\"",
            "\"127.0.0.1:0\"",
            "\"http://x\"",
            "\"ftp://x\"",
            "{ a = 1 }",
            "[[1]]",
            "\"\\u0000\"",
            "'''x'''",
        ])
        .prop_map(str::to_string),
        ".{0,12}".prop_map(|s| lit(&s)),
    ];
    prop::collection::vec((header, prop::collection::vec((key, value), 0..4)), 0..8).prop_map(
        |sections| {
            let mut out = String::new();
            for (h, kvs) in sections {
                out.push_str(h);
                out.push('\n');
                for (k, v) in kvs {
                    out.push_str(&format!("{k} = {v}\n"));
                }
            }
            out
        },
    )
}

#[derive(Debug, Clone)]
struct GenChat {
    name: String,
    chat_id: i64,
    topic: Option<i32>,
    answer: Vec<u64>,
    approve: Vec<u64>,
}

#[derive(Debug, Clone)]
struct GenRoute {
    project: Option<String>,
    agent: Option<String>,
    kind: Option<String>,
    chat: usize,
    topic: Option<i32>,
}

#[derive(Debug, Clone)]
struct GenNotify {
    name: Option<String>,
    events: Vec<&'static str>,
    exec: Vec<String>,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Clone)]
struct GenConfig {
    token: String,
    digest_threshold: usize,
    poll_timeout_secs: u32,
    limits: [u32; 4],
    chats: Vec<GenChat>,
    routes: Vec<GenRoute>,
    notify: Vec<GenNotify>,
    redact: Vec<String>,
}

fn gen_config() -> impl Strategy<Value = GenConfig> {
    let chat = (
        ".{0,10}",
        any::<i64>(),
        prop::option::of(any::<i32>()),
        prop::collection::vec(0..=i64::MAX as u64, 0..3),
        prop::collection::vec(0..=i64::MAX as u64, 0..3),
    );
    let chats = prop::collection::vec(chat, 1..4).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (name, chat_id, topic, answer, approve))| GenChat {
                // An index prefix keeps names non-blank and unique.
                name: format!("{i}{name}"),
                chat_id,
                topic,
                answer,
                approve,
            })
            .collect::<Vec<_>>()
    });
    let route = (
        prop::option::of(".{0,8}"),
        prop::option::of(".{0,8}"),
        prop::option::of("[a-z.]{1,8}"),
        0..8usize,
        prop::option::of(any::<i32>()),
    )
        .prop_map(|(project, agent, kind, chat, topic)| GenRoute {
            project,
            agent,
            kind,
            chat,
            topic,
        });
    let notify = (
        prop::option::of("[a-z]{1,8}"),
        prop::sample::subsequence(handoff::notify::WAKE_EVENTS.to_vec(), 1..4),
        prop::collection::vec(".{1,10}", 0..3),
        prop::option::of(1..3600u64),
    )
        .prop_map(|(name, events, args, timeout_secs)| GenNotify {
            name,
            events,
            exec: std::iter::once("/usr/local/bin/wake".to_string())
                .chain(args)
                .collect(),
            timeout_secs,
        });
    (
        ".{0,20}",
        1..1000usize,
        0..=15u32,
        prop::array::uniform4(1..10_000u32),
        chats,
        prop::collection::vec(route, 0..4),
        prop::collection::vec(notify, 0..3),
        prop::collection::vec("[a-z_]{1,10}", 0..4),
    )
        .prop_map(
            |(
                token,
                digest_threshold,
                poll_timeout_secs,
                limits,
                chats,
                mut routes,
                notify,
                redact,
            )| {
                for r in &mut routes {
                    r.chat %= chats.len();
                }
                GenConfig {
                    token,
                    digest_threshold,
                    poll_timeout_secs,
                    limits,
                    chats,
                    routes,
                    notify,
                    redact,
                }
            },
        )
}

fn render(g: &GenConfig) -> String {
    let mut s = format!(
        "[telegram]\ntoken = {}\ndigest_threshold = {}\npoll_timeout_secs = {}\n\n\
         [telegram.limits]\nper_chat_per_sec = {}\nper_chat_per_min = {}\nper_group_per_min = {}\noverall_per_sec = {}\n",
        lit(&g.token),
        g.digest_threshold,
        g.poll_timeout_secs,
        g.limits[0],
        g.limits[1],
        g.limits[2],
        g.limits[3],
    );
    for c in &g.chats {
        s.push_str(&format!(
            "\n[[telegram.chats]]\nname = {}\nchat_id = {}\nanswer = {:?}\napprove = {:?}\n",
            lit(&c.name),
            c.chat_id,
            c.answer,
            c.approve
        ));
        if let Some(t) = c.topic {
            s.push_str(&format!("topic = {t}\n"));
        }
    }
    for r in &g.routes {
        s.push_str(&format!(
            "\n[[route]]\nchat = {}\n",
            lit(&g.chats[r.chat].name)
        ));
        for (k, v) in [
            ("project", &r.project),
            ("agent", &r.agent),
            ("kind", &r.kind),
        ] {
            if let Some(v) = v {
                s.push_str(&format!("{k} = {}\n", lit(v)));
            }
        }
        if let Some(t) = r.topic {
            s.push_str(&format!("topic = {t}\n"));
        }
    }
    for n in &g.notify {
        let exec: Vec<String> = n.exec.iter().map(|a| lit(a)).collect();
        let events: Vec<String> = n.events.iter().map(|e| lit(e)).collect();
        s.push_str(&format!(
            "\n[[notify]]\nevents = [{}]\nexec = [{}]\n",
            events.join(", "),
            exec.join(", ")
        ));
        if let Some(name) = &n.name {
            s.push_str(&format!("name = {}\n", lit(name)));
        }
        if let Some(t) = n.timeout_secs {
            s.push_str(&format!("timeout_secs = {t}\n"));
        }
    }
    let keys: Vec<String> = g.redact.iter().map(|k| lit(k)).collect();
    s.push_str(&format!("\n[redact]\nkeys = [{}]\n", keys.join(", ")));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn config_parse_never_panics(text in prop_oneof![any::<String>(), toml_ish()]) {
        // Ok or a clear error; a panic fails the test.
        if let Err(e) = parse(&text) {
            prop_assert!(e.to_string().contains("prop.toml"), "{}", e);
        }
    }

    #[test]
    fn generated_valid_configs_round_trip(g in gen_config()) {
        let text = render(&g);
        let c = match parse(&text) {
            Ok(c) => c,
            Err(e) => panic!("a valid config was refused: {e}\n{text}"),
        };
        prop_assert_eq!(c.telegram.token.expose(), g.token.as_str());
        prop_assert_eq!(c.telegram.digest_threshold, g.digest_threshold);
        prop_assert_eq!(c.telegram.poll_timeout_secs, g.poll_timeout_secs);
        let l = c.telegram.limits;
        prop_assert_eq!(
            [l.per_chat_per_sec, l.per_chat_per_min, l.per_group_per_min, l.overall_per_sec],
            g.limits
        );
        prop_assert_eq!(c.telegram.chats.len(), g.chats.len());
        for (got, want) in c.telegram.chats.iter().zip(&g.chats) {
            prop_assert_eq!(&got.name, &want.name);
            prop_assert_eq!(got.chat_id, want.chat_id);
            prop_assert_eq!(got.topic, want.topic);
            prop_assert_eq!(&got.answer, &want.answer);
            prop_assert_eq!(&got.approve, &want.approve);
        }
        prop_assert_eq!(c.routes.len(), g.routes.len());
        for (got, want) in c.routes.iter().zip(&g.routes) {
            prop_assert_eq!(&got.chat, &g.chats[want.chat].name);
            prop_assert_eq!(&got.project, &want.project);
            prop_assert_eq!(&got.agent, &want.agent);
            prop_assert_eq!(&got.kind, &want.kind);
            prop_assert_eq!(got.topic, want.topic);
        }
        prop_assert_eq!(c.notify.len(), g.notify.len());
        for (got, want) in c.notify.iter().zip(&g.notify) {
            prop_assert_eq!(&got.name, &want.name);
            prop_assert_eq!(&got.events, &want.events.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            prop_assert_eq!(got.exec.as_ref(), Some(&want.exec));
            prop_assert_eq!(got.timeout_secs, want.timeout_secs);
        }
        prop_assert_eq!(&c.redact.keys, &g.redact);
        // Routing agrees: for a project no route names, the first route
        // without filters wins, else the first chat. (Checked only when
        // every route before it filters on a project.)
        let catch_all = |r: &&GenRoute| r.project.is_none() && r.agent.is_none() && r.kind.is_none();
        let want = g.routes.iter().find(catch_all).map_or(g.chats[0].chat_id, |r| g.chats[r.chat].chat_id);
        let before: Vec<&GenRoute> = g.routes.iter().take_while(|r| !catch_all(r)).collect();
        if before.iter().all(|r| r.project.is_some()) {
            let got = c.route("\u{1}no-such-project", "", None).map(|t| t.chat_id);
            prop_assert_eq!(got, Some(want));
        }
    }
}
