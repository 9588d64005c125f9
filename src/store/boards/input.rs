//! One row as an agent writes it, and the stored fields an input merges
//! into (an omitted field keeps its stored value).

use serde::Deserialize;

use super::{
    MAX_CONTEXT, MAX_TEXT, Row, RowOption, RowOwner, RowStatus, check_len, check_name,
    check_options,
};
use crate::store::Result;

/// One row as an agent writes it. Omitted fields keep their stored value
/// (a new row gets the default), so a partial write never erases anything.
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowInput {
    /// The row's name, unique in the board (a new label adds a row).
    pub label: String,
    /// The revision read; required for an existing row, absent for a new one.
    #[serde(default)]
    pub revision: Option<i64>,
    /// Status (new rows default to `tracked`).
    #[serde(default)]
    pub status: Option<RowStatus>,
    /// The agent's note.
    #[serde(default)]
    pub note: Option<String>,
    /// What is asked of the human next.
    #[serde(default)]
    pub next_step: Option<String>,
    /// Who must act.
    #[serde(default)]
    pub owner: Option<RowOwner>,
    /// What depends on it.
    #[serde(default)]
    pub impact: Option<String>,
    /// The choices offered to the human (at most 4).
    #[serde(default)]
    pub options: Option<Vec<RowOption>>,
    /// Longer background for the human.
    #[serde(default)]
    pub context: Option<String>,
    /// The result of the current step.
    #[serde(default)]
    pub outcome: Option<String>,
}

impl RowInput {
    pub(super) fn validate(&self) -> Result<()> {
        check_name("a row label", &self.label)?;
        for (what, v) in [
            ("the note", &self.note),
            ("the next step", &self.next_step),
            ("the impact", &self.impact),
            ("the outcome", &self.outcome),
        ] {
            if let Some(v) = v {
                check_len(what, v, MAX_TEXT)?;
            }
        }
        if let Some(c) = &self.context {
            check_len("the context", c, MAX_CONTEXT)?;
        }
        if let Some(o) = &self.options {
            check_options(o)?;
        }
        Ok(())
    }
}

/// Row fields after merging an input onto the stored row.
#[derive(PartialEq)]
pub(super) struct Fields {
    pub(super) status: RowStatus,
    pub(super) note: String,
    pub(super) next_step: String,
    pub(super) owner: RowOwner,
    pub(super) impact: String,
    pub(super) options: Vec<RowOption>,
    pub(super) context: String,
    pub(super) outcome: String,
}

impl Fields {
    pub(super) fn of(r: &Row) -> Fields {
        Fields {
            status: r.status,
            note: r.note.clone(),
            next_step: r.next_step.clone(),
            owner: r.owner,
            impact: r.impact.clone(),
            options: r.options.clone(),
            context: r.context.clone(),
            outcome: r.outcome.clone(),
        }
    }

    pub(super) fn merged(base: Fields, i: &RowInput) -> Fields {
        Fields {
            status: i.status.unwrap_or(base.status),
            note: i.note.clone().unwrap_or(base.note),
            next_step: i.next_step.clone().unwrap_or(base.next_step),
            owner: i.owner.unwrap_or(base.owner),
            impact: i.impact.clone().unwrap_or(base.impact),
            options: i.options.clone().unwrap_or(base.options),
            context: i.context.clone().unwrap_or(base.context),
            outcome: i
                .outcome
                .as_deref()
                .map(str::trim)
                .map_or(base.outcome, str::to_owned),
        }
    }

    pub(super) fn empty() -> Fields {
        Fields {
            status: RowStatus::Tracked,
            note: String::new(),
            next_step: String::new(),
            owner: RowOwner::None,
            impact: String::new(),
            options: Vec::new(),
            context: String::new(),
            outcome: String::new(),
        }
    }

    /// The fields a human reads in a blocked row's chat message.
    pub(super) fn same_step(&self, o: &Fields) -> bool {
        self.note == o.note
            && self.next_step == o.next_step
            && self.owner == o.owner
            && self.impact == o.impact
            && self.options == o.options
            && self.context == o.context
    }

    /// The options as stored (JSON text).
    pub(super) fn options_json(&self) -> String {
        serde_json::to_string(&self.options).unwrap_or_else(|_| "[]".into())
    }
}
