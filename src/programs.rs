//! The operator's programs that handoff consults: a rule's deciding command
//! at proposal time and an action's verifier at recovery.
//!
//! They run here — outside the store and outside any transaction — and the
//! store records what they decide: a rule's decision as an approval or a
//! rejection audited as `rule:<name>`, a verifier's answer as completed,
//! re-run or `unknown`. A program runs as argv (no shell) with the action as
//! JSON on stdin and `HANDOFF_ACTION_ID`, `HANDOFF_ACTION_KIND`,
//! `HANDOFF_ARGS` in its environment; its first stdout line is its answer.
//! This module never runs an action's executor (see `ops::run`).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::store::Channel;
use crate::store::Store;
use crate::store::actions::{
    Action, Actor, RecoverReport, Result, Rule, RuleApplied, RuleDecision, Verdict,
};

/// How long a rule's command may take before a person decides instead.
const RULE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a verifier may take before the action becomes `unknown`.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// Apply the first matching rule to a freshly proposed pending action.
/// Returns the decision made, or `None` when no rule matched or the
/// deciding command answered `ask` (or failed: then a person decides).
pub async fn apply_rules(
    store: &Store,
    action: &Action,
    rules: &[Rule],
) -> Result<Option<RuleApplied>> {
    for rule in rules.iter().filter(|r| r.matches(action)) {
        let decision = match (&rule.decide, &rule.command) {
            (Some(d), _) => *d,
            (None, Some(argv)) => match ask_rule_command(rule, argv, action).await {
                Some(d) => d,
                None => return Ok(None),
            },
            (None, None) => continue,
        };
        let name = format!("rule:{}", rule.name);
        let actor = Actor {
            name: &name,
            channel: Channel::Daemon,
        };
        let action = match decision {
            RuleDecision::Approve => store
                .approve_as(&action.id, actor, None, true)
                .await?
                .action()
                .clone(),
            RuleDecision::Reject => {
                let reason = rule
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("rejected by rule {}", rule.name));
                store
                    .reject(&action.id, actor, &reason)
                    .await?
                    .action()
                    .clone()
            }
        };
        return Ok(Some(RuleApplied {
            rule: rule.name.clone(),
            decision,
            action,
        }));
    }
    Ok(None)
}

/// What a rule's command decides: approve or reject, or `None` when it
/// answered `ask`, answered nothing usable, or failed (a person decides).
async fn ask_rule_command(rule: &Rule, argv: &[String], action: &Action) -> Option<RuleDecision> {
    let stdin = serde_json::to_string(action).unwrap_or_default();
    match run_program(argv, stdin, action, RULE_TIMEOUT)
        .await
        .as_deref()
    {
        Ok("approve") => Some(RuleDecision::Approve),
        Ok("reject") => Some(RuleDecision::Reject),
        Ok("ask") => None,
        Ok(other) => {
            tracing::warn!(rule = %rule.name, answer = other, "rule command gave no decision; leaving it to a person");
            None
        }
        Err(e) => {
            tracing::warn!(rule = %rule.name, error = %e, "rule command failed; leaving it to a person");
            None
        }
    }
}

/// Recovery at startup (or on any cadence): `executing` actions whose lease
/// ran out become `unknown` — or, with a verifier, whatever it answers — and
/// approved-but-unclaimed actions are reported as claimable. Of several
/// recoverers exactly one runs a given verifier (the store's guarded take).
pub async fn recover(store: &Store) -> Result<RecoverReport> {
    let mut report = RecoverReport::default();
    for action in store.lapsed().await? {
        let Some(argv) = &action.verify else {
            report
                .unknown
                .extend(store.lapse_to_unknown(&action).await?);
            continue;
        };
        let Some(me) = store.take_for_verifier(&action, argv).await? else {
            continue;
        };
        let verdict = verify_holding(store, &action, &me, argv).await;
        let settled = store.record_verdict(&action, &me, &verdict).await?;
        let into = match verdict {
            Ok(Verdict::Executed) => &mut report.verified_executed,
            Ok(Verdict::Rerun) => &mut report.rerun,
            Ok(Verdict::Unknown) | Err(_) => &mut report.unknown,
        };
        into.extend(settled);
    }
    report.claimable = store.claimable().await?;
    Ok(report)
}

/// Run the verifier while renewing the hold `me` took on `action`, as an
/// executor renews its lease: the hold is short, so a recoverer that dies
/// here lets go soon. Why select: the renewal must stop when the verifier
/// ends, and a lost hold must not cut the verifier short (its answer is
/// then simply not recorded: `record_verdict` finds `me` no longer holds it).
async fn verify_holding(
    store: &Store,
    action: &Action,
    me: &str,
    argv: &[String],
) -> std::result::Result<Verdict, String> {
    let verdict = run_verifier(argv, action);
    tokio::pin!(verdict);
    let mut renew = tokio::time::interval(crate::store::actions::VERIFY_RENEW);
    renew.tick().await; // the first tick is immediate: the take just set the lease
    let mut holding = true;
    loop {
        tokio::select! {
            v = &mut verdict => return v,
            _ = renew.tick(), if holding => {
                match store.keep_verifier_lease(&action.id, me).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(action_id = %action.id, "lost the verifier's hold on the action");
                        holding = false;
                    }
                    Err(e) => tracing::warn!(action_id = %action.id, error = %e, "cannot renew the verifier's hold"),
                }
            }
        }
    }
}

/// Ask a verifier whether an interrupted execution happened.
async fn run_verifier(argv: &[String], action: &Action) -> std::result::Result<Verdict, String> {
    let stdin = serde_json::to_string(action).unwrap_or_default();
    match run_program(argv, stdin, action, VERIFY_TIMEOUT)
        .await?
        .as_str()
    {
        "executed" => Ok(Verdict::Executed),
        "rerun" | "re-run" => Ok(Verdict::Rerun),
        "unknown" => Ok(Verdict::Unknown),
        other => Err(format!(
            "the verifier answered `{other}`; expected executed, rerun or unknown"
        )),
    }
}

/// Run `argv` with `stdin` and the action's environment; return its trimmed,
/// lower-cased first stdout line. Exit status must be 0.
async fn run_program(
    argv: &[String],
    stdin: String,
    action: &Action,
    timeout: Duration,
) -> std::result::Result<String, String> {
    let (prog, rest) = argv.split_first().ok_or("empty command")?;
    let mut child = tokio::process::Command::new(prog)
        .args(rest)
        .env("HANDOFF_ACTION_ID", &action.id)
        .env("HANDOFF_ACTION_KIND", &action.kind)
        .env("HANDOFF_ARGS", action.effective_args.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    if let Some(mut pipe) = child.stdin.take() {
        // A program that does not read stdin closes the pipe early; that is fine.
        let _ = pipe.write_all(stdin.as_bytes()).await;
    }
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| format!("{prog} did not answer within {}s", timeout.as_secs()))?
        .map_err(|e| format!("{prog}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{prog} exited with {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or("").trim().to_lowercase())
}
