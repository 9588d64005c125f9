//! The primitive operations: each mirrors a store function (same inputs,
//! same result types, typed refusals as values), so a caller cannot tell
//! which backend ran it. Ids may be full or short wherever the store
//! accepts both.
//!
//! A primitive is a value: a tuple struct of its arguments that names its
//! result ([`Primitive`]); a backend runs the primitives it implements
//! ([`Run`]): [`Local`](super::Local) (the store) and
//! [`Remote`](super::Remote) (the daemon's `/v1` API) each once per
//! primitive, in their area files; [`Daemon`](super::Daemon) once for
//! all of them (the local daemon's socket, the file as the fallback).
//! [`Ops`] has one method per primitive, documented here by area
//! (`questions`, `boards`, `actions`, `sessions`), that runs it on the
//! backend chosen at start.
//!
//! Errors are [`Error`](super::Error): `NotFound` for a missing item where
//! the store has no typed refusal for it, `Invalid` for bad input, `Denied`
//! for a token the daemon refused, `Busy`, `Internal` (which includes
//! "cannot reach the daemon").

/// Declares primitives: `method: Name<'a>(argument types…) -> Result;`
/// is the tuple struct `Name` of [`Ops::method`]'s arguments, in order,
/// and its [`Primitive`] impl.
macro_rules! primitives {
    ($($method:ident: $name:ident $(<$l:lifetime>)? ($($arg:ty),* $(,)?) -> $out:ty;)*) => {
        $(
            #[doc = concat!("The arguments of [`Ops::", stringify!($method), "`], in order.")]
            #[derive(Clone, Copy)]
            pub(crate) struct $name $(<$l>)? ($(pub(crate) $arg),*);

            impl $(<$l>)? $crate::ops::backend::Primitive for $name $(<$l>)? {
                type Out = $out;
            }
        )*
    };
}

pub(super) mod actions;
pub(super) mod boards;
pub(super) mod questions;
pub(super) mod sessions;

use std::future::Future;
use std::pin::Pin;

use super::{Daemon, Local, Ops, Remote, Result};
use crate::store::actions::Status;
use crate::store::questions::Question;

/// How a wait for a reply to one question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Awaited {
    /// A reply not delivered before arrived and was picked up (it is in
    /// `question.reply`), or the agent's own newer answer stands.
    Reply(Question),
    /// The question was resolved or dismissed meanwhile.
    Closed(Question),
    /// Nothing arrived in time; the question as last read.
    TimedOut(Question),
}

/// What a wait on an action waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// No longer pending (approved, rejected, expired).
    Decided,
    /// Final, or `unknown` (executed, failed, rejected, expired, unknown).
    Settled,
}

impl Until {
    /// Whether `s` ends the wait.
    pub fn holds(self, s: Status) -> bool {
        match self {
            Until::Decided => s != Status::Pending,
            Until::Settled => s.is_settled() || s == Status::Unknown,
        }
    }

    /// The API's `wait=` value.
    pub(super) fn as_query(self) -> &'static str {
        match self {
            Until::Decided => "approved",
            Until::Settled => "settled",
        }
    }
}

/// A primitive call as [`Ops`] returns it: boxed, so that each method
/// has one return type whichever backend runs it.
pub type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// One primitive's arguments; `Out` is what it returns.
pub(crate) trait Primitive: Copy + Send + Sync {
    /// The primitive's result.
    type Out: Send;
}

/// A backend that runs primitive `P`.
pub(crate) trait Run<P: Primitive>: Sync {
    /// Run `p` on this backend.
    fn run(&self, p: P) -> impl Future<Output = Result<P::Out>> + Send;
}

impl Ops {
    /// Run `p` on the backend this `Ops` was opened on.
    fn run<'a, P>(&'a self, p: P) -> Call<'a, P::Out>
    where
        P: Primitive + 'a,
        Local: Run<P>,
        Remote: Run<P>,
        Daemon: Run<P>,
    {
        match self {
            Ops::Local(l) => Box::pin(l.run(p)),
            Ops::Remote(r) => Box::pin(r.run(p)),
            Ops::Daemon(d) => Box::pin(d.run(p)),
        }
    }
}
