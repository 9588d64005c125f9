//! Pages of list routes: `limit` (default [`DEFAULT_LIMIT`], at most
//! [`MAX_LIMIT`]) and `after` (the cursor of the previous page). A page is
//! the JSON array of its items; while more remain, the `X-Next-Cursor`
//! header carries the cursor for the next one (absent on the last page).
//! A cursor is the key of the last item sent (an id or a sequence number),
//! so items added meanwhile never shift a page. This module slices; it
//! does not read the store.

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, ApiResult};

/// Items per page when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u32 = 100;
/// The largest page a caller may ask for.
pub(crate) const MAX_LIMIT: u32 = 500;
/// The response header naming the next page's cursor.
pub(crate) const NEXT_HEADER: &str = "x-next-cursor";

/// A list route's query: its own fields (filters), then the page's
/// `limit` and `after`, in one strict struct that implements [`Paging`].
/// Why one struct and not `#[serde(flatten)]` of a shared page: flatten
/// loses `deny_unknown_fields` and reads `limit=5` from a query string as
/// text, not a number.
macro_rules! list_query {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $name {
            $($(#[$fm])* $f: $t,)*
            #[schemars(range(min = 1, max = 500))]
            limit: Option<i64>,
            after: Option<String>,
        }

        impl $crate::api::page::Paging for $name {
            fn limit(&self) -> Option<i64> {
                self.limit
            }
            fn after(&self) -> Option<&str> {
                self.after.as_deref()
            }
        }
    };
}
pub(crate) use list_query;

list_query! {
    /// The query of a list route that takes nothing but a page.
    PageQuery {}
}

/// A list query's page: `limit` and `after` as the caller gave them.
pub(crate) trait Paging {
    fn limit(&self) -> Option<i64>;
    fn after(&self) -> Option<&str>;

    /// The page of `items` (already in list order, each known by `key`)
    /// that this query asks for.
    fn page<T>(&self, items: Vec<T>, key: impl Fn(&T) -> String) -> ApiResult<Paged<T>> {
        page(items, key, self.after(), self.limit())
    }
}

/// One page of a list, answered as a JSON array plus the next cursor.
pub(crate) struct Paged<T>(pub Vec<T>, pub Option<String>);

impl<T> Paged<T> {
    /// The same page (same cursor) with each item as `show` shows it.
    pub(crate) fn map<U>(self, show: impl FnMut(&T) -> U) -> Paged<U> {
        Paged(self.0.iter().map(show).collect(), self.1)
    }
}

impl<T: Serialize> IntoResponse for Paged<T> {
    fn into_response(self) -> Response {
        let mut resp = axum::Json(self.0).into_response();
        if let Some(next) = self.1
            && let Ok(v) = HeaderValue::from_str(&next)
        {
            resp.headers_mut().insert(NEXT_HEADER, v);
        }
        resp
    }
}

/// Check `limit`: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent.
pub(crate) fn limit(limit: Option<i64>) -> ApiResult<usize> {
    match limit {
        None => Ok(DEFAULT_LIMIT as usize),
        Some(n) if (1..=i64::from(MAX_LIMIT)).contains(&n) => Ok(n as usize),
        Some(n) => Err(ApiError::invalid(format!(
            "limit {n}: give 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}), and follow `{NEXT_HEADER}` for more"
        ))),
    }
}

/// The page of `items` (already in list order) that starts after the item
/// whose key is `after`, at most `limit` long.
pub(crate) fn page<T>(
    items: Vec<T>,
    key: impl Fn(&T) -> String,
    after: Option<&str>,
    limit: Option<i64>,
) -> ApiResult<Paged<T>> {
    let limit = self::limit(limit)?;
    let start = match after.filter(|a| !a.is_empty()) {
        None => 0,
        Some(a) => match items.iter().position(|i| key(i) == a) {
            Some(at) => at + 1,
            None => {
                // Whether a cursor is in the list depends on what is stored
                // now (its item may have gone): a conflict, like a stale revision.
                return Err(ApiError::conflict(
                    "cursor_gone",
                    format!(
                        "cursor `{a}` is not in this list (any more): start again without `after`"
                    ),
                ));
            }
        },
    };
    let mut rest: Vec<T> = items.into_iter().skip(start).collect();
    let next = if rest.len() > limit {
        rest.truncate(limit);
        rest.last().map(&key)
    } else {
        None
    };
    Ok(Paged(rest, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(p: &Paged<u32>) -> (Vec<u32>, Option<String>) {
        (p.0.clone(), p.1.clone())
    }

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let all: Vec<u32> = (1..=5).collect();
        let k = |n: &u32| n.to_string();
        let first = page(all.clone(), k, None, Some(2)).ok().unwrap();
        assert_eq!(keys(&first), (vec![1, 2], Some("2".into())));
        let second = page(all.clone(), k, Some("2"), Some(2)).ok().unwrap();
        assert_eq!(keys(&second), (vec![3, 4], Some("4".into())));
        let last = page(all.clone(), k, Some("4"), Some(2)).ok().unwrap();
        assert_eq!(keys(&last), (vec![5], None));
        let exact = page(all.clone(), k, None, Some(5)).ok().unwrap();
        assert_eq!(keys(&exact), (all.clone(), None));
        assert!(page(all.clone(), k, Some("9"), None).is_err());
        for bad in [0, -1, i64::from(MAX_LIMIT) + 1] {
            assert!(page(all.clone(), k, None, Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(limit(None).ok(), Some(DEFAULT_LIMIT as usize));
    }
}
