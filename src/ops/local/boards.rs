//! The board primitives on the store: one store call each.

use super::Local;
use crate::ops::Result;
use crate::ops::backend::{Run, boards as call};
use crate::store::boards::{Board, BoardFull, Decided, PendingRow, RowChange};

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
        Ok(self.store.board_row(w).await?)
    }
}

impl Run<call::AdvanceRow<'_>> for Local {
    async fn run(&self, call::AdvanceRow(a): call::AdvanceRow<'_>) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_advance(a).await?)
    }
}

impl Run<call::StoreOutcome<'_>> for Local {
    async fn run(
        &self,
        call::StoreOutcome(w): call::StoreOutcome<'_>,
    ) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_outcome(w).await?)
    }
}

impl Run<call::ReadBoard<'_>> for Local {
    async fn run(
        &self,
        call::ReadBoard(board, project): call::ReadBoard<'_>,
    ) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_get(board, project).await?)
    }
}

impl Run<call::ListBoards<'_>> for Local {
    async fn run(
        &self,
        call::ListBoards(project, archived): call::ListBoards<'_>,
    ) -> Result<Vec<Board>> {
        Ok(self.store.board_list(project, archived).await?)
    }
}

impl Run<call::ArchiveBoard<'_>> for Local {
    async fn run(
        &self,
        call::ArchiveBoard(board, project, version, by): call::ArchiveBoard<'_>,
    ) -> Result<Decided<Board>> {
        Ok(self
            .store
            .board_archive(board, project, version, by)
            .await?)
    }
}

impl Run<call::AnnotateRow<'_>> for Local {
    async fn run(&self, call::AnnotateRow(a): call::AnnotateRow<'_>) -> Result<Decided<RowChange>> {
        Ok(self.store.annotate(a).await?)
    }
}

impl Run<call::MarkHandled<'_>> for Local {
    async fn run(
        &self,
        call::MarkHandled(h, clear): call::MarkHandled<'_>,
    ) -> Result<Decided<RowChange>> {
        Ok(if clear {
            self.store.clear_handled(h).await?
        } else {
            self.store.mark_handled(h).await?
        })
    }
}

impl Run<call::PendingRows<'_>> for Local {
    async fn run(
        &self,
        call::PendingRows(project, session, by, peek): call::PendingRows<'_>,
    ) -> Result<Vec<PendingRow>> {
        Ok(if peek {
            self.store.pending_rows_peek(project, session).await?
        } else {
            self.store.pending_rows(project, session, by).await?
        })
    }
}

impl Run<call::Handoffs<'_>> for Local {
    async fn run(&self, call::Handoffs(project): call::Handoffs<'_>) -> Result<Vec<PendingRow>> {
        Ok(self.store.unprocessed_handoffs(project).await?)
    }
}
