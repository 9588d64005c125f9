//! `[approvals]`: who may approve. Separation of duties: with
//! `not_by_proposer = true` the actor who proposed an action may not
//! approve it (refused as `self_approval`, audited), so its quorum counts
//! only others. `[[approvals.rule]]` entries set it per action kind and
//! project; the first entry that matches decides, else the section's own
//! value. The policy is fixed on the action when it is proposed, as its
//! quorum is.
//!
//! ```toml
//! [approvals]
//! not_by_proposer = true
//!
//! [[approvals.rule]]
//! kind = "notes.*"          # scratch notes may be approved by their author
//! not_by_proposer = false
//! ```

use serde::Deserialize;

/// The `[approvals]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Refuse an approval by the action's own proposer (default false).
    #[serde(default)]
    pub not_by_proposer: bool,
    /// Per kind / project; the first matching entry wins.
    #[serde(default, rename = "rule")]
    pub rules: Vec<ApprovalRule>,
}

/// One `[[approvals.rule]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Action kind: exact, or a prefix ending in `*`. None = any.
    #[serde(default)]
    pub kind: Option<String>,
    /// Project. None = any.
    #[serde(default)]
    pub project: Option<String>,
    /// Refuse an approval by the proposer for matching actions.
    pub not_by_proposer: bool,
}

impl ApprovalsConfig {
    /// Whether an action of `kind` in `project` refuses its proposer's
    /// approval.
    pub fn not_by_proposer(&self, kind: &str, project: &str) -> bool {
        self.rules
            .iter()
            .find(|r| {
                r.kind
                    .as_deref()
                    .is_none_or(|k| crate::store::actions::kind_matches(k, kind.trim()))
                    && r.project.as_deref().is_none_or(|p| p == project)
            })
            .map_or(self.not_by_proposer, |r| r.not_by_proposer)
    }

    /// What is wrong with an entry, in words naming the key.
    pub(super) fn check(&self) -> Result<(), (usize, String)> {
        for (i, r) in self.rules.iter().enumerate() {
            if let Some(k) = &r.kind
                && (k.trim().is_empty() || k.trim_end_matches('*').contains('*'))
            {
                return Err((
                    i,
                    format!(
                        "[[approvals.rule]] kind = \"{k}\" must be a kind, or a prefix ending in * (e.g. \"deploy.*\")"
                    ),
                ));
            }
            if r.project.as_deref().is_some_and(|p| p.trim().is_empty()) {
                return Err((
                    i,
                    "[[approvals.rule]] project is empty: name a project or leave the key out"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_wins_else_the_section() {
        let c: ApprovalsConfig = toml::from_str("not_by_proposer = true").unwrap();
        assert!(c.not_by_proposer("deploy", "shop"));
        let c: ApprovalsConfig = toml::from_str(
            "[[rule]]\nkind = 'notes.*'\nnot_by_proposer = false\n\n[[rule]]\nproject = 'shop'\nnot_by_proposer = true\n",
        )
        .unwrap();
        assert!(!c.not_by_proposer("notes.add", "shop"));
        assert!(c.not_by_proposer("deploy", "shop"));
        assert!(!c.not_by_proposer("deploy", "blog"));
        assert!(toml::from_str::<ApprovalsConfig>("not_by_proposr = true").is_err());
        let bad: ApprovalsConfig =
            toml::from_str("[[rule]]\nkind = '*x'\nnot_by_proposer = true\n").unwrap();
        assert!(bad.check().unwrap_err().1.contains("prefix ending in *"));
    }
}
