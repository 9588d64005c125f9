//! boards (placeholder until the module lands).
