//! The parts of the store not ported to PostgreSQL yet, and how a call to
//! one of them on a PostgreSQL store is refused: [`Error::Unsupported`]
//! naming the part, never a panic and never a silent wrong answer.

use std::panic::Location;

use crate::store::Error;

/// The parts of the store not ported to PostgreSQL yet, by the file (under
/// `src/store/`, its first component) their methods live in, with what a
/// refusal calls them. A method reaching SQLite on a PostgreSQL store is
/// refused as [`Error::Unsupported`] naming its part; a file missing here
/// is named by its own name. Empty since the benchmarks' seeding was
/// ported: kept so that a method added to SQLite alone is still refused by
/// its part's name, not with a panic.
pub const NOT_ON_POSTGRES_YET: &[(&str, &str)] = &[];

/// [`Error::Unsupported`] for a call made at `at` on a PostgreSQL store.
/// Why the caller's file: every method not ported yet says which part of
/// the store it is, without a guard written into each of them (the
/// chokepoints `Store::pool`, `Store::write` and `Store::begin_write`
/// are `#[track_caller]`).
pub(crate) fn unsupported(at: &Location<'_>) -> Error {
    Error::Unsupported {
        what: part_of(at.file()),
    }
}

/// The words for the part of the store `file` (a source path) belongs to.
fn part_of(file: &str) -> String {
    let file = file.replace('\\', "/");
    let part = file
        .rsplit_once("store/")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split('/').next())
        .map(|first| first.trim_end_matches(".rs"));
    match part {
        Some(part) => match NOT_ON_POSTGRES_YET.iter().find(|(p, _)| *p == part) {
            Some((_, words)) => (*words).to_string(),
            None => format!("the store's {part} operations are"),
        },
        None => "this operation is".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::part_of;

    #[test]
    fn a_part_is_named_by_the_file_its_caller_lives_in() {
        for (file, words) in [
            // Ported: no longer listed, so named by its file.
            (
                "src/store/actions/transitions.rs",
                "the store's actions operations are",
            ),
            ("src/store/seed.rs", "the store's seed operations are"),
            ("src\\store\\tokens.rs", "the store's tokens operations are"),
            ("src/store/widgets.rs", "the store's widgets operations are"),
            ("src/store.rs", "this operation is"),
            ("src/daemon.rs", "this operation is"),
        ] {
            assert_eq!(part_of(file), words, "{file}");
        }
    }
}
