//! Exit codes, one rule for every command, documented in `--help` and
//! docs/commands.md. With `--json`, any exit but 0 prints `{"error": {…}}` on stdout.

/// Success: the command did what it was asked.
pub const OK: u8 = 0;
/// An internal failure, or a database or daemon that cannot be reached.
pub const INTERNAL: u8 = 1;
/// Bad input: a usage error (unknown flag, missing argument) or a bad
/// value (malformed JSON, too many options, a bad duration, a missing
/// named database, a command run in the wrong mode).
pub const INVALID: u8 = 2;
/// Refused: the store changed nothing (already answered or decided,
/// stale revision, not open, expired, dedup conflict, lost a race),
/// or the daemon refused the caller (token, role, project).
pub const REFUSED: u8 = 3;
/// No such question, board, row, action, session, token or pairing.
pub const NOT_FOUND: u8 = 4;
/// `--wait` or `wait` timed out before anything arrived.
pub const TIMEOUT: u8 = 5;

/// The `reason` of an error object when nothing more precise is known.
pub(crate) fn reason(code: u8) -> &'static str {
    match code {
        INVALID => "invalid",
        REFUSED => "refused",
        NOT_FOUND => "not_found",
        TIMEOUT => "timed_out",
        _ => "internal",
    }
}
