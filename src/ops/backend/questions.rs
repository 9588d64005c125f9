//! The question primitives: their argument types and [`Ops`]'s methods.

use std::time::Duration;

use super::Call;
use crate::ops::{Awaited, Ops};
use crate::store::questions::{
    Delivery, Flagged, ListFilter, NewQuestion, NewReply, Outcome, Question, ReplyRecord,
};

primitives! {
    resolve_question_id: ResolveQuestionId<'a>(&'a str) -> Option<String>;
    flag: Flag<'a>(&'a NewQuestion) -> Flagged;
    flag_wait: FlagWait<'a>(&'a NewQuestion, &'a str, Duration) -> (Flagged, Option<Awaited>);
    get_question: GetQuestion<'a>(&'a str) -> Option<Question>;
    question_replies: QuestionReplies<'a>(&'a str) -> Vec<ReplyRecord>;
    list_questions: ListQuestions<'a>(&'a ListFilter) -> Vec<Question>;
    pending_replies: PendingReplies<'a>(Option<&'a str>, Option<&'a str>, bool, &'a str)
        -> Vec<Delivery>;
    pick_up_reply: PickUpReply<'a>(&'a Question, &'a str) -> Option<Question>;
    watch_question: WatchQuestion<'a>(&'a str, Duration) -> Option<Question>;
    reply_inbox: ReplyInbox<'a>(&'a str, &'a NewReply) -> Outcome<Question>;
    answer_agent: AnswerAgent<'a>(&'a str, &'a NewReply) -> Outcome<Question>;
    resolve_question: ResolveQuestion<'a>(&'a str, &'a str, &'a str) -> Outcome<Question>;
    dismiss_question: DismissQuestion<'a>(&'a str, Option<&'a str>, &'a str) -> Outcome<Question>;
    snooze_question: SnoozeQuestion<'a>(&'a str, i64, &'a str) -> Outcome<Question>;
}

impl Ops {
    /// The full id of question `id` (full or short); `None` if no question matches.
    pub fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        self.run(ResolveQuestionId(id))
    }

    /// Flag a question (the same open `(project, key)` updates in place).
    pub fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged> {
        self.run(Flag(q))
    }

    /// Flag a question and, through a daemon, wait in the same request up
    /// to `within` (at most the API's cap) for a reply, picked up in `by`'s
    /// name; the file only flags (`None`: the caller waits).
    pub fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        by: &'a str,
        within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)> {
        self.run(FlagWait(q, by, within))
    }

    /// One question.
    pub fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>> {
        self.run(GetQuestion(id))
    }

    /// A question's append-only reply history.
    pub fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>> {
        self.run(QuestionReplies(id))
    }

    /// Questions matching `filter`.
    pub fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>> {
        self.run(ListQuestions(filter))
    }

    /// The agent's pickup of replies (marks each new one picked up).
    pub fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>> {
        self.run(PendingReplies(project, session, include_seen, by))
    }

    /// Mark exactly the reply `q` carries picked up, and return the question
    /// so marked; `None` if that reply changed meanwhile, was picked up
    /// already, or the question closed (read it again).
    pub fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>> {
        self.run(PickUpReply(q, by))
    }

    /// Question `id` once a reply may have arrived, at the latest after
    /// `within` (locally a short sleep then a read, remotely a bounded long
    /// poll); `None` if it is gone. [`Ops::await_reply`] loops over this.
    pub fn watch_question<'a>(
        &'a self,
        id: &'a str,
        within: Duration,
    ) -> Call<'a, Option<Question>> {
        self.run(WatchQuestion(id, within))
    }

    /// A human's reply through the Inbox door (always wins).
    pub fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        self.run(ReplyInbox(id, r))
    }

    /// The agent records an answer given in its terminal.
    pub fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        self.run(AnswerAgent(id, r))
    }

    /// The agent closes a question with an outcome.
    pub fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(ResolveQuestion(id, outcome, by))
    }

    /// A human closes a question without answering (Inbox door).
    pub fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(DismissQuestion(id, reason, by))
    }

    /// Hide a question from the chat list for `for_ms` from now (0 wakes it).
    pub fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(SnoozeQuestion(id, for_ms, by))
    }
}
