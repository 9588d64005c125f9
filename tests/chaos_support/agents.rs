//! The harness's agents: loops of real `handoff` processes against the
//! database — through the daemon's socket while it answers, so its kills
//! land mid-call too, and through the file while it is down: `ask --wait`, `propose --exec`
//! (some killed with -9 mid-command, a third with a verifier),
//! `wait --session`, and claim racers looping `handoff recover`, which
//! runs every approved action it finds.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

use handoff::store::actions::ApproveOutcome;

use super::raw::{Arg, Raw};
use super::{Ctx, Proposed, Rng};

/// The `handoff` binary as the Inbox user, against a running daemon
/// (`HANDOFF_URL`, a `human` token; with several, each call the next one
/// alive): None while every daemon is down.
pub fn inbox_cli(ctx: &Ctx) -> Option<Command> {
    let url = ctx.next_daemon()?;
    let mut cmd = handoff(ctx);
    cmd.env("HANDOFF_URL", url)
        .env("HANDOFF_TOKEN", ctx.token.lock().unwrap().clone());
    Some(cmd)
}

fn handoff(ctx: &Ctx) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.env("HANDOFF_DB", &ctx.db)
        .env("HANDOFF_LOG", "warn")
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_SESSION")
        .env_remove("HANDOFF_PROJECT")
        .current_dir(&ctx.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a kill of the group takes the command with it.
        .process_group(0)
        .kill_on_drop(true);
    cmd.envs(ctx.env());
    cmd
}

fn unexpected(ctx: &Ctx, what: &str, out: &std::process::Output) {
    ctx.log().unexpected.push(format!(
        "{what}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
}

/// Agent `k`: ask a question with two options and wait for the reply; pick
/// it up; resolve every other answered question.
pub async fn asker(ctx: Ctx, k: usize, mut rng: Rng) {
    let mut n = 0u64;
    while !ctx.stopped() {
        n += 1;
        let title = format!("ask a{k} n{n}");
        let (yes, no) = (format!("y-a{k}-{n}"), format!("n-a{k}-{n}"));
        let out = handoff(&ctx)
            .args(["--json", "ask", &title, "--option", &yes, "--option", &no])
            .args(["--project", "chaos", "--agent", &format!("a{k}")])
            .args(["--session", &format!("s{k}"), "--wait", "--timeout", "4s"])
            .output()
            .await
            .expect("run handoff ask");
        ctx.log().asks += 1;
        match out.status.code() {
            Some(0) => {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                let v = &v["question"];
                let (Some(id), Some(seq)) = (v["id"].as_str(), v["reply_seq"].as_i64()) else {
                    unexpected(&ctx, "ask printed no question", &out);
                    continue;
                };
                let text = v["reply"]["text"].as_str().unwrap_or_default().to_string();
                ctx.log().agent_got.push((id.to_string(), seq, text));
                if rng.chance(0.5) {
                    let out = handoff(&ctx)
                        .args(["resolve", id, "--outcome", "done", "--by", &format!("a{k}")])
                        .output()
                        .await
                        .expect("run handoff resolve");
                    // 3: someone dismissed it meanwhile.
                    if !matches!(out.status.code(), Some(0 | 3)) {
                        unexpected(&ctx, "resolve", &out);
                    }
                }
            }
            // 5: nobody answered in time; 3: dismissed while waiting.
            Some(3 | 5) => {}
            _ => unexpected(&ctx, "ask", &out),
        }
    }
}

/// Once the process `child` is executing an action (its claim's owner is
/// `exec:<pid>:…`), kill it with -9 after a random moment — the process
/// alone (its command finishes as an orphan) or its whole group. Returns
/// whether it was killed mid-command.
async fn kill_when_executing(
    ctx: &Ctx,
    pool: &Raw,
    child: &mut tokio::process::Child,
    rng: &mut Rng,
) -> bool {
    let Some(pid) = child.id() else { return false };
    let owner = format!("exec:{pid}:%");
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        let executing: Option<(String,)> = pool
            .first(
                "SELECT id FROM actions WHERE status = 'executing' AND owner LIKE ?",
                &[Arg::Text(&owner)],
            )
            .await;
        if let Some((id,)) = executing {
            tokio::time::sleep(rng.ms(0, 250)).await;
            let group = rng.chance(0.5);
            let target = Pid::from_raw(pid as i32);
            let r = if group {
                killpg(target, Signal::SIGKILL)
            } else {
                kill(target, Signal::SIGKILL)
            };
            if r.is_ok() {
                ctx.log().executor_kills.push((id, pid, group));
            }
            return r.is_ok();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Agent `k`: propose an action whose command appends its id to the
/// side-effects file, wait for the decision and run it. About one run in
/// four is killed with -9 once its action is executing — the process
/// alone (the command finishes as an orphan) or its whole group.
pub async fn proposer(ctx: Ctx, k: usize, mut rng: Rng) {
    let pool = Raw::open(&ctx.db).await;
    let side = ctx.side_effects().display().to_string();
    // The side effect names the action and the process that ran it (the
    // command's parent: `propose`, `recover` or the daemon).
    let script = format!("sleep 0.3; echo \"$HANDOFF_ACTION_ID $PPID\" >> '{side}'");
    // A verifier that looks: executed if the side effect is there, else
    // run it again.
    let verifier = format!(
        "if grep -q \"^$HANDOFF_ACTION_ID \" '{side}'; then echo executed; else echo rerun; fi"
    );
    let mut n = 0u64;
    while !ctx.stopped() {
        n += 1;
        let quorum = if n.is_multiple_of(ctx.quorum_two_every) {
            "2"
        } else {
            "1"
        };
        // Every fourth proposer gives up waiting after a second (exit 5),
        // as an agent that moves on does: its action, approved later, is
        // left to the claim racers and the chat's Run button. Why: a
        // proposer that waits sees its approval at once (the daemon's
        // socket, or LISTEN on PostgreSQL) and nearly always wins its own
        // claim, so without these the racers would seldom win one.
        let timeout = match (n % 4, quorum) {
            (2, _) => "1s",
            (_, "2") => "14s",
            _ => "8s",
        };
        let summary = format!("act a{k} n{n}");
        ctx.log()
            .quorum_asked
            .insert(summary.clone(), if quorum == "2" { 2 } else { 1 });
        let mut cmd = handoff(&ctx);
        cmd.args(["--json", "propose", "--kind", "chaos.run"])
            .args(["--summary", &summary])
            .args(["--args", &format!(r#"{{"n":{n},"agent":{k}}}"#)])
            .args(["--project", "chaos", "--session", &format!("s{k}")])
            // Why a longer expiry at quorum 2: two people must each tap
            // while the daemon is killed every second or so; at 6 s a short
            // run sometimes saw every quorum-2 action expire (the floor
            // "quorum-2 actions approved" then fails with nothing wrong).
            .args(["--ttl", if quorum == "2" { "12s" } else { "6s" }])
            .args(["--approvals", quorum, "--lease", "2s"])
            .args(["--timeout", timeout])
            .args(["--exec", "--", "sh", "-c", &script]);
        let verified = n % 3 == 1;
        if verified {
            cmd.args(["--verify", "--", "sh", "-c", &verifier]);
        }
        let mut child = cmd.spawn().expect("spawn handoff propose");
        ctx.log().proposals += 1;
        if verified {
            ctx.log().verified_proposals += 1;
        }
        let pid = child.id().expect("pid");
        let killed = rng.chance(ctx.exec_kill_chance)
            && kill_when_executing(&ctx, &pool, &mut child, &mut rng).await;
        let out = child.wait_with_output().await.expect("wait for propose");
        if killed {
            continue;
        }
        // 0 executed (by this process or, followed, by another); 1 the
        // followed run did not execute; 3 rejected or expired; 5 no
        // decision in time.
        let code = out.status.code();
        if !matches!(code, Some(0 | 1 | 3 | 5)) {
            unexpected(&ctx, "propose --exec", &out);
            continue;
        }
        if code == Some(5) {
            continue;
        }
        // --json prints one document: the run's report with its action,
        // the followed action, or (refused) the error whose detail holds it.
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let v = if v["error"].is_object() {
            v["error"]["detail"].clone()
        } else {
            v
        };
        let action = &v["action"];
        let (Some(id), Some(status)) = (action["id"].as_str(), action["status"].as_str()) else {
            unexpected(&ctx, "propose --exec printed no action", &out);
            continue;
        };
        ctx.log().proposed.push(Proposed {
            pid,
            exit: code,
            id: id.to_string(),
            claimed: v["claimed"].as_bool().unwrap_or(false),
            status: status.to_string(),
        });
    }
}

/// A claim racer: `handoff recover` in a loop, which marks lapsed runs
/// unknown (or asks their verifier) and runs every approved action with a
/// command it finds — racing the proposers, each other and the chat's Run
/// button for the claim.
pub async fn recoverer(ctx: Ctx, mut rng: Rng) {
    let pool = Raw::open(&ctx.db).await;
    while !ctx.stopped() {
        tokio::time::sleep(rng.ms(50, 300)).await;
        let mut child = handoff(&ctx)
            .args(["--json", "recover", "--lease", "2s"])
            .spawn()
            .expect("spawn handoff recover");
        let pid = child.id().expect("pid");
        // Racers die mid-command too (less often than proposers: most of
        // their runs find nothing to do).
        let killed = rng.chance(ctx.exec_kill_chance / 2.0)
            && kill_when_executing(&ctx, &pool, &mut child, &mut rng).await;
        let out = child.wait_with_output().await.expect("wait for recover");
        ctx.log().recovers += 1;
        if killed {
            continue;
        }
        // A command run by recover exits with its own code; recover itself
        // exits 0.
        if out.status.code() != Some(0) {
            unexpected(&ctx, "recover", &out);
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for r in v["recovery"]["ran"].as_array().into_iter().flatten() {
            let id = r["action_id"].as_str().unwrap_or_default().to_string();
            let claimed = r["claimed"].as_bool().unwrap_or(false);
            ctx.log().recover_ran.push((pid, id, claimed));
        }
    }
}

/// Agent `k`: block on `handoff wait` for one of two sessions in turn.
pub async fn waiter(ctx: Ctx, k: usize, sessions: [usize; 2]) {
    let mut n = 0usize;
    while !ctx.stopped() {
        let s = format!("s{}", sessions[n % 2]);
        n += 1;
        let out = handoff(&ctx)
            .args(["--json", "wait", "--session", &s, "--timeout", "3s"])
            .args(["--by", &format!("waiter-{k}")])
            .output()
            .await
            .expect("run handoff wait");
        ctx.log().waits += 1;
        match out.status.code() {
            Some(0) => {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                let Some(arrivals) = v["arrivals"].as_array() else {
                    unexpected(&ctx, "wait printed no arrivals", &out);
                    continue;
                };
                let mut log = ctx.log();
                for a in arrivals {
                    log.arrived.push((s.clone(), a.clone()));
                }
            }
            Some(5) => {}
            _ => unexpected(&ctx, "wait", &out),
        }
    }
}

/// After the storm, one action is always left as a stopped agent leaves
/// it: `propose --exec` gives up waiting (exit 5), and then the Inbox user
/// approves it. Its proposer is gone and the claim racers have stopped, so
/// only a person's Run now in chat (`humans::Settler`) can run it: every
/// round takes that path, not just the rounds where chance left such an
/// action behind. Returns its id.
pub async fn strand_one(ctx: &Ctx, store: &handoff::store::Store) -> Option<String> {
    let side = ctx.side_effects().display().to_string();
    let script = format!("sleep 0.3; echo \"$HANDOFF_ACTION_ID $PPID\" >> '{side}'");
    let summary = "left behind after the storm";
    ctx.log().quorum_asked.insert(summary.to_string(), 1);
    let out = handoff(ctx)
        .args(["--json", "propose", "--kind", "chaos.run"])
        .args(["--summary", summary])
        .args(["--args", r#"{"stranded":true}"#])
        .args(["--project", "chaos", "--session", "s3"])
        .args(["--ttl", "10m", "--lease", "2s", "--timeout", "1s"])
        .args(["--exec", "--", "sh", "-c", &script])
        .output()
        .await
        .expect("run handoff propose");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let id = v["error"]["detail"]["action"]["id"].as_str();
    let (Some(5), Some(id)) = (out.status.code(), id) else {
        unexpected(ctx, "propose --exec left behind", &out);
        return None;
    };
    let carol = handoff::store::actions::Actor {
        name: "carol",
        channel: handoff::store::Channel::Inbox,
    };
    let out = store
        .approve(id, carol, None)
        .await
        .expect("approve the action left behind");
    let mut log = ctx.log();
    log.inbox_approvals += 1;
    if matches!(
        out,
        ApproveOutcome::Approved { .. } | ApproveOutcome::ApprovalAdded { .. }
    ) {
        log.inbox_approved
            .push((id.to_string(), "carol".to_string()));
    }
    Some(id.to_string())
}

/// A burst agent: again and again, file 6 to 9 questions to `project` at
/// once (a `handoff ask` process each, started together: more than the
/// digest rule's 5 within its 3 s), then now and then resolve one it
/// filed earlier — sometimes while it still waits for its digest, so it
/// is never pushed — and pause before the next burst.
pub async fn burster(ctx: Ctx, project: &'static str, mut rng: Rng) {
    let mut filed: Vec<String> = Vec::new();
    let mut n = 0u64;
    while !ctx.stopped() {
        n += 1;
        let k = rng.range(6, 10);
        let children: Vec<_> = (0..k)
            .map(|i| {
                let (yes, no) = (
                    format!("y-{project}-{n}-{i}"),
                    format!("n-{project}-{n}-{i}"),
                );
                handoff(&ctx)
                    .args(["--json", "ask", &format!("burst {project} b{n} i{i}")])
                    .args(["--option", &yes, "--option", &no])
                    .args(["--project", project, "--agent", "burster"])
                    .spawn()
                    .expect("spawn handoff ask")
            })
            .collect();
        {
            let mut log = ctx.log();
            log.bursts += 1;
            log.burst_items += k;
            log.asks += k;
        }
        for c in children {
            let out = c.wait_with_output().await.expect("wait for handoff ask");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            match (out.status.code(), v["question"]["id"].as_str()) {
                (Some(0), Some(id)) => filed.push(id.to_string()),
                _ => unexpected(&ctx, "ask (a burst)", &out),
            }
        }
        tokio::time::sleep(rng.ms(0, 2000)).await;
        for _ in 0..rng.range(0, 3) {
            if filed.is_empty() {
                break;
            }
            let id = filed.swap_remove(rng.range(0, filed.len() as u64) as usize);
            let out = handoff(&ctx)
                .args(["resolve", &id, "--outcome", "done", "--by", "burster"])
                .output()
                .await
                .expect("run handoff resolve");
            // 3: answered and dismissed meanwhile.
            if !matches!(out.status.code(), Some(0 | 3)) {
                unexpected(&ctx, "resolve (a burst)", &out);
            }
        }
        tokio::time::sleep(rng.ms(500, 3000)).await;
    }
}
