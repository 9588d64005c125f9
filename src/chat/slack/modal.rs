//! Forms for what a button cannot carry: a Reject's reason and an Edit's
//! patch. A Reject or Edit tap opens a modal (`views.open`); its
//! submission arrives as a `view_submission` envelope, is applied through
//! the seam, and is answered in that envelope's acknowledgement: a patch
//! that is not valid gets the field's error and changes nothing (checked
//! before any state change, `docs/design.md` §4), anything else closes the
//! form and is told as an ephemeral note.
//!
//! Not here: the meaning of a decision (the store's, through the bridge)
//! and the thread-reply Edit (`socket`), which stays the fallback when a
//! form cannot be opened.

use sha2::Digest;
use slack_morphism::prelude::*;

use super::Slack;
use super::socket::NotYet;
use crate::chat::action::approve_words;
use crate::chat::callback::{Callback, Item, Verb};
use crate::chat::network::Right;
use crate::store::actions::{Actor, ApproveOutcome, Status};

/// The modal that asks for a rejection's reason.
const REJECT: &str = "handoff.reject";
/// The modal that asks for an edit's patch.
const EDIT: &str = "handoff.edit";
/// The form's one field: its block id and its input's action id.
const FIELD: &str = "text";

/// Where a form came from, carried in the modal's `private_metadata`:
/// the item message's channel and `ts`, and the action's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Origin {
    pub channel: String,
    pub message_ts: String,
    pub id: String,
}

impl Origin {
    fn encode(&self) -> String {
        format!("{}|{}|{}", self.channel, self.message_ts, self.id)
    }

    fn decode(s: &str) -> Option<Origin> {
        let mut parts = s.splitn(3, '|');
        let (channel, message_ts, id) = (parts.next()?, parts.next()?, parts.next()?);
        (!channel.is_empty() && !id.is_empty()).then(|| Origin {
            channel: channel.to_string(),
            message_ts: message_ts.to_string(),
            id: id.to_string(),
        })
    }
}

/// The modal for `verb` (Reject or Edit) on the action `summary`.
fn form(verb: Verb, summary: &str, origin: &Origin) -> SlackView {
    let (callback, title, label, submit, hint, optional) = if verb == Verb::Reject {
        (
            REJECT,
            "Reject",
            "Reason (optional)",
            "Reject",
            "Why not? The agent reads this.",
            true,
        )
    } else {
        (
            EDIT,
            "Edit and approve",
            "Changes",
            "Approve",
            "A JSON patch like {\"to\": \"x@example.com\"} or key: value lines. Checked first, then it counts as your approval.",
            false,
        )
    };
    let input = SlackBlockPlainTextInputElement::new()
        .with_action_id(FIELD.into())
        .with_multiline(true);
    let blocks = vec![
        SlackBlock::Section(
            SlackSectionBlock::new().with_text(md!(super::blocks::mrkdwn(
                &crate::chat::text::cut(summary, 2900)
            ))),
        ),
        SlackBlock::Input(
            SlackInputBlock::new(label.into(), SlackInputBlockElement::PlainTextInput(input))
                .with_block_id(FIELD.into())
                .with_hint(hint.into())
                .with_optional(optional),
        ),
    ];
    SlackView::Modal(
        SlackModalView::new(title.into(), blocks)
            .with_submit(submit.into())
            .with_close("Cancel".into())
            .with_callback_id(callback.into())
            .with_private_metadata(origin.encode()),
    )
}

/// The text typed in a submitted form's field.
fn typed(view: &SlackStatefulView) -> String {
    view.state_params
        .state
        .as_ref()
        .and_then(|s| s.values.get(&FIELD.into()))
        .and_then(|b| b.get(&FIELD.into()))
        .and_then(|v| v.value.clone())
        .unwrap_or_default()
}

/// The answer that keeps the form open with `error` under its field.
fn field_error(error: impl Into<String>) -> SlackInteractionResponse {
    let errors = [(
        FIELD.to_string(),
        crate::chat::text::cut(&error.into(), 150),
    )];
    SlackViewSubmissionResponse::Errors(SlackViewSubmissionErrorsResponse::new(
        errors.into_iter().collect(),
    ))
    .into()
}

/// The answer that closes the form.
fn close() -> SlackInteractionResponse {
    SlackViewSubmissionResponse::Clear(SlackViewSubmissionClearResponse::new()).into()
}

impl Slack {
    /// A Reject or Edit tap on an action still pending: open its form.
    /// `None`: the tap is not one that opens a form (or the action is
    /// decided, so the seam says so); `Some(false)`: Slack would not open
    /// it, so the adapter falls back to the tap's plain meaning.
    pub(super) async fn open_form(
        &self,
        cb: &Callback,
        trigger: &str,
        channel: &str,
        message_ts: &str,
    ) -> Option<bool> {
        if cb.item != Item::Action || !matches!(cb.verb, Verb::Reject | Verb::Edit) {
            return None;
        }
        let a = crate::chat::action::action_of(&self.bridge.ops, &cb.id)
            .await
            .ok()
            .flatten()?;
        if a.status != Status::Pending {
            return None;
        }
        let origin = Origin {
            channel: channel.to_string(),
            message_ts: message_ts.to_string(),
            id: cb.id.clone(),
        };
        let req = SlackApiViewsOpenRequest::new(
            trigger.to_string().into(),
            form(cb.verb, &a.summary, &origin),
        );
        let opened = self
            .call("views.open", channel, || async {
                self.session().views_open(&req).await
            })
            .await;
        Some(matches!(opened, super::send::Called::Done(_)))
    }

    /// A form submitted: applied once, then answered in the envelope's
    /// acknowledgement (a field error keeps the form open).
    pub(super) async fn on_submission(
        &self,
        ev: SlackInteractionViewSubmissionEvent,
    ) -> Result<SlackInteractionResponse, NotYet> {
        let SlackView::Modal(modal) = &ev.view.view else {
            return Ok(SlackInteractionResponse::Empty);
        };
        let which = modal.callback_id.as_ref().map(|c| c.0.as_str());
        let Some(origin) = modal.private_metadata.as_deref().and_then(Origin::decode) else {
            return Ok(SlackInteractionResponse::Empty);
        };
        let text = typed(&ev.view);
        let user = ev.user.id.0.clone();
        // Keyed by the view and what was typed: a redelivered envelope is
        // applied once; a corrected resubmission of the same form is new.
        let digest: String = sha2::Sha256::digest(text.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let key = format!("view:{}:{digest}", ev.view.state_params.id.0);
        let edit = which == Some(EDIT);
        if !self.take(&key).await? {
            // Nothing was applied the second time: a patch that does not
            // parse gets its error again, anything else closes the form.
            return Ok(match crate::chat::action::patch_json(&text) {
                Err(e) if edit => field_error(format!("Not applied: {e}")),
                _ => close(),
            });
        }
        let answer = match which {
            Some(form @ (REJECT | EDIT)) => self.decide(form, &origin, &user, &text).await,
            _ => close(),
        };
        self.done(&key).await;
        Ok(answer)
    }

    /// Whether `user` may decide actions in `channel`: their name as the
    /// audit records it (`slack:<id>`), or a refusal, audited, that keeps
    /// the form open with the reason.
    async fn may_decide(
        &self,
        origin: &Origin,
        user: &str,
    ) -> Result<String, SlackInteractionResponse> {
        let admitted = self
            .bridge
            .config
            .slack
            .channel(&origin.channel)
            .is_some_and(|c| Right::Approve.listed(&user.to_string(), &c.answer, &c.approve));
        let who = format!("slack:{user}");
        if admitted {
            return Ok(who);
        }
        let cb = Callback {
            item: Item::Action,
            id: origin.id.clone(),
            revision: 0,
            verb: Verb::Reject,
        };
        self.record_refusal(&origin.channel, &who, &cb).await;
        Err(field_error(format!(
            "You're not allowed to decide actions here: ask the operator to add your Slack user id ({user}) to this channel's list."
        )))
    }

    /// A Reject or Edit form submitted by `user`: checked, applied, the
    /// message redrawn and the person told; or the form kept open with
    /// the field's error.
    async fn decide(
        &self,
        form: &str,
        origin: &Origin,
        user: &str,
        text: &str,
    ) -> SlackInteractionResponse {
        let who = match self.may_decide(origin, user).await {
            Ok(who) => who,
            Err(refused) => return refused,
        };
        let words = if form == EDIT {
            match self.edit_words(&origin.id, &who, text).await {
                Ok(words) => words,
                Err(field) => return field,
            }
        } else {
            self.reject_words(&origin.id, &who, text).await
        };
        self.redraw(Item::Action, &origin.id);
        self.tell_later(origin.channel.clone(), user.to_string(), words);
        close()
    }

    /// A rejection of action `id` by `who`, for the typed reason (or a
    /// default one); what to tell them.
    async fn reject_words(&self, id: &str, who: &str, text: &str) -> String {
        let reason = match text.trim() {
            "" => format!("rejected in Slack by {who}"),
            typed => typed.to_string(),
        };
        self.bridge.reject_for(id, Actor::chat(who), &reason).await
    }

    /// An edit: a patch that does not parse, or that the store refuses,
    /// is the field's error and nothing changed; otherwise it counts as
    /// the editor's approval, and the words tell them so.
    async fn edit_words(
        &self,
        id: &str,
        who: &str,
        text: &str,
    ) -> Result<String, SlackInteractionResponse> {
        let patch = crate::chat::action::patch_json(text)
            .map_err(|e| field_error(format!("Not applied: {e}")))?;
        match self
            .bridge
            .calls()
            .approve(id, Actor::chat(who), Some(&patch))
            .await
        {
            Ok(ApproveOutcome::PatchRefused { reason, .. }) => Err(field_error(format!(
                "Edit refused, nothing changed: {reason}"
            ))),
            Ok(o) => Ok(approve_words(&o, who)),
            Err(e) => Err(field_error(format!("Not applied, nothing changed: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_survives_the_round_trip_and_junk_is_refused() {
        let o = Origin {
            channel: "C0TEAM".into(),
            message_ts: "1700000000.000001".into(),
            id: "a".repeat(32),
        };
        assert_eq!(Origin::decode(&o.encode()), Some(o));
        for junk in ["", "C0|ts", "|ts|id", "C0|ts|"] {
            assert_eq!(Origin::decode(junk), None, "{junk}");
        }
    }

    #[test]
    fn a_field_error_names_the_field() {
        let json = serde_json::to_value(field_error("bad")).expect("serialises");
        assert_eq!(json["response_action"], "errors");
        assert_eq!(json["errors"][FIELD], "bad");
    }
}
