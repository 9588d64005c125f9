//! The board primitives on the store: one store call each.

use std::borrow::Cow;

use super::Local;
use crate::ops::Result;
use crate::ops::backend::{Run, boards as call};
use crate::store::boards::{Board, BoardFull, Decided, PendingRow, Refusal, Row, RowChange};

impl Local {
    /// The board and row behind a row id (`None`: no such row, or its
    /// board is gone), as the chat draws a blocked row.
    pub async fn row_of(&self, id: &str) -> Result<Option<(Board, Row)>> {
        let Some((board_id, label)) = self.store.row_locator(id).await? else {
            return Ok(None);
        };
        Ok(match self.store.board_get(&board_id, self.scope()).await? {
            Ok(full) => full
                .rows
                .iter()
                .find(|r| r.label == label)
                .cloned()
                .map(|r| (full.board, r)),
            Err(_) => None,
        })
    }

    /// The ids of every blocked row on a live board.
    pub async fn blocked_row_ids(&self) -> Result<Vec<String>> {
        Ok(self.store.blocked_row_ids().await?)
    }

    /// The full id of the row `id_or_short` names, if one.
    pub async fn find_row_id(&self, id_or_short: &str) -> Result<Option<String>> {
        Ok(self.store.find_row_id(id_or_short).await?)
    }

    /// `w` with its project pinned to the scope when there is one, so the
    /// store finds the board only in that project (another project's board
    /// is not found, as if absent).
    fn pinned<'w, T: Clone>(
        &self,
        w: &'w T,
        project: impl FnOnce(&mut T) -> &mut Option<String>,
    ) -> Cow<'w, T> {
        match self.scope() {
            None => Cow::Borrowed(w),
            Some(p) => {
                let mut w = w.clone();
                *project(&mut w) = Some(p.to_string());
                Cow::Owned(w)
            }
        }
    }
}

impl Run<call::UpsertBoard<'_>> for Local {
    async fn run(
        &self,
        call::UpsertBoard(up): call::UpsertBoard<'_>,
    ) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_upsert(up).await?)
    }
}

impl Run<call::WriteRow<'_>> for Local {
    async fn run(&self, call::WriteRow(w): call::WriteRow<'_>) -> Result<Decided<BoardFull>> {
        let w = self.pinned(w, |w| &mut w.project);
        Ok(self.store.board_row(&w).await?)
    }
}

impl Run<call::AdvanceRow<'_>> for Local {
    async fn run(&self, call::AdvanceRow(a): call::AdvanceRow<'_>) -> Result<Decided<BoardFull>> {
        let a = self.pinned(a, |a| &mut a.project);
        Ok(self.store.board_advance(&a).await?)
    }
}

impl Run<call::StoreOutcome<'_>> for Local {
    async fn run(
        &self,
        call::StoreOutcome(w): call::StoreOutcome<'_>,
    ) -> Result<Decided<BoardFull>> {
        let w = self.pinned(w, |w| &mut w.project);
        Ok(self.store.board_outcome(&w).await?)
    }
}

impl Run<call::ReadBoard<'_>> for Local {
    async fn run(
        &self,
        call::ReadBoard(board, project): call::ReadBoard<'_>,
    ) -> Result<Decided<BoardFull>> {
        let found = self
            .store
            .board_get(board, self.scope().or(project))
            .await?;
        Ok(found.and_then(|full| match self.scope() {
            Some(p) if p != full.board.project => Err(Refusal::NotFound {
                what: format!("board `{board}`"),
            }),
            _ => Ok(full),
        }))
    }
}

impl Run<call::ListBoards<'_>> for Local {
    async fn run(
        &self,
        call::ListBoards(project, archived): call::ListBoards<'_>,
    ) -> Result<Vec<Board>> {
        let project = self.scope().or(project);
        Ok(self.store.board_list(project, archived).await?)
    }
}

impl Run<call::ArchiveBoard<'_>> for Local {
    async fn run(
        &self,
        call::ArchiveBoard(board, project, version, by): call::ArchiveBoard<'_>,
    ) -> Result<Decided<Board>> {
        let project = self.scope().or(project);
        Ok(self
            .store
            .board_archive(board, project, version, by)
            .await?)
    }
}

impl Run<call::AnnotateRow<'_>> for Local {
    async fn run(&self, call::AnnotateRow(a): call::AnnotateRow<'_>) -> Result<Decided<RowChange>> {
        let a = self.pinned(a, |a| &mut a.project);
        Ok(self.store.annotate(&a).await?)
    }
}

impl Run<call::MarkHandled<'_>> for Local {
    async fn run(
        &self,
        call::MarkHandled(h, clear): call::MarkHandled<'_>,
    ) -> Result<Decided<RowChange>> {
        let h = self.pinned(h, |h| &mut h.project);
        Ok(if clear {
            self.store.clear_handled(&h).await?
        } else {
            self.store.mark_handled(&h).await?
        })
    }
}

impl Run<call::PendingRows<'_>> for Local {
    async fn run(
        &self,
        call::PendingRows(project, session, by, peek): call::PendingRows<'_>,
    ) -> Result<Vec<PendingRow>> {
        let project = self.scope().or(project);
        Ok(if peek {
            self.store.pending_rows_peek(project, session).await?
        } else {
            self.store.pending_rows(project, session, by).await?
        })
    }
}

impl Run<call::Handoffs<'_>> for Local {
    async fn run(&self, call::Handoffs(project): call::Handoffs<'_>) -> Result<Vec<PendingRow>> {
        let project = self.scope().or(project);
        Ok(self.store.unprocessed_handoffs(project).await?)
    }
}
