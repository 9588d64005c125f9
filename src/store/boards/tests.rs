use super::*;

#[test]
fn progress_counts_done_partial_and_skips_na() {
    let p = |counted, score| Progress {
        rows: counted,
        counted,
        score,
        blocked: 0,
        percent: None,
    };
    assert!(p(2, 2.0).complete());
    assert!(!p(2, 1.5).complete());
    assert!(!p(0, 0.0).complete(), "all-na or empty never completes");
}

#[test]
fn enums_round_trip_their_spelling() {
    for s in ["tracked", "partial", "missing", "na", "done", "blocked"] {
        assert_eq!(s.parse::<RowStatus>().unwrap().as_str(), s);
    }
    for s in ["", "decision", "task", "approval"] {
        assert_eq!(s.parse::<RowOwner>().unwrap().as_str(), s);
    }
    for s in ["answer", "clarify", "decline"] {
        assert_eq!(s.parse::<AnnotationKind>().unwrap().as_str(), s);
    }
    assert_eq!("none".parse::<RowOwner>().unwrap(), RowOwner::None);
    let refused = |r: Result<RowStatus>| r.unwrap_err().to_string();
    assert!(refused("later".parse()).contains(
        "`later` is not a row status: use tracked, partial, missing, na, done or blocked"
    ));
    let e = "boss".parse::<RowOwner>().unwrap_err().to_string();
    assert!(e.contains("`boss` is not a row owner: use decision, task or approval"));
    let e = "maybe".parse::<AnnotationKind>().unwrap_err().to_string();
    assert!(e.contains("`maybe` is not an annotation kind: use answer, clarify or decline"));
    assert_eq!(
        serde_json::to_string(&RowOwner::None).unwrap(),
        "\"\"",
        "no owner is the empty string"
    );
}

#[test]
fn stale_message_names_every_row() {
    let r = Refusal::Stale {
        board_version: 4,
        rows: vec![
            StaleRow {
                label: "a".into(),
                revision: Some(2),
            },
            StaleRow {
                label: "b".into(),
                revision: None,
            },
        ],
    };
    let m = r.to_string();
    assert!(m.contains("version 4") && m.contains("`a` at revision 2"));
    assert!(m.contains("`b` does not exist") && m.contains("handoff board get"));
}
