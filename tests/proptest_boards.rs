//! Property test: random sequences of human and agent writes on one board
//! row, checked step by step against a small in-memory model of docs/design.md §3 —
//! annotations through the Inbox (always wins, blank clears only what no
//! agent received) and chat (only over no unclaimed annotation; a chat
//! `clarify` may correct a chat one), the handled mark (only on a blocked
//! row; never unblocks), delivery markers, outcomes, `board_advance`, fresh
//! blocks, and stale versions (refused, nothing written).

mod common;

use common::engine::{Db, Engine};
use handoff::store::Store;
use handoff::store::boards::{
    Advance, Annotate, AnnotationKind, BoardUpsert, Channel, Handled, NextStep, OutcomeWrite,
    Refusal, Row, RowInput, RowStatus, RowWrite,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Annotate {
        source: Channel,
        text: &'static str,
        kind: AnnotationKind,
        stale: bool,
    },
    Handled {
        stale: bool,
    },
    ClearHandled {
        stale: bool,
    },
    Pickup,
    Outcome {
        text: &'static str,
        stale: bool,
    },
    Advance {
        stale_row: bool,
        stale_board: bool,
        outcome: Option<&'static str>,
    },
    Status {
        to: RowStatus,
        stale: bool,
    },
}

fn kind() -> impl Strategy<Value = AnnotationKind> {
    prop_oneof![
        3 => Just(AnnotationKind::Answer),
        2 => Just(AnnotationKind::Clarify),
        1 => Just(AnnotationKind::Decline),
    ]
}

fn text() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        4 => prop::sample::select(vec!["yes", "no", " use staging ", "done it"]),
        1 => prop::sample::select(vec!["", "  "]),
    ]
}

fn stale() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.15)
}

fn op() -> impl Strategy<Value = Op> {
    let source = prop_oneof![Just(Channel::Inbox), Just(Channel::Chat)];
    prop_oneof![
        6 => (source, text(), kind(), stale())
            .prop_map(|(source, text, kind, stale)| Op::Annotate { source, text, kind, stale }),
        3 => stale().prop_map(|stale| Op::Handled { stale }),
        1 => stale().prop_map(|stale| Op::ClearHandled { stale }),
        4 => Just(Op::Pickup),
        2 => (text(), stale()).prop_map(|(text, stale)| Op::Outcome { text, stale }),
        2 => (stale(), stale(), prop::option::of(text()))
            .prop_map(|(stale_row, stale_board, outcome)| Op::Advance { stale_row, stale_board, outcome }),
        2 => (prop::sample::select(vec![RowStatus::Blocked, RowStatus::Tracked, RowStatus::Partial]), stale())
            .prop_map(|(to, stale)| Op::Status { to, stale }),
    ]
}

#[derive(Debug, Clone, PartialEq)]
struct MAnnotation {
    text: String,
    kind: AnnotationKind,
    source: Channel,
    seen: bool,
}

/// docs/design.md §3 for one row (and the board version it bumps).
#[derive(Debug, Clone)]
struct Model {
    status: RowStatus,
    revision: i64,
    action_version: i64,
    board_version: i64,
    annotation: Option<MAnnotation>,
    /// `Some(seen)` when marked handled.
    handled: Option<bool>,
    outcome: String,
    /// A person responded and the agent has not resolved it yet: set by a
    /// response, cleared by an agent write once nothing is undelivered.
    open: bool,
}

#[derive(Debug, PartialEq)]
enum Expect {
    /// Written: versions bumped.
    Changed,
    /// Accepted, nothing to change (no version bump).
    Unchanged,
    Refused(&'static str),
}

fn refusal_name(r: &Refusal) -> &'static str {
    match r {
        Refusal::Stale { .. } => "stale",
        Refusal::NotFound { .. } => "not_found",
        Refusal::Empty => "empty",
        Refusal::UnreadAnswer { .. } => "unread_answer",
        Refusal::NotBlocked { .. } => "not_blocked",
        Refusal::Archived => "archived",
        Refusal::AlreadyDelivered => "already_delivered",
        Refusal::OutcomeRequired { .. } => "outcome_required",
        Refusal::UnreadResponse { .. } => "unread_response",
    }
}

impl Model {
    fn bump(&mut self) -> Expect {
        self.revision += 1;
        self.board_version += 1;
        Expect::Changed
    }

    fn undelivered(&self) -> bool {
        self.unread_annotation() || self.handled == Some(false)
    }

    fn unread_annotation(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| !a.seen)
    }

    /// An agent's write resolves the response unless an annotation it never
    /// received waits (a handled mark is resolved by the outcome).
    fn agent_wrote(&mut self, undelivered_before: bool) {
        if !undelivered_before {
            self.open = false;
        }
    }

    fn annotate(
        &mut self,
        source: Channel,
        text: &str,
        kind: AnnotationKind,
        stale: bool,
    ) -> Expect {
        let text = text.trim();
        if source == Channel::Chat && text.is_empty() {
            return Expect::Refused("empty");
        }
        if text.is_empty() {
            // A blank Inbox annotation clears only what no agent received.
            return match (&self.annotation, stale) {
                (_, true) => Expect::Refused("stale"),
                (None, _) => Expect::Unchanged,
                (Some(a), _) if a.seen => Expect::Refused("already_delivered"),
                (Some(_), _) => {
                    self.annotation = None;
                    self.bump()
                }
            };
        }
        if stale {
            return Expect::Refused("stale");
        }
        let allowed = source == Channel::Inbox
            || match &self.annotation {
                None => true,
                Some(a) => a.seen || (kind == AnnotationKind::Clarify && a.source == Channel::Chat),
            };
        if !allowed {
            return Expect::Refused("unread_answer");
        }
        self.annotation = Some(MAnnotation {
            text: text.to_string(),
            kind,
            source,
            seen: false,
        });
        self.open = true;
        self.bump()
    }

    fn handled(&mut self, stale: bool) -> Expect {
        if stale {
            return Expect::Refused("stale");
        }
        if self.status != RowStatus::Blocked {
            return Expect::Refused("not_blocked");
        }
        self.handled = Some(false);
        self.open = true;
        self.bump()
    }

    fn clear_handled(&mut self, stale: bool) -> Expect {
        match (self.handled, stale) {
            (_, true) => Expect::Refused("stale"),
            (None, _) => Expect::Unchanged,
            (Some(true), _) => Expect::Refused("already_delivered"),
            (Some(false), _) => {
                self.handled = None;
                self.bump()
            }
        }
    }

    /// Rows handed over: a blocked row with a response every time, any
    /// other response until the agent resolved it.
    fn pickup(&mut self) -> usize {
        let response = self.annotation.is_some() || self.handled.is_some();
        let blocked_with_response = self.status == RowStatus::Blocked && response;
        if !(blocked_with_response || self.undelivered() || (self.open && response)) {
            return 0;
        }
        if let Some(a) = self.annotation.as_mut() {
            a.seen = true;
        }
        if let Some(h) = self.handled.as_mut() {
            *h = true;
        }
        1
    }

    fn outcome(&mut self, text: &str, stale: bool) -> Expect {
        let text = text.trim();
        if text.is_empty() {
            return Expect::Refused("empty");
        }
        if stale {
            return Expect::Refused("stale");
        }
        if self.status == RowStatus::Done && self.outcome == text {
            return Expect::Unchanged;
        }
        let undelivered = self.unread_annotation();
        if self.status == RowStatus::Blocked && undelivered {
            return Expect::Refused("unread_response");
        }
        self.agent_wrote(undelivered);
        self.status = RowStatus::Done;
        self.outcome = text.to_string();
        self.bump()
    }

    fn advance(&mut self, stale_row: bool, stale_board: bool, outcome: Option<&str>) -> Expect {
        if stale_row || stale_board {
            return Expect::Refused("stale");
        }
        let outcome = outcome
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map_or_else(|| self.outcome.clone(), str::to_string);
        if self.handled.is_some() && outcome.is_empty() {
            return Expect::Refused("outcome_required");
        }
        if self.unread_annotation() {
            return Expect::Refused("unread_response");
        }
        self.open = false;
        self.status = RowStatus::Blocked;
        self.annotation = None;
        self.handled = None;
        self.outcome.clear();
        self.action_version += 1;
        self.bump()
    }

    fn status(&mut self, to: RowStatus, stale: bool) -> Expect {
        if stale {
            return Expect::Refused("stale");
        }
        if self.status == to {
            return Expect::Unchanged;
        }
        let leaving_block = self.status == RowStatus::Blocked;
        if leaving_block && self.handled.is_some() && self.outcome.is_empty() {
            return Expect::Refused("outcome_required");
        }
        let undelivered = self.unread_annotation();
        if leaving_block && undelivered {
            return Expect::Refused("unread_response");
        }
        self.agent_wrote(undelivered);
        if to == RowStatus::Blocked {
            // A fresh block is a new ask: the mark and the old outcome die,
            // and so does an annotation an agent already received.
            self.handled = None;
            self.outcome.clear();
            if self.annotation.as_ref().is_some_and(|a| a.seen) {
                self.annotation = None;
            }
        }
        self.status = to;
        self.bump()
    }
}

fn check(step: usize, op: &Op, m: &Model, row: &Row, board_version: i64) {
    let ctx = format!("step {step} after {op:?}\nmodel {m:#?}\nstored {row:#?}");
    assert_eq!(row.status, m.status, "status: {ctx}");
    assert_eq!(row.revision, m.revision, "revision: {ctx}");
    assert_eq!(
        row.action_version, m.action_version,
        "action_version: {ctx}"
    );
    assert_eq!(board_version, m.board_version, "board_version: {ctx}");
    assert_eq!(row.outcome, m.outcome, "outcome: {ctx}");
    let ann = row.response.annotation.as_ref().map(|t| MAnnotation {
        text: t.clone(),
        kind: row
            .response
            .annotation_kind
            .expect("kind with an annotation"),
        source: row
            .response
            .annotation_source
            .expect("source with an annotation"),
        seen: row.response.annotation_seen_at.is_some(),
    });
    assert_eq!(ann, m.annotation, "annotation: {ctx}");
    let handled = row
        .response
        .handled_at
        .map(|_| row.handled_seen_at.is_some());
    assert_eq!(handled, m.handled, "handled: {ctx}");
}

async fn current(store: &Store) -> (Row, i64) {
    let full = store
        .board_get("b", Some("p"))
        .await
        .unwrap()
        .expect("board");
    (
        full.row("r").expect("row r").clone(),
        full.board.board_version,
    )
}

async fn run(engine: Engine, ops: Vec<Op>) {
    let db = Db::new(engine).await;
    let (store, clock) = db.open_manual(1_700_000_000_000).await;
    let up = BoardUpsert {
        project: "p".into(),
        title: "b".into(),
        agent: "agent-1".into(),
        session: "s".into(),
        rows: vec![
            RowInput {
                label: "r".into(),
                status: Some(RowStatus::Blocked),
                next_step: Some("create the account".into()),
                ..Default::default()
            },
            // Never done, so the board never reaches 100 % and archives itself.
            RowInput {
                label: "keep".into(),
                status: Some(RowStatus::Tracked),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    store.board_upsert(&up).await.unwrap().expect("created");
    let (row, bv) = current(&store).await;
    let mut m = Model {
        status: row.status,
        revision: row.revision,
        action_version: row.action_version,
        board_version: bv,
        annotation: None,
        handled: None,
        outcome: String::new(),
        open: false,
    };
    for (step, op) in ops.iter().enumerate() {
        if step % 2 == 0 {
            clock.advance(1);
        }
        let (_, bv_before) = current(&store).await;
        let rev = |stale: bool| if stale { m.revision - 1 } else { m.revision };
        let (got, want) = match op {
            Op::Annotate {
                source,
                text,
                kind,
                stale,
            } => {
                let a = Annotate {
                    board: "b".into(),
                    project: Some("p".into()),
                    label: "r".into(),
                    text: text.to_string(),
                    kind: *kind,
                    source: *source,
                    by: "alice".into(),
                    expected_revision: Some(rev(*stale)),
                    action_version: None,
                };
                let got = match store.annotate(&a).await.unwrap() {
                    Ok(c) if c.changed => Expect::Changed,
                    Ok(_) => Expect::Unchanged,
                    Err(r) => Expect::Refused(refusal_name(&r)),
                };
                (got, m.annotate(*source, text, *kind, *stale))
            }
            Op::Handled { stale } | Op::ClearHandled { stale } => {
                let h = Handled {
                    board: "b".into(),
                    project: Some("p".into()),
                    label: "r".into(),
                    source: Channel::Chat,
                    by: "alice".into(),
                    expected_revision: Some(rev(*stale)),
                };
                let (res, want) = if matches!(op, Op::Handled { .. }) {
                    (store.mark_handled(&h).await.unwrap(), m.handled(*stale))
                } else {
                    (
                        store.clear_handled(&h).await.unwrap(),
                        m.clear_handled(*stale),
                    )
                };
                let got = match res {
                    Ok(c) if c.changed => Expect::Changed,
                    Ok(_) => Expect::Unchanged,
                    Err(r) => Expect::Refused(refusal_name(&r)),
                };
                (got, want)
            }
            Op::Pickup => {
                let got = store
                    .pending_rows(Some("p"), Some("s"), "agent-1")
                    .await
                    .unwrap();
                let want = m.pickup();
                assert_eq!(got.len(), want, "step {step} {op:?}: {got:#?}");
                (Expect::Unchanged, Expect::Unchanged)
            }
            Op::Outcome { text, stale } => {
                let w = OutcomeWrite {
                    board: "b".into(),
                    project: Some("p".into()),
                    label: "r".into(),
                    expected_revision: rev(*stale),
                    outcome: text.to_string(),
                    status: None,
                    by: "agent-1".into(),
                };
                let got = match store.board_outcome(&w).await.unwrap() {
                    Ok(_) => Expect::Changed,
                    Err(r) => Expect::Refused(refusal_name(&r)),
                };
                (got, m.outcome(text, *stale))
            }
            Op::Advance {
                stale_row,
                stale_board,
                outcome,
            } => {
                let a = Advance {
                    board: "b".into(),
                    project: Some("p".into()),
                    label: "r".into(),
                    expected_revision: rev(*stale_row),
                    board_version: if *stale_board {
                        m.board_version - 1
                    } else {
                        m.board_version
                    },
                    outcome: outcome.map(str::to_string),
                    next: NextStep {
                        next_step: "and now the next thing".into(),
                        ..Default::default()
                    },
                    by: "agent-1".into(),
                };
                let got = match store.board_advance(&a).await.unwrap() {
                    Ok(_) => Expect::Changed,
                    Err(r) => Expect::Refused(refusal_name(&r)),
                };
                (got, m.advance(*stale_row, *stale_board, *outcome))
            }
            Op::Status { to, stale } => {
                let w = RowWrite {
                    board: "b".into(),
                    project: Some("p".into()),
                    board_version: None,
                    row: RowInput {
                        label: "r".into(),
                        revision: Some(rev(*stale)),
                        status: Some(*to),
                        ..Default::default()
                    },
                    by: "agent-1".into(),
                };
                let got = match store.board_row(&w).await.unwrap() {
                    Ok(_) => Expect::Changed,
                    Err(r) => Expect::Refused(refusal_name(&r)),
                };
                (got, m.status(*to, *stale))
            }
        };
        // The store's board writes report success either way; whether they
        // changed anything shows in the board version.
        let (row, bv) = current(&store).await;
        let got = match got {
            Expect::Changed if bv == bv_before => Expect::Unchanged,
            other => other,
        };
        assert_eq!(
            got, want,
            "step {step} {op:?}\nmodel {m:#?}\nstored {row:#?}"
        );
        check(step, op, &m, &row, bv);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(64)))]

    #[test]
    fn row_writes_follow_the_model(ops in prop::collection::vec(op(), 1..24)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(Engine::Sqlite, ops));
    }

    /// The same model, the same sequences, on PostgreSQL (a fresh
    /// database per case).
    #[test]
    fn row_writes_follow_the_model_on_postgres(ops in prop::collection::vec(op(), 1..24)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(Engine::Postgres, ops));
    }
}
