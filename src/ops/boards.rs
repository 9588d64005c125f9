//! Boards for the agent: upsert, one row, advance a row's step, read.
//! Every write carries the versions the agent read; a stale one comes back
//! as `Refused { reason: "stale" }` with the current versions in `detail`.

use super::local::{parse, required};
use super::requests::{
    BoardAdvanceRequest, BoardGetRequest, BoardRowRequest, BoardUpsertRequest, RowChoice, RowSpec,
};
use super::{Error, Ops, Result};
use crate::store::boards::{
    Advance, BoardFull, BoardUpsert, NextStep, RowInput, RowOption, RowOwner, RowWrite,
};

fn choices(v: Vec<RowChoice>) -> Vec<RowOption> {
    v.into_iter()
        .map(|c| RowOption {
            label: c.label,
            detail: c.detail,
            recommended: c.recommended,
        })
        .collect()
}

fn owner(v: Option<&str>) -> Result<RowOwner> {
    match v {
        None => Ok(RowOwner::None),
        Some(o) => parse("owner", o),
    }
}

fn row_input(r: RowSpec) -> Result<RowInput> {
    Ok(RowInput {
        label: r.label,
        revision: r.revision,
        status: r
            .status
            .as_deref()
            .map(|s| parse("status", s))
            .transpose()?,
        note: r.note,
        next_step: r.next_step,
        owner: r.owner.as_deref().map(|o| parse("owner", o)).transpose()?,
        impact: r.impact,
        options: r.options.map(choices),
        context: r.context,
        outcome: r.outcome,
    })
}

fn project(p: Option<String>) -> Option<String> {
    p.filter(|p| !p.trim().is_empty())
}

impl Ops {
    pub async fn board_upsert(&self, r: BoardUpsertRequest) -> Result<BoardFull> {
        required("title", &r.title)?;
        let up = BoardUpsert {
            project: r.project.unwrap_or_default(),
            title: r.title,
            board_version: r.board_version,
            agent: r.agent.unwrap_or_default(),
            session: r.session.unwrap_or_default(),
            rows: r
                .rows
                .into_iter()
                .map(row_input)
                .collect::<Result<Vec<_>>>()?,
        };
        Ok(self.upsert_board(&up).await??)
    }

    pub async fn board_row(&self, r: BoardRowRequest) -> Result<BoardFull> {
        required("board", &r.board)?;
        let w = RowWrite {
            board: r.board,
            project: project(r.project),
            board_version: r.board_version,
            row: row_input(r.row)?,
            by: r.by.unwrap_or_default(),
        };
        Ok(self.write_row(&w).await??)
    }

    pub async fn board_advance(&self, r: BoardAdvanceRequest) -> Result<BoardFull> {
        required("board", &r.board)?;
        required("label", &r.label)?;
        if r.next_step.trim().is_empty() {
            return Err(Error::invalid(
                "`next_step` is required: say what is asked of the human now",
            ));
        }
        let a = Advance {
            board: r.board,
            project: project(r.project),
            label: r.label,
            expected_revision: r.revision,
            board_version: r.board_version,
            outcome: r.outcome,
            next: NextStep {
                next_step: r.next_step,
                note: r.note,
                owner: owner(r.owner.as_deref())?,
                impact: r.impact,
                options: choices(r.options),
                context: r.context,
            },
            by: r.by.unwrap_or_default(),
        };
        Ok(self.advance_row(&a).await??)
    }

    pub async fn board_get(&self, r: BoardGetRequest) -> Result<BoardFull> {
        required("board", &r.board)?;
        let p = project(r.project);
        Ok(self.read_board(&r.board, p.as_deref()).await??)
    }
}
