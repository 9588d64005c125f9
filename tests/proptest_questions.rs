//! Property test: random sequences of operations on one question, checked
//! step by step against a small in-memory model of docs/design.md §2 — the three
//! writers and the asymmetric rule (Inbox always wins; chat and agent only
//! over no unclaimed reply; a chat `clarify` may replace an unclaimed chat
//! reply), blank Inbox clears, exact pickup, stale revisions, and closing
//! (nothing reopens). Every accepted reply is in the append-only history.
//! Run on both engines (a temp SQLite file; a fresh PostgreSQL database).

mod common;

use common::engine::{Db, Engine};
use handoff::store::questions::{
    Channel, NewQuestion, NewReply, Question, QuestionOption, Refusal, ReplyKind, Status,
};
use proptest::prelude::*;

/// One step an agent or a human may take.
#[derive(Debug, Clone)]
enum Op {
    Inbox {
        text: &'static str,
        kind: ReplyKind,
    },
    Chat {
        text: &'static str,
        kind: ReplyKind,
        /// How far the button's revision is from the question's (0: current).
        stale: i64,
    },
    Agent {
        text: &'static str,
    },
    Pickup,
    Reflag,
    Resolve,
    Dismiss,
}

fn kind() -> impl Strategy<Value = ReplyKind> {
    prop_oneof![
        3 => Just(ReplyKind::Answer),
        2 => Just(ReplyKind::Clarify),
        1 => Just(ReplyKind::Decline),
    ]
}

fn text() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        4 => prop::sample::select(vec!["yes", "no", " postgres ", "sqlite"]),
        1 => prop::sample::select(vec!["", "   "]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (text(), kind()).prop_map(|(text, kind)| Op::Inbox { text, kind }),
        5 => (text(), kind(), prop_oneof![8 => Just(0i64), 2 => prop::sample::select(vec![-1i64, -2, -3, -7, 1, 2])])
            .prop_map(|(text, kind, stale)| Op::Chat { text, kind, stale }),
        3 => text().prop_map(|text| Op::Agent { text }),
        4 => Just(Op::Pickup),
        1 => Just(Op::Reflag),
        1 => Just(Op::Resolve),
        1 => Just(Op::Dismiss),
    ]
}

/// The standing reply as the model sees it.
#[derive(Debug, Clone, PartialEq)]
struct MReply {
    text: String,
    kind: ReplyKind,
    source: Channel,
    seen: bool,
}

/// docs/design.md §2 in a few lines.
#[derive(Debug, Clone)]
struct Model {
    status: Status,
    reply: Option<MReply>,
    reply_seq: i64,
    revision: i64,
}

/// What the model says a write returns: accepted, or refused and why.
#[derive(Debug, PartialEq)]
enum Expect {
    Ok,
    Refused(&'static str),
}

fn refusal_name(r: &Refusal) -> &'static str {
    match r {
        Refusal::Empty => "empty",
        Refusal::NotFound => "not_found",
        Refusal::NotOpen { .. } => "not_open",
        Refusal::UnreadAnswer { .. } => "unread_answer",
        Refusal::Stale { .. } => "stale",
        Refusal::AlreadyPickedUp { .. } => "already_picked_up",
    }
}

fn blank(text: &str, kind: ReplyKind) -> bool {
    text.trim().is_empty() && kind != ReplyKind::Decline
}

impl Model {
    fn open(&self) -> bool {
        self.status == Status::Open
    }

    fn set(&mut self, text: &str, kind: ReplyKind, source: Channel, seen: bool) {
        self.reply = Some(MReply {
            text: text.trim().to_string(),
            kind,
            source,
            seen,
        });
        self.reply_seq += 1;
    }

    /// An unclaimed reply is waiting.
    fn unread(&self) -> bool {
        self.reply.as_ref().is_some_and(|r| !r.seen)
    }

    fn inbox(&mut self, text: &str, kind: ReplyKind) -> Expect {
        if !self.open() {
            return Expect::Refused("not_open");
        }
        if blank(text, kind) {
            // A blank Inbox reply clears only a reply nobody picked up.
            return match &self.reply {
                None => Expect::Refused("empty"),
                Some(r) if r.seen => Expect::Refused("already_picked_up"),
                Some(_) => {
                    self.reply = None;
                    self.reply_seq += 1;
                    Expect::Ok
                }
            };
        }
        self.set(text, kind, Channel::Inbox, false);
        Expect::Ok
    }

    fn chat(&mut self, text: &str, kind: ReplyKind, stale: bool) -> Expect {
        if blank(text, kind) {
            return Expect::Refused("empty");
        }
        if !self.open() {
            return Expect::Refused("not_open");
        }
        if stale {
            return Expect::Refused("stale");
        }
        let clarify_over_chat = kind == ReplyKind::Clarify
            && self
                .reply
                .as_ref()
                .is_some_and(|r| r.source == Channel::Chat);
        if self.unread() && !clarify_over_chat {
            return Expect::Refused("unread_answer");
        }
        self.set(text, kind, Channel::Chat, false);
        Expect::Ok
    }

    fn agent(&mut self, text: &str) -> Expect {
        if blank(text, ReplyKind::Answer) {
            return Expect::Refused("empty");
        }
        if !self.open() {
            return Expect::Refused("not_open");
        }
        if self.unread() {
            // Refused, and handed the unread reply: that reply is now picked up.
            if let Some(r) = self.reply.as_mut() {
                r.seen = true;
            }
            return Expect::Refused("unread_answer");
        }
        self.set(text, ReplyKind::Answer, Channel::Agent, true);
        Expect::Ok
    }

    /// How many replies a pickup hands over (new ones only).
    fn pickup(&mut self) -> usize {
        if self.open() && self.unread() {
            if let Some(r) = self.reply.as_mut() {
                r.seen = true;
            }
            1
        } else {
            0
        }
    }

    fn close(&mut self, to: Status) -> Expect {
        if !self.open() {
            return Expect::Refused("not_open");
        }
        self.status = to;
        Expect::Ok
    }
}

fn check(step: usize, op: &Op, m: &Model, q: &Question) {
    let ctx = format!("step {step} after {op:?}\nmodel {m:?}\nstored {q:#?}");
    assert_eq!(q.status, m.status, "status: {ctx}");
    assert_eq!(q.reply_seq, m.reply_seq, "reply_seq: {ctx}");
    assert_eq!(q.revision, m.revision, "revision: {ctx}");
    let stored = q.reply.as_ref().map(|r| MReply {
        text: r.text.clone(),
        kind: r.kind,
        source: r.source,
        seen: r.seen_at.is_some(),
    });
    assert_eq!(stored, m.reply, "reply: {ctx}");
}

fn outcome<T>(r: Result<T, Refusal>) -> Expect {
    match r {
        Ok(_) => Expect::Ok,
        Err(refusal) => Expect::Refused(refusal_name(&refusal)),
    }
}

async fn run(engine: Engine, ops: Vec<Op>) {
    let db = Db::new(engine).await;
    let (store, clock) = db.open_manual(1_700_000_000_000).await;
    let new = NewQuestion {
        project: "p".into(),
        agent: "agent-1".into(),
        session: "s".into(),
        key: Some("k".into()),
        title: "Which database?".into(),
        options: vec![
            QuestionOption {
                label: "postgres".into(),
                recommended: true,
            },
            QuestionOption {
                label: "sqlite".into(),
                recommended: false,
            },
        ],
        ..Default::default()
    };
    let id = store.flag(&new).await.unwrap().question.id;
    let mut m = Model {
        status: Status::Open,
        reply: None,
        reply_seq: 0,
        revision: 1,
    };
    let reply = |text: &str, kind, by: &str, rev: Option<i64>| NewReply {
        text: text.into(),
        kind,
        by: by.into(),
        expected_revision: rev,
        ..Default::default()
    };
    for (step, op) in ops.iter().enumerate() {
        // Half the steps land in the same millisecond as the previous one:
        // the rules must not depend on timestamps differing.
        if step % 2 == 0 {
            clock.advance(1);
        }
        match op {
            Op::Inbox { text, kind } => {
                let got = outcome(
                    store
                        .reply_inbox(&id, &reply(text, *kind, "alice", None))
                        .await
                        .unwrap(),
                );
                assert_eq!(got, m.inbox(text, *kind), "step {step} {op:?}");
            }
            Op::Chat { text, kind, stale } => {
                // Any revision but the current one is stale: an old button
                // (several edits back) or one from no drawing at all.
                let rev = m.revision + stale;
                let got = outcome(
                    store
                        .reply_chat(&id, &reply(text, *kind, "@bob", Some(rev)))
                        .await
                        .unwrap(),
                );
                assert_eq!(got, m.chat(text, *kind, *stale != 0), "step {step} {op:?}");
            }
            Op::Agent { text } => {
                let got = outcome(
                    store
                        .answer_agent(&id, &reply(text, ReplyKind::Answer, "agent-1", None))
                        .await
                        .unwrap(),
                );
                assert_eq!(got, m.agent(text), "step {step} {op:?}");
            }
            Op::Pickup => {
                let got = store
                    .pending(None, Some("s"), false, "agent-1")
                    .await
                    .unwrap();
                assert_eq!(got.len(), m.pickup(), "step {step} {op:?}: {got:#?}");
                assert!(got.iter().all(|d| d.new && d.question.id == id));
            }
            Op::Reflag => {
                if !m.open() {
                    // A closed key flags a new question; this model follows one.
                    continue;
                }
                let f = store.flag(&new).await.unwrap();
                assert!(!f.created, "step {step}: an open key updates in place");
                assert_eq!(f.question.id, id);
                m.revision += 1;
            }
            Op::Resolve => {
                let got = outcome(
                    store
                        .resolve_question(&id, "done", "agent-1")
                        .await
                        .unwrap(),
                );
                assert_eq!(got, m.close(Status::Resolved), "step {step} {op:?}");
            }
            Op::Dismiss => {
                let got = outcome(
                    store
                        .dismiss_question(&id, None, "alice", Channel::Inbox)
                        .await
                        .unwrap(),
                );
                assert_eq!(got, m.close(Status::Dismissed), "step {step} {op:?}");
            }
        }
        let q = store.get_question(&id).await.unwrap().expect("question");
        check(step, op, &m, &q);
        // Every accepted write is in the append-only history, one row per
        // reply_seq, and the last row is what stands.
        let history = store.question_replies(&id).await.unwrap();
        let seqs: Vec<i64> = history.iter().map(|h| h.reply_seq).collect();
        assert_eq!(seqs, (1..=m.reply_seq).collect::<Vec<_>>(), "step {step}");
        if let Some(last) = history.last() {
            assert_eq!(
                last.reply.as_deref(),
                m.reply.as_ref().map(|r| r.text.as_str()),
                "step {step}: the last history row is the standing reply"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(64)))]

    #[test]
    fn question_writers_follow_the_asymmetric_rule(ops in prop::collection::vec(op(), 1..24)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(Engine::Sqlite, ops));
    }

    /// The same model, the same sequences, on PostgreSQL (a fresh
    /// database per case).
    #[test]
    fn question_writers_follow_the_asymmetric_rule_on_postgres(ops in prop::collection::vec(op(), 1..24)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(Engine::Postgres, ops));
    }
}
