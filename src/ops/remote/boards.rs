//! Board primitives over `/v1/boards`, `/v1/pending?only=rows` and
//! `/v1/handoffs`. `{board}` is sent as given (id, short id or title) with
//! `project`; the daemon resolves it as the store would.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Answer, Remote, host_only, named, query};
use crate::ops::Result;
use crate::ops::backend::{Run, boards as call};
use crate::store::boards::{Board, BoardFull, Channel, Decided, PendingRow, Refusal, RowChange};

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
}

impl Run<call::UpsertBoard<'_>> for Remote {
    async fn run(
        &self,
        call::UpsertBoard(up): call::UpsertBoard<'_>,
    ) -> Result<Decided<BoardFull>> {
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
}

impl Run<call::WriteRow<'_>> for Remote {
    async fn run(&self, call::WriteRow(w): call::WriteRow<'_>) -> Result<Decided<BoardFull>> {
        let body = json!({
            "project": w.project,
            "board_version": w.board_version,
            "row": w.row,
            "by": named(&w.by),
        });
        self.board_post(&w.board, &["rows"], body).await
    }
}

impl Run<call::AdvanceRow<'_>> for Remote {
    async fn run(&self, call::AdvanceRow(a): call::AdvanceRow<'_>) -> Result<Decided<BoardFull>> {
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
}

impl Run<call::StoreOutcome<'_>> for Remote {
    async fn run(
        &self,
        call::StoreOutcome(w): call::StoreOutcome<'_>,
    ) -> Result<Decided<BoardFull>> {
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
}

impl Run<call::ReadBoard<'_>> for Remote {
    async fn run(
        &self,
        call::ReadBoard(board, project): call::ReadBoard<'_>,
    ) -> Result<Decided<BoardFull>> {
        let q = query(&[("project", project.map(str::to_string))]);
        decided(self.get(&["boards", board], &q).await)
    }
}

impl Run<call::ListBoards<'_>> for Remote {
    async fn run(
        &self,
        call::ListBoards(project, archived): call::ListBoards<'_>,
    ) -> Result<Vec<Board>> {
        let q = query(&[
            ("project", project.map(str::to_string)),
            ("archived", Some(archived.to_string())),
        ]);
        Ok(self.get_all(&["boards"], &q).await?)
    }
}

impl Run<call::ArchiveBoard<'_>> for Remote {
    async fn run(
        &self,
        call::ArchiveBoard(board, project, version, by): call::ArchiveBoard<'_>,
    ) -> Result<Decided<Board>> {
        let body = json!({"project": project, "board_version": version, "by": named(by)});
        self.board_post(board, &["archive"], body).await
    }
}

impl Run<call::AnnotateRow<'_>> for Remote {
    async fn run(&self, call::AnnotateRow(a): call::AnnotateRow<'_>) -> Result<Decided<RowChange>> {
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
}

impl Run<call::MarkHandled<'_>> for Remote {
    async fn run(
        &self,
        call::MarkHandled(h, clear): call::MarkHandled<'_>,
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
}

impl Run<call::PendingRows<'_>> for Remote {
    async fn run(
        &self,
        call::PendingRows(project, session, by, peek): call::PendingRows<'_>,
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
}

impl Run<call::Handoffs<'_>> for Remote {
    async fn run(&self, call::Handoffs(project): call::Handoffs<'_>) -> Result<Vec<PendingRow>> {
        let q = query(&[("project", project.map(str::to_string))]);
        Ok(self.get_all(&["handoffs"], &q).await?)
    }
}
