//! actions (placeholder until the module lands).
