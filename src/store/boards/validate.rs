//! Input checks of the boards store: lengths, names, options, stored enums.

use super::{MAX_OPTIONS, MAX_TEXT, MAX_TITLE, RowOption};
use crate::store::{Error, Result};

pub(super) fn check_len(what: &str, s: &str, max: usize) -> Result<()> {
    let n = s.chars().count();
    if n > max {
        return Err(Error::Invalid(format!(
            "{what} is {n} characters long; the limit is {max}"
        )));
    }
    Ok(())
}

pub(super) fn check_name(what: &str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(Error::Invalid(format!("{what} must not be empty")));
    }
    check_len(what, s, MAX_TITLE)
}

pub(super) fn check_options(options: &[RowOption]) -> Result<()> {
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid(format!(
            "{} given; a row offers at most {MAX_OPTIONS}",
            crate::store::plural(options.len(), "option")
        )));
    }
    for o in options {
        check_name("an option label", &o.label)?;
        check_len("an option detail", &o.detail, MAX_TEXT)?;
    }
    Ok(())
}

pub(super) fn parse_opt<T>(s: Option<String>) -> Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    s.map(|s| s.parse().map_err(|e: T::Err| Error::Corrupt(e.to_string())))
        .transpose()
}
