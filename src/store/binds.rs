//! What lets one function bind a statement for both engines: where a
//! statement numbers its values the same on SQLite and PostgreSQL, one
//! binder, generic over the database, binds it for either. Nothing here
//! holds SQL or runs it.

/// A query of database `DB` being bound.
pub(crate) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>;

/// A function generic over the database `DB`, with the bounds every shared
/// binder needs: text, optional text, integers, optional integers and
/// booleans encode on `DB` (both engines' do). Why a macro: a trait
/// cannot carry these bounds for its users (only supertraits are implied),
/// and spelled out on every binder they were the longest part of each.
macro_rules! binder {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident<$q:lifetime, DB>($($args:tt)*) -> $ret:ty $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name<$q, DB>($($args)*) -> $ret
        where
            DB: sqlx::Database,
            for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
            for<'t> Option<&'t str>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
            for<'t> String: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
            for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
            for<'t> Option<i64>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
            for<'t> bool: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        $body
    };
}
pub(crate) use binder;
