//! What a failed Bot API call means for a message: done, delivered but
//! unconfirmed, gone, refused for good, or worth another try.

use teloxide::{ApiError, RequestError};

/// What a failed Bot API call means for the message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// "message is not modified": it already shows this; done.
    NotModified,
    /// `ok: true` with a body we cannot parse: delivered, unconfirmed.
    Unconfirmed,
    /// The message was deleted or can no longer be edited.
    Gone(String),
    /// Telegram refused the request for good (bad request, forbidden).
    Permanent(String),
    /// Worth trying again (network, 5xx, flood control, garbled reply).
    Retry(String),
}

/// Classify a failed send or edit.
pub(crate) fn classify(e: &RequestError) -> Failure {
    match e {
        RequestError::Api(ApiError::MessageNotModified) => Failure::NotModified,
        RequestError::Api(
            ApiError::MessageToEditNotFound
            | ApiError::MessageCantBeEdited
            | ApiError::MessageIdInvalid,
        ) => Failure::Gone(e.to_string()),
        RequestError::Api(ApiError::Unknown(text)) => classify_text(text),
        // Every named Telegram error is a refusal of this very request.
        RequestError::Api(_) | RequestError::MigrateToChatId(_) => {
            Failure::Permanent(e.to_string())
        }
        RequestError::InvalidJson { raw, .. } => {
            let ok = serde_json::from_str::<serde_json::Value>(raw)
                .is_ok_and(|v| v["ok"] == serde_json::Value::Bool(true));
            if ok {
                Failure::Unconfirmed
            } else {
                Failure::Retry(e.to_string())
            }
        }
        _ => Failure::Retry(e.to_string()),
    }
}

/// Classify an error description teloxide did not recognise.
fn classify_text(text: &str) -> Failure {
    let t = text.to_ascii_lowercase();
    if t.contains("message is not modified") {
        Failure::NotModified
    } else if t.contains("message to edit not found") || t.contains("message can't be edited") {
        Failure::Gone(text.to_string())
    } else if t.starts_with("bad request") || t.starts_with("forbidden") {
        Failure::Permanent(text.to_string())
    } else {
        Failure::Retry(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_classified() {
        let cases = [
            (
                "Bad Request: message is not modified: x",
                Failure::NotModified,
            ),
            (
                "Bad Request: message to edit not found",
                Failure::Gone("Bad Request: message to edit not found".into()),
            ),
            (
                "Bad Request: chat not found",
                Failure::Permanent("Bad Request: chat not found".into()),
            ),
            (
                "Forbidden: bot was blocked",
                Failure::Permanent("Forbidden: bot was blocked".into()),
            ),
            (
                "Internal Server Error",
                Failure::Retry("Internal Server Error".into()),
            ),
            ("Bad Gateway", Failure::Retry("Bad Gateway".into())),
        ];
        for (text, want) in cases {
            assert_eq!(classify_text(text), want, "{text}");
        }
    }

    #[test]
    fn unparsable_ok_is_unconfirmed_and_garbage_is_retried() {
        let bad = |raw: &str| RequestError::InvalidJson {
            source: std::sync::Arc::new(serde_json::from_str::<u8>("x").unwrap_err()),
            raw: raw.into(),
        };
        assert_eq!(
            classify(&bad(r#"{"ok":true,"result":null}"#)),
            Failure::Unconfirmed
        );
        assert!(matches!(
            classify(&bad("<html>502 Bad Gateway</html>")),
            Failure::Retry(_)
        ));
        assert_eq!(
            classify(&RequestError::Api(ApiError::MessageNotModified)),
            Failure::NotModified
        );
    }
}
