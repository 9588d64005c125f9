//! The event types other parts name: which ones wake a session.

/// Action events that tell the proposing session its action was decided or
/// finished.
pub const DECISION_EVENTS: [&str; 6] = [
    "action.approved",
    "action.rejected",
    "action.expired",
    "action.executed",
    "action.failed",
    "action.unknown",
];

/// The event types that wake a session (a wake rule may name only these;
/// `notify` delivers them): the question and row events, the
/// [`DECISION_EVENTS`], and `session.wake`.
pub const WAKE_EVENTS: &[&str] = &wake_events();

const fn wake_events() -> [&'static str; 11] {
    let mut all = [
        "question.answered",
        "question.dismissed",
        "row.annotated",
        "row.handled",
        "",
        "",
        "",
        "",
        "",
        "",
        "session.wake",
    ];
    let mut i = 0;
    while i < DECISION_EVENTS.len() {
        all[4 + i] = DECISION_EVENTS[i];
        i += 1;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::{DECISION_EVENTS, WAKE_EVENTS};

    #[test]
    fn wake_events_are_the_listed_types_each_once() {
        assert!(WAKE_EVENTS.iter().all(|e| !e.is_empty()));
        assert!(DECISION_EVENTS.iter().all(|e| WAKE_EVENTS.contains(e)));
        let mut seen = WAKE_EVENTS.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), WAKE_EVENTS.len());
        assert_eq!(WAKE_EVENTS.first(), Some(&"question.answered"));
        assert_eq!(WAKE_EVENTS.last(), Some(&"session.wake"));
    }
}
