//! Contention: many deciders and many agents on one SQLite file at once.
//!
//! 1. 64 concurrent deciders — 56 tokio tasks over four Store handles (four
//!    connection pools) plus 8 OS processes of `handoff approve` — over 500
//!    actions, with quorum 1 and with quorum 2: exactly one `approved`
//!    transition per action, approvals == required, and the audit trail
//!    agrees. The tasks of a group walk their actions in the same order, so
//!    they hit each action at once, and tasks come in pairs under one
//!    approver name, so one name races itself: it must count once.
//! 2. 1,000 agents flagging, replying through all three doors and picking up
//!    at once over eight Store handles: no error escapes (no SQLITE_BUSY, no
//!    "database is locked", no pool timeout), and no lost update — each
//!    question's history holds exactly the writes whose writers were told
//!    "accepted", the standing reply is the last of them, and a chat or agent
//!    write only ever landed over a reply that had been picked up.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::TempDb;
use handoff::store::Store;
use handoff::store::actions::{Actor, ApproveOutcome, Status};
use handoff::store::questions::{NewQuestion, NewReply, ReplyKind};

const ACTIONS: usize = 500;
const TASKS: usize = 56;
const PROCS: usize = 8;
const HANDLES: usize = 4;
/// Each action is decided by TASKS / SPREAD tasks (and one process).
const SPREAD: usize = 7;

/// Tasks `t` and `t + TASKS / 2` approve under the same name (and, as
/// TASKS / 2 is a multiple of SPREAD, decide the same actions).
const SAME_NAME: usize = TASKS / 2;

/// A small deterministic shuffle (xorshift), so runs are reproducible.
fn shuffled(mut v: Vec<usize>, seed: u64) -> Vec<usize> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

async fn handles(db: &TempDb, n: usize) -> Vec<Store> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(db.open().await);
    }
    v
}

async fn deciders_over_500_actions(quorum: i64) {
    let db = TempDb::new();
    let stores = handles(&db, HANDLES).await;
    let mut ids = Vec::with_capacity(ACTIONS);
    for i in 0..ACTIONS {
        let new = handoff::store::actions::NewAction {
            approvals_required: quorum,
            ..common::new_action("deploy", &format!(r#"{{"n":{i}}}"#))
        };
        ids.push(stores[0].propose(&new).await.unwrap().action.id);
    }
    let ids = Arc::new(ids);
    let start = Arc::new(tokio::sync::Barrier::new(TASKS + PROCS));
    let errors = Arc::new(AtomicUsize::new(0));

    // Tasks: task t decides every action a with a % SPREAD == t % SPREAD,
    // all of a group in the same order (so they collide on each action),
    // as approver `task-{t % SAME_NAME}` (so two tasks share each name).
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = stores[t % HANDLES].clone();
        let (ids, start, errors) = (ids.clone(), start.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mine: Vec<usize> = (0..ACTIONS).filter(|a| a % SPREAD == t % SPREAD).collect();
            let name = format!("task-{}", t % SAME_NAME);
            let mut outcomes = Vec::new();
            start.wait().await;
            for a in mine {
                let actor = Actor {
                    name: &name,
                    channel: handoff::store::Channel::Chat,
                };
                match store.approve(&ids[a], actor, None).await {
                    Ok(o) => outcomes.push((a, outcome_name(&o), true)),
                    Err(e) => {
                        eprintln!("task {t} on action {a}: {e}");
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            outcomes
        }));
    }
    // Processes: process p decides every action a with a % PROCS == p, as
    // `proc-p`, one `handoff approve` per action.
    for p in 0..PROCS {
        let (ids, start, errors) = (ids.clone(), start.clone(), errors.clone());
        let path = db.path.clone();
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            tokio::task::spawn_blocking(move || {
                let mine: Vec<usize> = (0..ACTIONS).filter(|a| a % PROCS == p).collect();
                let mut outcomes = Vec::new();
                for a in shuffled(mine, 1000 + p as u64) {
                    let name = format!("proc-{p}");
                    let out = common::cli_at(&path, &["--json", "approve", &ids[a], "--as", &name]);
                    let v: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
                    // The winner exits 0 with the outcome; a loser exits 3
                    // with the same outcome as its error's detail.
                    let v = match out.status.code() {
                        Some(0) => v,
                        Some(3) => v.map(|v| v["error"]["detail"].clone()),
                        _ => None,
                    };
                    match v.as_ref().and_then(|v| v["outcome"].as_str()) {
                        Some(o) => outcomes.push((a, o.to_string(), false)),
                        None => {
                            eprintln!(
                                "process {p} on action {a}: {:?} {}",
                                out.status,
                                common::stderr(&out)
                            );
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                outcomes
            })
            .await
            .unwrap()
        }));
    }
    let mut per_action: HashMap<usize, Vec<String>> = HashMap::new();
    let (mut won_by_task, mut won_by_process) = (0, 0);
    for t in tasks {
        for (a, o, by_task) in t.await.unwrap() {
            if o == "approved" {
                if by_task {
                    won_by_task += 1;
                } else {
                    won_by_process += 1;
                }
            }
            per_action.entry(a).or_default().push(o);
        }
    }
    assert_eq!(errors.load(Ordering::Relaxed), 0, "no error escapes");

    let pool = common::raw_pool(&db.path).await;
    let mut approved_once = 0;
    let mut same_name_refused = 0;
    for (a, id) in ids.iter().enumerate() {
        let outcomes = &per_action[&a];
        let count = |name: &str| outcomes.iter().filter(|o| *o == name).count();
        assert_eq!(
            count("approved"),
            1,
            "action {a}: exactly one winner: {outcomes:?}"
        );
        assert_eq!(
            count("approval_added"),
            quorum as usize - 1,
            "action {a}: {outcomes:?}"
        );
        same_name_refused += count("already_approved_by");
        assert_eq!(
            count("approved")
                + count("approval_added")
                + count("already_decided")
                + count("already_approved_by"),
            outcomes.len(),
            "action {a}: every loser got the winner's decision or was already counted: {outcomes:?}"
        );
        let action = stores[a % HANDLES].get_action(id).await.unwrap();
        assert_eq!(action.status, Status::Approved);
        assert_eq!(action.approvals, quorum);
        let rows: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM action_approvals WHERE action_id = ?")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap();
        let names: i64 = sqlx::query_scalar(
            "SELECT COUNT(DISTINCT approver) FROM action_approvals WHERE action_id = ?",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(
            (rows, names),
            (quorum, quorum),
            "action {a}: one approval row per counted approver, each a different name"
        );
        let audit = stores[0].action_audit(id).await.unwrap();
        let events: Vec<&str> = audit.iter().map(|e| e.event.as_str()).collect();
        let mut want = vec!["proposed"];
        want.extend(std::iter::repeat_n("approval_added", quorum as usize - 1));
        want.push("approved");
        assert_eq!(events, want, "action {a}: audit agrees with the status");
        assert_eq!(
            audit.last().map(|e| e.actor.as_str()),
            action.decided_by.as_deref(),
            "action {a}: the audited approver is the one who decided"
        );
        approved_once += 1;
    }
    println!(
        "contention quorum {quorum}: {approved_once}/{ACTIONS} actions approved exactly once by {} deciders ({TASKS} tasks over {HANDLES} handles + {PROCS} processes); won by tasks {won_by_task}, by processes {won_by_process}; {same_name_refused} second approvals under an already counted name refused",
        TASKS + PROCS
    );
    assert_eq!(won_by_task + won_by_process, ACTIONS);
    if quorum == 2 {
        // The same-name pairs did race: some second approval under a name
        // already counted was refused (not counted twice).
        assert!(same_name_refused > 0, "no same-name approvals raced");
    }
}

fn outcome_name(o: &ApproveOutcome) -> String {
    match o {
        ApproveOutcome::Approved { .. } => "approved",
        ApproveOutcome::ApprovalAdded { .. } => "approval_added",
        ApproveOutcome::AlreadyApprovedBy { .. } => "already_approved_by",
        ApproveOutcome::AlreadyDecided { .. } => "already_decided",
        ApproveOutcome::Expired { .. } => "expired",
        ApproveOutcome::PatchRefused { .. } => "patch_refused",
        ApproveOutcome::SelfApproval { .. } => "self_approval",
    }
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_deciders_approve_each_of_500_actions_exactly_once_quorum_1() {
    deciders_over_500_actions(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_deciders_approve_each_of_500_actions_exactly_once_quorum_2() {
    deciders_over_500_actions(2).await;
}

// ---------------------------------------------------------------------------
// 1,000 agents.

const AGENTS: usize = 1000;
const AGENT_HANDLES: usize = 8;

/// What one agent was told about its writes.
#[derive(Debug, Default)]
struct Told {
    /// (question index, door, text, accepted)
    writes: Vec<(usize, &'static str, String, bool)>,
    /// (question index, reply_seq it picked up)
    pickups: Vec<(usize, i64)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_agents_flag_and_answer_at_once_without_busy_or_lost_updates() {
    let db = TempDb::new();
    let stores = handles(&db, AGENT_HANDLES).await;
    let ids: Arc<std::sync::Mutex<Vec<Option<String>>>> =
        Arc::new(std::sync::Mutex::new(vec![None; AGENTS]));
    let flagged = Arc::new(tokio::sync::Barrier::new(AGENTS));
    let errors = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..AGENTS {
        let store = stores[i % AGENT_HANDLES].clone();
        let (ids, flagged, errors) = (ids.clone(), flagged.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut told = Told::default();
            let fail = |what: &str, e: &dyn std::fmt::Display| {
                eprintln!("agent {i} {what}: {e}");
                errors.fetch_add(1, Ordering::Relaxed);
            };
            let q = NewQuestion {
                project: "c".into(),
                agent: format!("agent-{i}"),
                session: format!("s{i}"),
                title: format!("question {i}"),
                ..Default::default()
            };
            match store.flag(&q).await {
                Ok(f) => ids.lock().unwrap()[i] = Some(f.question.id),
                Err(e) => fail("flag", &e),
            }
            flagged.wait().await;
            let id_of = |j: usize| ids.lock().unwrap()[j].clone();
            // Three writers per question, from three different agents: an
            // Inbox reply, a chat reply and an agent's own answer, at once.
            let (inbox_q, chat_q, agent_q) = (i, (i * 7 + 13) % AGENTS, (i * 11 + 29) % AGENTS);
            let reply = |text: String, by: &str| NewReply {
                text,
                kind: ReplyKind::Answer,
                by: by.into(),
                ..Default::default()
            };
            let (Some(a), Some(b), Some(c)) = (id_of(inbox_q), id_of(chat_q), id_of(agent_q))
            else {
                return told;
            };
            let (wi, wc, wa) = (
                reply(format!("inbox-{i}"), "alice"),
                reply(format!("chat-{i}"), "@bob"),
                reply(format!("agent-{i}"), "agent"),
            );
            let (ri, rc, ra) = tokio::join!(
                store.reply_inbox(&a, &wi),
                store.reply_chat(&b, &wc),
                store.answer_agent(&c, &wa),
            );
            for (q, door, r) in [
                (inbox_q, "inbox", ri),
                (chat_q, "chat", rc),
                (agent_q, "agent", ra),
            ] {
                match r {
                    Ok(o) => told
                        .writes
                        .push((q, door, format!("{door}-{i}"), o.is_ok())),
                    Err(e) => fail(door, &e),
                }
            }
            // And pick up whatever stands on its own question.
            match store
                .pending(Some("c"), Some(&format!("s{i}")), false, "agent")
                .await
            {
                Ok(ds) => {
                    for d in ds {
                        told.pickups.push((i, d.question.reply_seq));
                    }
                }
                Err(e) => fail("pending", &e),
            }
            told
        }));
    }
    let mut told = Vec::new();
    for t in tasks {
        told.push(t.await.unwrap());
    }
    assert_eq!(
        errors.load(Ordering::Relaxed),
        0,
        "no SQLITE_BUSY, lock or pool error escapes"
    );

    let ids: Vec<String> = ids
        .lock()
        .unwrap()
        .iter()
        .map(|i| i.clone().unwrap())
        .collect();
    let mut accepted: HashMap<usize, Vec<(&'static str, String)>> = HashMap::new();
    let mut refused: HashMap<usize, Vec<String>> = HashMap::new();
    let mut picked: HashMap<usize, Vec<i64>> = HashMap::new();
    let (mut n_accepted, mut n_refused) = (0, 0);
    for t in &told {
        for (q, door, text, ok) in &t.writes {
            if *ok {
                accepted.entry(*q).or_default().push((door, text.clone()));
                n_accepted += 1;
            } else {
                refused.entry(*q).or_default().push(text.clone());
                n_refused += 1;
            }
            if *door == "inbox" {
                assert!(ok, "an Inbox reply always wins: question {q}");
            }
        }
        for (q, seq) in &t.pickups {
            picked.entry(*q).or_default().push(*seq);
        }
    }
    let store = &stores[0];
    for (q, id) in ids.iter().enumerate() {
        let history = store.question_replies(id).await.unwrap();
        let question = store.get_question(id).await.unwrap().unwrap();
        let texts: Vec<String> = history.iter().filter_map(|h| h.reply.clone()).collect();
        let mut want: Vec<String> = accepted
            .get(&q)
            .into_iter()
            .flatten()
            .map(|(_, t)| t.clone())
            .collect();
        let mut got = texts.clone();
        want.sort();
        got.sort();
        assert_eq!(
            got, want,
            "question {q}: history = exactly the accepted writes"
        );
        for r in refused.get(&q).into_iter().flatten() {
            assert!(
                !texts.contains(r),
                "question {q}: refused {r} was not written"
            );
        }
        assert_eq!(question.reply_seq, history.len() as i64, "question {q}");
        assert_eq!(
            question.reply.as_ref().map(|r| &r.text),
            texts.last(),
            "question {q}: the standing reply is the last accepted write"
        );
        // The asymmetric rule under contention: a chat or agent write landed
        // only over nothing, or over a reply already picked up.
        let events = store.events_for("question", id).await.unwrap();
        let picked_seqs: Vec<i64> = events
            .iter()
            .filter(|e| e.kind == "question.picked_up")
            .filter_map(|e| e.payload["reply_seq"].as_i64())
            .collect();
        for (k, h) in history.iter().enumerate() {
            if h.source.as_str() == "inbox" || k == 0 {
                continue;
            }
            let prev = &history[k - 1];
            assert!(
                prev.source.as_str() == "agent" || picked_seqs.contains(&prev.reply_seq),
                "question {q}: {} write over an unread {} reply: {history:#?}",
                h.source,
                prev.source
            );
        }
        for seq in picked.get(&q).into_iter().flatten() {
            assert!(
                history.iter().any(|h| h.reply_seq == *seq),
                "question {q}: picked up reply {seq} is in the history"
            );
        }
    }
    println!(
        "contention agents: {AGENTS} agents over {AGENT_HANDLES} handles, {n_accepted} writes accepted, {n_refused} refused by the rule, 0 errors, 0 lost updates"
    );
}
