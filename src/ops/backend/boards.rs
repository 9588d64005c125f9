//! The board primitives: their argument types and [`Ops`]'s methods.

use super::Call;
use crate::ops::Ops;
use crate::store::boards::{
    Advance, Annotate, Board, BoardFull, BoardUpsert, Decided, Handled, OutcomeWrite, PendingRow,
    RowChange, RowWrite,
};

primitives! {
    upsert_board: UpsertBoard<'a>(&'a BoardUpsert) -> Decided<BoardFull>;
    write_row: WriteRow<'a>(&'a RowWrite) -> Decided<BoardFull>;
    advance_row: AdvanceRow<'a>(&'a Advance) -> Decided<BoardFull>;
    store_outcome: StoreOutcome<'a>(&'a OutcomeWrite) -> Decided<BoardFull>;
    read_board: ReadBoard<'a>(&'a str, Option<&'a str>) -> Decided<BoardFull>;
    list_boards: ListBoards<'a>(Option<&'a str>, bool) -> Vec<Board>;
    archive_board: ArchiveBoard<'a>(&'a str, Option<&'a str>, i64, &'a str) -> Decided<Board>;
    annotate_row: AnnotateRow<'a>(&'a Annotate) -> Decided<RowChange>;
    mark_handled: MarkHandled<'a>(&'a Handled, bool) -> Decided<RowChange>;
    pending_rows: PendingRows<'a>(Option<&'a str>, Option<&'a str>, &'a str, bool)
        -> Vec<PendingRow>;
    handoffs: Handoffs<'a>(Option<&'a str>) -> Vec<PendingRow>;
}

impl Ops {
    /// Create or update a board and rows, all or nothing.
    pub fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        self.run(UpsertBoard(up))
    }

    /// Write one row.
    pub fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        self.run(WriteRow(w))
    }

    /// Archive a row's step and install the next, blocked.
    pub fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        self.run(AdvanceRow(a))
    }

    /// Store a step's outcome and leave blocked.
    pub fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        self.run(StoreOutcome(w))
    }

    /// One board with its rows.
    pub fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        self.run(ReadBoard(board, project))
    }

    /// Boards with progress.
    pub fn list_boards<'a>(
        &'a self,
        project: Option<&'a str>,
        archived: bool,
    ) -> Call<'a, Vec<Board>> {
        self.run(ListBoards(project, archived))
    }

    /// Archive a board (CAS on its version).
    pub fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        self.run(ArchiveBoard(board, project, version, by))
    }

    /// A human's annotation on a row (Inbox door unless `a.source` says chat — local only).
    pub fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        self.run(AnnotateRow(a))
    }

    /// Mark a row handled, or with `clear` take the mark back.
    pub fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        self.run(MarkHandled(h, clear))
    }

    /// Rows waiting for an agent; marked delivered unless `peek`.
    pub fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>> {
        self.run(PendingRows(project, session, by, peek))
    }

    /// Rows marked handled whose outcome no agent stored yet.
    pub fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        self.run(Handoffs(project))
    }
}
