//! questions (placeholder until the module lands).
