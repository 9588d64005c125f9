//! Board primitives over `/v1/boards`, `/v1/pending?only=rows` and
//! `/v1/handoffs`. `{board}` is sent as given (id, short id or title) with
//! `project`; the daemon resolves it as the store would.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Answer, Remote, host_only, named, query};
use crate::ops::Result;
use crate::store::boards::{
    Advance, Annotate, Board, BoardFull, BoardUpsert, Channel, Decided, Handled, OutcomeWrite,
    PendingRow, Refusal, RowChange, RowWrite,
};

/// A board call's answer as the store's `Decided`: a refusal in `detail`
/// becomes the typed refusal; a bare 404 (a board the token may not see)
/// is `NotFound` with the daemon's words.
fn decided<T>(a: Answer<T>) -> Result<Decided<T>> {
    match a {
        Ok(v) => Ok(Ok(v)),
        Err(f) => match f.detail_as::<Refusal>() {
            Some(r) => Ok(Err(r)),
            None if f.status == 404 && f.reason == "not_found" => Ok(Err(Refusal::NotFound {
                what: f
                    .message
                    .strip_suffix(" not found")
                    .unwrap_or(&f.message)
                    .to_string(),
            })),
            None => Err(f.into()),
        },
    }
}

#[derive(Deserialize)]
struct RowsAnswer {
    rows: Vec<PendingRow>,
}

impl Remote {
    async fn board_post<T: DeserializeOwned>(
        &self,
        board: &str,
        tail: &[&str],
        body: serde_json::Value,
    ) -> Result<Decided<T>> {
        let mut segs = vec!["boards", board];
        segs.extend_from_slice(tail);
        decided(self.post(&segs, body).await)
    }

    pub(crate) async fn upsert_board(&self, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
        let body = json!({
            "project": up.project,
            "title": up.title,
            "board_version": up.board_version,
            "agent": up.agent,
            "session": up.session,
            "rows": up.rows,
        });
        decided(
            self.call(reqwest::Method::PUT, &["boards"], &[], Some(body), None)
                .await,
        )
    }

    pub(crate) async fn write_row(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        let body = json!({
            "project": w.project,
            "board_version": w.board_version,
            "row": w.row,
            "by": named(&w.by),
        });
        self.board_post(&w.board, &["rows"], body).await
    }

    pub(crate) async fn advance_row(&self, a: &Advance) -> Result<Decided<BoardFull>> {
        let body = json!({
            "project": a.project,
            "label": a.label,
            "expected_revision": a.expected_revision,
            "board_version": a.board_version,
            "outcome": a.outcome,
            "next": a.next,
            "by": named(&a.by),
        });
        self.board_post(&a.board, &["advance"], body).await
    }

    pub(crate) async fn store_outcome(&self, w: &OutcomeWrite) -> Result<Decided<BoardFull>> {
        let body = json!({
            "project": w.project,
            "label": w.label,
            "expected_revision": w.expected_revision,
            "outcome": w.outcome,
            "status": w.status,
            "by": named(&w.by),
        });
        self.board_post(&w.board, &["outcome"], body).await
    }

    pub(crate) async fn read_board(
        &self,
        board: &str,
        project: Option<&str>,
    ) -> Result<Decided<BoardFull>> {
        let q = query(&[("project", project.map(str::to_string))]);
        decided(self.get(&["boards", board], &q).await)
    }

    pub(crate) async fn list_boards(
        &self,
        project: Option<&str>,
        archived: bool,
    ) -> Result<Vec<Board>> {
        let q = query(&[
            ("project", project.map(str::to_string)),
            ("archived", Some(archived.to_string())),
        ]);
        Ok(self.get_all(&["boards"], &q).await?)
    }

    pub(crate) async fn archive_board(
        &self,
        board: &str,
        project: Option<&str>,
        version: i64,
        by: &str,
    ) -> Result<Decided<Board>> {
        let body = json!({"project": project, "board_version": version, "by": named(by)});
        self.board_post(board, &["archive"], body).await
    }

    pub(crate) async fn annotate_row(&self, a: &Annotate) -> Result<Decided<RowChange>> {
        if a.source == Channel::Chat {
            return Err(host_only("answering through the chat door (--via chat)"));
        }
        let body = json!({
            "project": a.project,
            "text": a.text,
            "kind": a.kind,
            "expected_revision": a.expected_revision,
            "action_version": a.action_version,
            "by": named(&a.by),
        });
        self.board_post(&a.board, &["rows", &a.label, "annotate"], body)
            .await
    }

    pub(crate) async fn mark_handled(
        &self,
        h: &Handled,
        clear: bool,
    ) -> Result<Decided<RowChange>> {
        if h.source == Channel::Chat {
            return Err(host_only(
                "marking handled through the chat door (--via chat)",
            ));
        }
        let body = json!({
            "project": h.project,
            "expected_revision": h.expected_revision,
            "clear": clear,
            "by": named(&h.by),
        });
        self.board_post(&h.board, &["rows", &h.label, "handled"], body)
            .await
    }

    pub(crate) async fn pending_rows(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        by: &str,
        peek: bool,
    ) -> Result<Vec<PendingRow>> {
        let q = query(&[
            ("only", Some("rows".into())),
            ("project", project.map(str::to_string)),
            ("session", session.map(str::to_string)),
            ("peek", Some(peek.to_string())),
            ("by", named(by)),
        ]);
        let a: RowsAnswer = self.get(&["pending"], &q).await?;
        Ok(a.rows)
    }

    pub(crate) async fn handoffs(&self, project: Option<&str>) -> Result<Vec<PendingRow>> {
        let q = query(&[("project", project.map(str::to_string))]);
        Ok(self.get_all(&["handoffs"], &q).await?)
    }
}
