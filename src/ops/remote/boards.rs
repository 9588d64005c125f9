//! Board primitives over `/v1/boards`, `/v1/pending?only=rows` and
//! `/v1/handoffs`. `{board}` is sent as given (id, short id or title) with
//! `project`; the daemon resolves it as the store would.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Answer, Remote, host_only, named, query};
use crate::ops::Result;
use crate::ops::backend::{BoardOps, Call};
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
}

impl BoardOps for Remote {
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move {
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
        })
    }

    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move {
            let body = json!({
                "project": w.project,
                "board_version": w.board_version,
                "row": w.row,
                "by": named(&w.by),
            });
            self.board_post(&w.board, &["rows"], body).await
        })
    }

    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move {
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
        })
    }

    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move {
            let body = json!({
                "project": w.project,
                "label": w.label,
                "expected_revision": w.expected_revision,
                "outcome": w.outcome,
                "status": w.status,
                "by": named(&w.by),
            });
            self.board_post(&w.board, &["outcome"], body).await
        })
    }

    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        Box::pin(async move {
            let q = query(&[("project", project.map(str::to_string))]);
            decided(self.get(&["boards", board], &q).await)
        })
    }

    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>> {
        Box::pin(async move {
            let q = query(&[
                ("project", project.map(str::to_string)),
                ("archived", Some(archived.to_string())),
            ]);
            Ok(self.get_all(&["boards"], &q).await?)
        })
    }

    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        Box::pin(async move {
            let body = json!({"project": project, "board_version": version, "by": named(by)});
            self.board_post(board, &["archive"], body).await
        })
    }

    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        Box::pin(async move {
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
        })
    }

    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        Box::pin(async move {
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
            let q = query(&[
                ("only", Some("rows".into())),
                ("project", project.map(str::to_string)),
                ("session", session.map(str::to_string)),
                ("peek", Some(peek.to_string())),
                ("by", named(by)),
            ]);
            let a: RowsAnswer = self.get(&["pending"], &q).await?;
            Ok(a.rows)
        })
    }

    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        Box::pin(async move {
            let q = query(&[("project", project.map(str::to_string))]);
            Ok(self.get_all(&["handoffs"], &q).await?)
        })
    }
}
