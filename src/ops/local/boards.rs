//! [`BoardOps`] on the store: one store call each.

use super::Local;
use crate::ops::backend::{BoardOps, Call};
use crate::store::boards::{
    Advance, Annotate, Board, BoardFull, BoardUpsert, Decided, Handled, OutcomeWrite, PendingRow,
    RowChange, RowWrite,
};

impl BoardOps for Local {
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move { Ok(self.store.board_upsert(up).await?) })
    }

    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move { Ok(self.store.board_row(w).await?) })
    }

    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move { Ok(self.store.board_advance(a).await?) })
    }

    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move { Ok(self.store.board_outcome(w).await?) })
    }

    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move { Ok(self.store.board_get(board, project).await?) })
    }

    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>> {
        Box::pin(async move { Ok(self.store.board_list(project, archived).await?) })
    }

    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        Box::pin(async move {
            Ok(self
                .store
                .board_archive(board, project, version, by)
                .await?)
        })
    }

    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        Box::pin(async move { Ok(self.store.annotate(a).await?) })
    }

    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        Box::pin(async move {
            Ok(if clear {
                self.store.clear_handled(h).await?
            } else {
                self.store.mark_handled(h).await?
            })
        })
    }

    fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>> {
        Box::pin(async move {
            Ok(if peek {
                self.store.pending_rows_peek(project, session).await?
            } else {
                self.store.pending_rows(project, session, by).await?
            })
        })
    }

    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        Box::pin(async move { Ok(self.store.unprocessed_handoffs(project).await?) })
    }
}
