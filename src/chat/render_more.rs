//! Rendering of blocked rows and actions (see `render.rs` for questions).

use super::View;
use super::render::Meta;
use crate::config::Config;
use crate::store::{Result, Store};

pub(crate) async fn row_meta(_store: &Store, _id: &str) -> Result<Option<Meta>> {
    Ok(None)
}

pub(crate) async fn action_meta(_store: &Store, _id: &str) -> Result<Option<Meta>> {
    Ok(None)
}

pub(crate) async fn row_view(_store: &Store, _id: &str) -> Result<Option<View>> {
    Ok(None)
}

pub(crate) async fn action_view(_store: &Store, _config: &Config, _id: &str) -> Result<Option<View>> {
    Ok(None)
}

pub(crate) async fn title(_store: &Store, _item: &str, _id: &str) -> Option<String> {
    None
}
