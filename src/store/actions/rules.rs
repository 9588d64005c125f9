//! Auto-decision rules and the external programs the engine may consult.
//!
//! A [`Rule`] waves routine actions through or rejects them at proposal
//! time: it matches on the kind (and optionally the project) plus simple
//! conditions on the arguments, then either decides itself or asks an
//! external command (argv, no shell, the action as JSON on stdin) that
//! prints `approve`, `reject` or `ask`. Decisions are audited as
//! `rule:<name>`. The first matching rule decides; `ask` leaves the action
//! to a person.
//!
//! This module holds the rules as data and their matching; the programs
//! they name (and recovery's verifiers) run in [`crate::programs`], outside
//! the store, which records what they decide.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Action;

/// A rules file: `[[rule]]` entries (the shape the config file embeds).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// The rules, first match wins.
    #[serde(default)]
    pub rule: Vec<Rule>,
}

impl RulesFile {
    /// Parse TOML and check every rule.
    pub fn parse(text: &str) -> std::result::Result<RulesFile, String> {
        let file: RulesFile = toml::from_str(text).map_err(|e| e.to_string())?;
        for r in &file.rule {
            r.check()?;
        }
        Ok(file)
    }
}

/// Whether an action `kind` matches `pattern`: exact, or a prefix ending
/// in `*` (`email.*`). `[[rule]]` and `[[kinds]]` match kinds this way.
pub fn kind_matches(pattern: &str, kind: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => kind.starts_with(prefix),
        None => kind == pattern,
    }
}

/// One auto-decision rule.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Audited as `rule:<name>`.
    pub name: String,
    /// Action kind to match: exact, or a prefix ending in `*` (`email.*`). None = any.
    #[serde(default)]
    pub kind: Option<String>,
    /// Project to match. None = any.
    #[serde(default)]
    pub project: Option<String>,
    /// Conditions on the arguments; all must hold.
    #[serde(default)]
    pub when: Vec<Condition>,
    /// Decide directly…
    #[serde(default)]
    pub decide: Option<RuleDecision>,
    /// …or ask this program (argv, no shell) which prints approve / reject / ask.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Reason recorded on a rejection.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A condition on one argument, addressed by a JSON pointer (`/amount`,
/// `/to/0`). Exactly one operator per condition. A missing value never matches.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// JSON pointer into the effective arguments.
    pub pointer: String,
    /// The value equals this.
    #[serde(default)]
    pub equals: Option<Value>,
    /// The value is a number below this.
    #[serde(default)]
    pub less_than: Option<f64>,
    /// The value is a number above this.
    #[serde(default)]
    pub greater_than: Option<f64>,
    /// The value equals one of these.
    #[serde(default)]
    pub one_of: Option<Vec<Value>>,
}

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    /// Approve outright.
    Approve,
    /// Reject, with the rule's `reason` (or "rejected by rule <name>").
    Reject,
}

/// A rule that decided an action.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RuleApplied {
    /// The rule's name.
    pub rule: String,
    /// What it decided.
    pub decision: RuleDecision,
    /// The action afterwards (if a person decided first, their decision stands).
    pub action: Action,
}

/// A verifier's answer about an interrupted execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The side effect happened: the action completes as executed.
    Executed,
    /// It did not happen: back to `approved` for one re-run.
    Rerun,
    /// The verifier cannot tell: `unknown`, for a person.
    Unknown,
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y, // only numbers have an f64: 1 equals 1.0
        _ => a == b,
    }
}

impl Condition {
    fn check(&self) -> std::result::Result<(), String> {
        let ops = [
            self.equals.is_some(),
            self.less_than.is_some(),
            self.greater_than.is_some(),
            self.one_of.is_some(),
        ];
        if ops.iter().filter(|x| **x).count() != 1 {
            return Err(format!(
                "condition on `{}` needs exactly one of equals, less_than, greater_than, one_of",
                self.pointer
            ));
        }
        if !(self.pointer.is_empty() || self.pointer.starts_with('/')) {
            return Err(format!(
                "`{}` is not a JSON pointer: write it like /amount",
                self.pointer
            ));
        }
        Ok(())
    }

    /// Whether the condition holds for `args`.
    pub fn holds(&self, args: &Value) -> bool {
        let Some(v) = args.pointer(&self.pointer) else {
            return false;
        };
        if let Some(e) = &self.equals {
            return json_eq(v, e);
        }
        if let Some(n) = self.less_than {
            return v.as_f64().is_some_and(|x| x < n);
        }
        if let Some(n) = self.greater_than {
            return v.as_f64().is_some_and(|x| x > n);
        }
        if let Some(set) = &self.one_of {
            return set.iter().any(|e| json_eq(v, e));
        }
        false
    }
}

impl Rule {
    /// Check the rule is well-formed, with a message naming it.
    pub fn check(&self) -> std::result::Result<(), String> {
        let name = &self.name;
        if name.trim().is_empty() {
            return Err("every [[rule]] needs a name".into());
        }
        match (&self.decide, &self.command) {
            (Some(_), None) => {}
            (None, Some(argv)) if !argv.is_empty() => {}
            _ => {
                return Err(format!(
                    "rule `{name}` needs exactly one of decide = \"approve\"|\"reject\" or command = [\"prog\", …]"
                ));
            }
        }
        for c in &self.when {
            c.check().map_err(|e| format!("rule `{name}`: {e}"))?;
        }
        Ok(())
    }

    /// Whether the rule applies to `action` (kind, project, conditions).
    pub fn matches(&self, action: &Action) -> bool {
        let kind_ok = self
            .kind
            .as_deref()
            .is_none_or(|k| kind_matches(k, &action.kind));
        kind_ok
            && self.project.as_ref().is_none_or(|p| *p == action.project)
            && self.when.iter().all(|c| c.holds(&action.effective_args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_rules_and_refuses_unknown_keys() {
        let f = RulesFile::parse(
            r#"
            [[rule]]
            name = "small refunds"
            kind = "refund"
            decide = "approve"
            when = [{ pointer = "/amount", less_than = 100 }, { pointer = "/currency", one_of = ["EUR", "USD"] }]

            [[rule]]
            name = "ask the oracle"
            kind = "email.*"
            command = ["/bin/oracle", "--strict"]
            "#,
        )
        .unwrap();
        assert_eq!(f.rule.len(), 2);
        assert_eq!(f.rule[0].when[0].less_than, Some(100.0));
        assert!(RulesFile::parse("[[rule]]\nname=\"x\"\ndecide=\"approve\"\ncolour=1").is_err());
        assert!(
            RulesFile::parse("[[rule]]\nname=\"x\"")
                .unwrap_err()
                .contains("exactly one")
        );
        assert!(
            RulesFile::parse("[[rule]]\nname=\"x\"\ndecide=\"approve\"\nwhen=[{pointer=\"/a\"}]")
                .is_err()
        );
        // An empty command names no program: refused like a missing one.
        assert!(
            RulesFile::parse("[[rule]]\nname=\"x\"\ncommand=[]")
                .unwrap_err()
                .contains("exactly one")
        );
    }

    #[test]
    fn conditions() {
        let args = json!({"amount": 50, "currency": "EUR", "to": ["a"]});
        let c = |v: Value| -> Condition { serde_json::from_value(v).unwrap() };
        assert!(c(json!({"pointer": "/amount", "less_than": 100})).holds(&args));
        assert!(!c(json!({"pointer": "/amount", "less_than": 50})).holds(&args));
        assert!(c(json!({"pointer": "/amount", "equals": 50.0})).holds(&args));
        assert!(c(json!({"pointer": "/amount", "greater_than": 10})).holds(&args));
        assert!(c(json!({"pointer": "/currency", "one_of": ["USD", "EUR"]})).holds(&args));
        assert!(c(json!({"pointer": "/to/0", "equals": "a"})).holds(&args));
        assert!(!c(json!({"pointer": "/missing", "equals": null})).holds(&args));
        assert!(!c(json!({"pointer": "/currency", "less_than": 5})).holds(&args));
        // Each operator also says no, at its exact edge.
        assert!(!c(json!({"pointer": "/amount", "greater_than": 50})).holds(&args));
        assert!(!c(json!({"pointer": "/amount", "equals": 51})).holds(&args));
        assert!(!c(json!({"pointer": "/currency", "equals": "USD"})).holds(&args));
        assert!(!c(json!({"pointer": "/amount", "equals": "50"})).holds(&args));
        assert!(!c(json!({"pointer": "/currency", "one_of": ["USD", "GBP"]})).holds(&args));
    }
}
