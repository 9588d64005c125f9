//! Taps and replies on blocked rows and actions (questions are in `handlers.rs`).

use teloxide::prelude::*;

use super::Bridge;
use super::callback::Callback;
use crate::store::questions::ReplyKind;

impl Bridge {
    pub(crate) async fn tap_row(
        &self,
        q: &CallbackQuery,
        _chat_id: i64,
        _thread: Option<i32>,
        _message_id: i32,
        _cb: &Callback,
        _who: &str,
    ) {
        let _ = self.bot.answer_callback_query(q.id.clone()).text("Rows are not wired yet.").await;
    }

    pub(crate) async fn tap_action(
        &self,
        q: &CallbackQuery,
        _chat_id: i64,
        _thread: Option<i32>,
        _message_id: i32,
        _cb: &Callback,
        _who: &str,
    ) {
        let _ = self.bot.answer_callback_query(q.id.clone()).text("Actions are not wired yet.").await;
    }

    pub(crate) async fn answer_row(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        _id: &str,
        _text: &str,
        _who: &str,
        _kind: ReplyKind,
    ) {
        self.say(chat_id, thread, "Rows are not wired yet.").await;
    }

    pub(crate) async fn edit_action(&self, chat_id: i64, thread: Option<i32>, _id: &str, _text: &str, _who: &str) {
        self.say(chat_id, thread, "Actions are not wired yet.").await;
    }

    pub(crate) async fn find_row(&self, _sid: &str) -> Option<String> {
        None
    }

    pub(crate) async fn list_more(&self, _chat_id: i64) -> Vec<String> {
        Vec::new()
    }
}
