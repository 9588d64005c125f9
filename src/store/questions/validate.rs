//! Limits on question input, checked before anything is written.
//!
//! Each check returns [`Error::Invalid`] with a message that names the field,
//! the limit and what to do. Pure functions: no SQL here.

use super::{NewQuestion, NewReply, QuestionOption};
use crate::store::{Error, Result};

/// Longest title, in characters.
pub const MAX_TITLE: usize = 120;
/// Longest detail, in characters.
pub const MAX_DETAIL: usize = 500;
/// Largest context, in bytes (64 KiB).
pub const MAX_CONTEXT: usize = 64 * 1024;
/// Longest option label, in characters.
pub const MAX_LABEL: usize = 64;
/// Fewest options when any are given.
pub const MIN_OPTIONS: usize = 2;
/// Most options.
pub const MAX_OPTIONS: usize = 4;
/// Largest reply text, reply context or outcome, in bytes (64 KiB).
pub const MAX_TEXT: usize = 64 * 1024;
/// Longest project, agent, session, key or replier name, in characters.
pub const MAX_NAME: usize = 200;

fn invalid(msg: String) -> Error {
    Error::Invalid(msg)
}

fn name(field: &str, v: &str) -> Result<()> {
    let n = v.chars().count();
    if n > MAX_NAME {
        return Err(invalid(format!(
            "{field} is {n} characters long; the limit is {MAX_NAME}"
        )));
    }
    if v.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{field} contains control characters (newlines, tabs…); use plain text"
        )));
    }
    Ok(())
}

fn bytes(field: &str, v: &str, max: usize) -> Result<()> {
    if v.len() > max {
        return Err(invalid(format!(
            "{field} is {} bytes; the limit is {} KiB: shorten it",
            v.len(),
            max / 1024
        )));
    }
    Ok(())
}

/// Trim and check a new question; returns the cleaned copy to store.
pub fn question(q: &NewQuestion) -> Result<NewQuestion> {
    let title = q.title.trim().to_string();
    if title.is_empty() {
        return Err(invalid(
            "the title is empty: say what you need to know".into(),
        ));
    }
    let n = title.chars().count();
    if n > MAX_TITLE {
        return Err(invalid(format!(
            "the title is {n} characters long; the limit is {MAX_TITLE}: shorten it and put the rest in --detail or --context"
        )));
    }
    if title.contains(['\n', '\r']) {
        return Err(invalid(
            "the title must be one line: put the rest in --detail or --context".into(),
        ));
    }
    let detail = q.detail.trim().to_string();
    let n = detail.chars().count();
    if n > MAX_DETAIL {
        return Err(invalid(format!(
            "the detail is {n} characters long; the limit is {MAX_DETAIL}: move the rest to --context"
        )));
    }
    bytes("the context", &q.context, MAX_CONTEXT)?;
    name("the project", &q.project)?;
    name("the agent", &q.agent)?;
    name("the session", &q.session)?;
    let key = q
        .key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    if let Some(k) = &key {
        name("the key", k)?;
    }
    Ok(NewQuestion {
        project: q.project.trim().to_string(),
        agent: q.agent.trim().to_string(),
        session: q.session.trim().to_string(),
        key,
        title,
        detail,
        context: q.context.clone(),
        options: options(&q.options)?,
    })
}

/// Check the offered choices: none, or 2–4 distinct labels of ≤ 64 chars,
/// at most one recommended.
pub fn options(opts: &[QuestionOption]) -> Result<Vec<QuestionOption>> {
    if opts.is_empty() {
        return Ok(Vec::new());
    }
    if opts.len() < MIN_OPTIONS || opts.len() > MAX_OPTIONS {
        return Err(invalid(format!(
            "{} given; offer between {MIN_OPTIONS} and {MAX_OPTIONS} (or none)",
            crate::store::plural(opts.len(), "option")
        )));
    }
    let mut out: Vec<QuestionOption> = Vec::with_capacity(opts.len());
    for (i, o) in opts.iter().enumerate() {
        let label = o.label.trim();
        if label.is_empty() {
            return Err(invalid(format!("option {} has an empty label", i + 1)));
        }
        let n = label.chars().count();
        if n > MAX_LABEL {
            return Err(invalid(format!(
                "option {} is {n} characters long; the limit is {MAX_LABEL}",
                i + 1
            )));
        }
        if label.chars().any(char::is_control) {
            return Err(invalid(format!("option {} must be one line", i + 1)));
        }
        if out
            .iter()
            .any(|p| p.label.to_lowercase() == label.to_lowercase())
        {
            return Err(invalid(format!(
                "option {label:?} is given twice: labels must differ"
            )));
        }
        out.push(QuestionOption {
            label: label.to_string(),
            recommended: o.recommended,
        });
    }
    if out.iter().filter(|o| o.recommended).count() > 1 {
        return Err(invalid("recommend at most one option".into()));
    }
    Ok(out)
}

/// Check the parts of a reply other than its (possibly blank) text.
pub fn reply(r: &NewReply) -> Result<()> {
    bytes("the reply", &r.text, MAX_TEXT)?;
    if let Some(c) = &r.context {
        bytes("the reply context", c, MAX_TEXT)?;
    }
    name("the replier name", &r.by)
}

/// Check a resolve outcome: required, ≤ 64 KiB.
pub fn outcome(o: &str) -> Result<String> {
    let o = o.trim();
    if o.is_empty() {
        return Err(invalid(
            "the outcome is empty: say what was decided or done".into(),
        ));
    }
    bytes("the outcome", o, MAX_TEXT)?;
    Ok(o.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(label: &str, recommended: bool) -> QuestionOption {
        QuestionOption {
            label: label.into(),
            recommended,
        }
    }

    fn q(title: &str) -> NewQuestion {
        NewQuestion {
            title: title.into(),
            ..Default::default()
        }
    }

    #[test]
    fn titles() {
        assert!(question(&q("ok?")).is_ok());
        assert!(question(&q(&"x".repeat(MAX_TITLE))).is_ok());
        for (bad, needle) in [
            ("", "empty"),
            ("   ", "empty"),
            (&"x".repeat(MAX_TITLE + 1)[..], "limit is 120"),
            ("two\nlines", "one line"),
        ] {
            let e = question(&q(bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
        // Characters, not bytes: 120 Cyrillic letters fit.
        assert!(question(&q(&"я".repeat(MAX_TITLE))).is_ok());
    }

    #[test]
    fn option_rules() {
        let cases: &[(&[QuestionOption], Option<&str>)] = &[
            (&[], None),
            (&[opt("a", false), opt("b", true)], None),
            (&[opt("a", false)], Some("between 2 and 4")),
            (
                &[
                    opt("a", false),
                    opt("b", false),
                    opt("c", false),
                    opt("d", false),
                    opt("e", false),
                ],
                Some("5 options"),
            ),
            (&[opt("a", true), opt("b", true)], Some("at most one")),
            (&[opt("a", false), opt("A ", false)], Some("twice")),
            (&[opt("a", false), opt(" ", false)], Some("empty label")),
        ];
        for (opts, want) in cases {
            match (options(opts), want) {
                (Ok(_), None) => {}
                (Err(e), Some(n)) => assert!(e.to_string().contains(n), "{e}"),
                (r, w) => panic!("{opts:?}: got {r:?}, want {w:?}"),
            }
        }
        let long = opt(&"l".repeat(MAX_LABEL + 1), false);
        assert!(options(&[opt("a", false), long]).is_err());
    }

    #[test]
    fn context_and_detail_limits() {
        let mut n = q("t");
        n.context = "c".repeat(MAX_CONTEXT);
        assert!(question(&n).is_ok());
        n.context.push('c');
        assert!(question(&n).unwrap_err().to_string().contains("64 KiB"));
        let mut n = q("t");
        n.detail = "d".repeat(MAX_DETAIL + 1);
        assert!(question(&n).unwrap_err().to_string().contains("500"));
        let mut n = q("t");
        n.key = Some("  ".into());
        assert_eq!(question(&n).unwrap().key, None, "a blank key is no key");
    }

    #[test]
    fn outcomes() {
        assert!(outcome(" ").is_err());
        assert_eq!(outcome(" used sqlite ").unwrap(), "used sqlite");
    }

    #[test]
    fn names_stop_at_200_characters_of_plain_text() {
        let r = |by: &str| NewReply {
            text: "ok".into(),
            by: by.into(),
            ..NewReply::default()
        };
        assert!(reply(&r(&"n".repeat(MAX_NAME))).is_ok());
        assert!(
            reply(&r(&"я".repeat(MAX_NAME))).is_ok(),
            "characters, not bytes"
        );
        let e = reply(&r(&"n".repeat(MAX_NAME + 1)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("201 characters") && e.contains("limit is 200"),
            "{e}"
        );
        let e = reply(&r("ann\tlee")).unwrap_err().to_string();
        assert!(e.contains("control characters"), "{e}");
        let mut n = q("t");
        n.project = "p".repeat(MAX_NAME + 1);
        assert!(question(&n).unwrap_err().to_string().contains("project"));
    }

    #[test]
    fn reply_text_and_context_stop_at_64_kib() {
        let mut r = NewReply {
            text: "r".repeat(MAX_TEXT),
            context: Some("c".repeat(MAX_TEXT)),
            ..NewReply::default()
        };
        assert!(reply(&r).is_ok());
        r.text.push('r');
        let e = reply(&r).unwrap_err().to_string();
        assert!(e.contains("65537 bytes") && e.contains("64 KiB"), "{e}");
        r.text.pop();
        r.context.as_mut().unwrap().push('c');
        assert!(reply(&r).unwrap_err().to_string().contains("reply context"));
        assert!(outcome(&"o".repeat(MAX_TEXT)).is_ok());
        assert!(outcome(&"o".repeat(MAX_TEXT + 1)).is_err());
    }

    #[test]
    fn every_limit_admits_its_exact_edge() {
        let four: Vec<_> = ["a", "b", "c", "d"].iter().map(|l| opt(l, false)).collect();
        assert_eq!(
            options(&four).unwrap().len(),
            4,
            "4 options, none recommended"
        );
        let longest = opt(&"l".repeat(MAX_LABEL), false);
        assert!(options(&[opt("a", false), longest]).is_ok());
        let mut n = q("t");
        n.detail = "d".repeat(MAX_DETAIL);
        assert!(question(&n).is_ok());
    }
}
