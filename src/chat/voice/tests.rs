//! Unit tests of the transcript buttons' callback data.

use super::note::{Tap, data, tap_of};

const ID: &str = "019ac5f0a1b27c3d8e9f00112233aabb";

#[test]
fn transcript_buttons_round_trip_and_foreign_data_is_refused() {
    for tap in [Tap::Send, Tap::Edit, Tap::Discard] {
        let d = data(tap, ID);
        assert!(d.len() <= crate::chat::callback::MAX_LEN);
        assert_eq!(tap_of(&d), Some((tap, ID)));
    }
    for bad in [
        "",
        "v|s|short",
        "v|x|019ac5f0a1b27c3d8e9f00112233aabb",
        "q|s|019ac5f0a1b27c3d8e9f00112233aabb",
        "v|s|019ac5f0a1b27c3d8e9f00112233aabb|",
    ] {
        assert_eq!(tap_of(bad), None, "{bad}");
    }
}
