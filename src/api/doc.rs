//! What the OpenAPI document says about a route, read from the handler's
//! own signature: its extractors name the request body ([`Body<T>`]) and
//! query ([`Params<T>`]), its return type names the success statuses and
//! body. The route table hands each handler to [`describe`], so the
//! document cannot drift from what the handlers take and give: a handler
//! that takes or returns something this module cannot describe does not
//! compile.

use std::marker::PhantomData;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use super::error::ApiError;
use super::input::{Body, Ctx, Params};
use super::page::Paged;
use crate::shared::Shared;

/// One success answer of a route.
pub(crate) struct Answer {
    /// The success status it is answered with (200, or 201 for a created item).
    pub status: u16,
    /// `application/json`, `text/plain; version=0.0.4` or `text/event-stream`.
    pub media: &'static str,
    /// The body's schema (JSON answers only).
    pub schema: Option<Schema>,
    /// A page of a list: `X-Next-Cursor` may follow.
    pub paged: bool,
}

/// A route's request and success answers, as its handler declares them.
#[derive(Default)]
pub(crate) struct Described {
    /// The JSON body's schema (inlined).
    pub body: Option<Schema>,
    /// The query string's schema (an object; each property is a parameter).
    pub query: Option<Schema>,
    /// Success answers.
    pub answers: Vec<Answer>,
}

/// The two schema generators: requests inline everything (parameters need
/// plain schemas); answers refer to named components.
pub(crate) struct Gens {
    pub request: SchemaGenerator,
    pub answer: SchemaGenerator,
}

impl Gens {
    pub(crate) fn new() -> Self {
        use schemars::generate::{Contract, SchemaSettings};
        Gens {
            request: SchemaSettings::openapi3()
                .with(|s| s.inline_subschemas = true)
                .into_generator(),
            answer: SchemaSettings::openapi3()
                .with(|s| s.contract = Contract::Serialize)
                .into_generator(),
        }
    }

    /// `T`'s request schema, inlined, with the generator's transforms
    /// (OpenAPI 3.0's `nullable`, …) applied.
    fn request_schema<T: JsonSchema>(&mut self) -> Schema {
        let mut s = self.request.root_schema_for::<T>();
        if let Some(o) = s.as_object_mut() {
            o.remove("$schema");
            o.remove("title");
        }
        s
    }

    /// `T`'s answer schema: a `$ref` to a component, or an inline schema
    /// with the transforms applied.
    pub(crate) fn answer_schema<T: JsonSchema>(&mut self) -> Schema {
        let mut s = self.answer.subschema_for::<T>();
        for t in self.answer.transforms_mut() {
            t.transform(&mut s);
        }
        s
    }
}

/// Something a handler takes: describes its part of the request.
pub(crate) trait Arg {
    fn describe(_d: &mut Described, _g: &mut Gens) {}
}

impl Arg for State<Shared> {}
impl Arg for Ctx {}
impl Arg for HeaderMap {}
impl Arg for Option<Extension<crate::api::OwnerSocket>> {}
impl Arg for Path<String> {}
impl Arg for Path<(String, String)> {}
impl Arg for axum::body::Bytes {}

impl<T: JsonSchema> Arg for Body<T> {
    fn describe(d: &mut Described, g: &mut Gens) {
        d.body = Some(g.request_schema::<T>());
    }
}

impl<T: JsonSchema> Arg for Params<T> {
    fn describe(d: &mut Described, g: &mut Gens) {
        d.query = Some(g.request_schema::<T>());
    }
}

/// Something a handler returns: describes its success answers.
pub(crate) trait Reply {
    fn describe(d: &mut Described, g: &mut Gens);
}

pub(crate) fn json_answer(status: u16, schema: Schema, paged: bool) -> Answer {
    Answer {
        status,
        media: "application/json",
        schema: Some(schema),
        paged,
    }
}

impl<T: JsonSchema> Reply for axum::Json<T> {
    fn describe(d: &mut Described, g: &mut Gens) {
        let s = g.answer_schema::<T>();
        d.answers.push(json_answer(200, s, false));
    }
}

impl<T: JsonSchema> Reply for Paged<T> {
    fn describe(d: &mut Described, g: &mut Gens) {
        let s = g.answer_schema::<Vec<T>>();
        d.answers.push(json_answer(200, s, true));
    }
}

impl<T: Reply> Reply for Result<T, ApiError> {
    fn describe(d: &mut Described, g: &mut Gens) {
        T::describe(d, g)
    }
}

/// A JSON body built as a value (e.g. with secrets masked for the caller)
/// that has the shape of `T`: the document describes `T`.
pub(crate) struct Shaped<T>(pub Value, PhantomData<T>);

impl<T> Shaped<T> {
    pub(crate) fn new(v: Value) -> Self {
        Shaped(v, PhantomData)
    }
}

impl<T> IntoResponse for Shaped<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

impl<T: JsonSchema> Reply for Shaped<T> {
    fn describe(d: &mut Described, g: &mut Gens) {
        let s = g.answer_schema::<T>();
        d.answers.push(json_answer(200, s, false));
    }
}

/// A write that creates or finds its item: `201 Created` when `created`,
/// else `200` with the item found.
pub(crate) struct Created<R> {
    pub created: bool,
    pub reply: R,
}

impl<R: IntoResponse> IntoResponse for Created<R> {
    fn into_response(self) -> Response {
        let status = if self.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        (status, self.reply).into_response()
    }
}

impl<R: Reply> Reply for Created<R> {
    fn describe(d: &mut Described, g: &mut Gens) {
        R::describe(d, g);
        if let Some(first) = d.answers.first() {
            let again = Answer {
                status: 201,
                media: first.media,
                schema: first.schema.clone(),
                paged: first.paged,
            };
            d.answers.insert(0, again);
        }
    }
}

/// Prometheus text exposition.
pub(crate) struct Exposition(pub String);

impl IntoResponse for Exposition {
    fn into_response(self) -> Response {
        (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            self.0,
        )
            .into_response()
    }
}

impl Reply for Exposition {
    fn describe(d: &mut Described, _g: &mut Gens) {
        d.answers.push(Answer {
            status: 200,
            media: "text/plain",
            schema: Some(Schema::from(serde_json::Map::from_iter([(
                "type".to_string(),
                Value::from("string"),
            )]))),
            paged: false,
        });
    }
}

/// A handler whose signature can be described: implemented for every
/// async fn whose arguments are [`Arg`]s and whose output is a [`Reply`].
pub(crate) trait Documented<M> {
    fn describe(d: &mut Described, g: &mut Gens);
}

macro_rules! documented {
    ($($a:ident),*) => {
        impl<F, Fut, R, $($a),*> Documented<($($a,)*)> for F
        where
            F: Fn($($a),*) -> Fut,
            Fut: std::future::Future<Output = R>,
            R: Reply,
            $($a: Arg),*
        {
            fn describe(d: &mut Described, g: &mut Gens) {
                $(<$a as Arg>::describe(d, g);)*
                R::describe(d, g);
            }
        }
    };
}

documented!();
documented!(A1);
documented!(A1, A2);
documented!(A1, A2, A3);
documented!(A1, A2, A3, A4);
documented!(A1, A2, A3, A4, A5);

/// Describe the handler `h`.
pub(crate) fn describe<M, H: Documented<M>>(_h: &H, g: &mut Gens) -> Described {
    let mut d = Described::default();
    H::describe(&mut d, g);
    d
}
