//! The OpenAPI 3.0 document, built from the route table
//! ([`super::ROUTES`]) so every route is documented and nothing documented
//! is missing. Each route's query parameters, request body and success
//! answers come from its handler's own types ([`super::doc`]); errors
//! share one schema. Every string a request carries states the API's text
//! rule ([`super::input::text`]) as its pattern.

use schemars::Schema;
use serde_json::{Map, Value, json};

use super::auth::Access;
use super::doc::{Answer, Gens};
use super::input::text::{self, Place};
use super::page::NEXT_HEADER;
use super::{ROUTES, Route};

/// `GET /v1/openapi.json`.
pub(crate) async fn serve() -> axum::Json<Value> {
    axum::Json(document())
}

/// The `{name}` segments of an axum path.
fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    for seg in path.split('/').filter(|s| !s.is_empty() && *s != "v1") {
        let seg = seg.trim_start_matches('{').trim_end_matches('}');
        id.push('_');
        id.extend(
            seg.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    id
}

/// The OpenAPI description of one success answer.
fn answer(a: &Answer) -> Value {
    let mut content = json!({});
    content[a.media] = match &a.schema {
        Some(schema) => json!({"schema": schema}),
        None => json!({"schema": {"type": "string"}}),
    };
    let mut out = json!({"description": "OK", "content": content});
    if a.paged {
        out["description"] = json!("One page; follow `X-Next-Cursor` for the next");
        out["headers"] = json!({NEXT_HEADER: {
            "description": "The cursor of the next page (`after=`); absent on the last page",
            "schema": {"type": "string"},
        }});
    }
    out
}

/// The query parameters a query object's schema describes.
fn query_parameters(query: &Schema) -> Vec<Value> {
    let required: Vec<&str> = query
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = query.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, schema)| {
            let mut schema = schema.clone();
            // A query string has no null: an absent parameter is the null.
            if let Value::Object(o) = &mut schema {
                o.remove("nullable");
            }
            let mut p = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": schema,
            });
            if let Some(d) = p["schema"].get("description").cloned() {
                p["description"] = d;
            }
            p
        })
        .collect()
}

/// The refusal every route may answer.
fn refusals() -> Value {
    let error = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    let mut client = error.clone();
    client["description"] = json!("Refused: see `reason` and `message`");
    let mut server = error;
    server["description"] =
        json!("The daemon cannot serve it now (e.g. its database is unavailable)");
    json!({"4XX": client, "5XX": server})
}

/// The whole document.
pub(crate) fn document() -> Value {
    let mut gens = Gens::new();
    let mut paths: Map<String, Value> = Map::new();
    for r in ROUTES {
        let op = operation(r, &mut gens);
        if let Value::Object(ops) = paths.entry(r.path.to_string()).or_insert_with(|| json!({})) {
            ops.insert(r.method.to_ascii_lowercase(), op);
        }
    }
    paths.insert(super::wake::PATH.to_string(), wake_path(&mut gens));
    let mut schemas = gens.answer.take_definitions(true);
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "handoff",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Hand agents' questions, blocked steps and risky actions to humans. \
                Every /v1 route needs `Authorization: Bearer hnd_…` (see `handoff token create`) \
                unless the daemon runs with [http] open = true on loopback. \
                `x-handoff-access` says which token roles may call a route: \
                read = any, agent = agent or admin, human = human or admin. \
                Lists answer a JSON array, one page at a time (`limit`, `after`, `X-Next-Cursor`).",
        },
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas,
        },
        "paths": paths,
    })
}

/// The operation of one route of the table: its parameters (path, then
/// query), body, answers and who may call it.
fn operation(r: &Route, gens: &mut Gens) -> Value {
    let d = (r.describe)(gens);
    let mut parameters: Vec<Value> = path_params(r.path)
        .into_iter()
        .map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "pattern": text::LINE_NOT_BLANK}}))
        .collect();
    if let Some(q) = &d.query {
        for mut p in query_parameters(q) {
            text_rule(&mut p["schema"], Place::Line);
            parameters.push(p);
        }
    }
    let mut responses = refusals();
    for a in &d.answers {
        responses[a.status.to_string()] = answer(a);
    }
    let mut op = json!({
        "operationId": operation_id(r.method, r.path),
        "summary": r.summary,
        "x-handoff-access": r.access.as_str(),
        "responses": responses,
    });
    if !parameters.is_empty() {
        op["parameters"] = Value::Array(parameters);
    }
    if r.access == Access::Public {
        op["security"] = json!([]);
    }
    if let Some(body) = d.body {
        let mut body = body.to_value();
        text_rule(&mut body, Place::Body);
        op["requestBody"] = json!({
            "required": true,
            "content": {"application/json": {"schema": body}},
        });
    }
    op
}

/// State the text rule in a request schema: a string with no pattern of
/// its own gets the rule's, and one that must not be blank (`\S`) the
/// rule's non-blank pattern. Other patterns (names, durations) refuse
/// what the rule refuses already; enumerations need nothing.
fn text_rule(schema: &mut Value, place: Place) {
    match schema {
        Value::Object(o) => {
            let string = match o.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            if string && !o.contains_key("enum") && !o.contains_key("format") {
                let (any, not_blank) = match place {
                    Place::Body => (text::BODY_TEXT, text::BODY_TEXT_NOT_BLANK),
                    Place::Line => (text::LINE_TEXT, text::LINE_NOT_BLANK),
                };
                match o.get("pattern").and_then(Value::as_str) {
                    None => {
                        o.insert("pattern".into(), json!(any));
                    }
                    Some(r"\S") => {
                        o.insert("pattern".into(), json!(not_blank));
                    }
                    Some(_) => {}
                }
            }
            for v in o.values_mut() {
                text_rule(v, place);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| text_rule(v, place)),
        _ => {}
    }
}

/// The inbound wake route, outside the token table: each source
/// authenticates with its own secret (bearer, Standard Webhooks or GitHub
/// signature).
fn wake_path(gens: &mut Gens) -> Value {
    let woke = gens.answer_schema::<super::wake::Woke>();
    json!({"post": {
        "operationId": operation_id("POST", super::wake::PATH),
        "summary": "Wake a session from outside (CI, GitHub): authenticated per [[wake.sources]] by a bearer secret, a Standard Webhooks signature or X-Hub-Signature-256; deduplicated by delivery id",
        "x-handoff-access": "wake-source",
        "security": [],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": text::LINE_TEXT}}],
        "requestBody": {
            "required": false,
            "description": "Any payload (JSON or text), stored with the wake event",
            "content": {"application/json": {"schema": {}}},
        },
        "responses": {
            "202": {"description": "Recorded", "content": {"application/json": {"schema": woke.clone()}}},
            "200": {"description": "A delivery already recorded: nothing new", "content": {"application/json": {"schema": woke}}},
            "4XX": refusals()["4XX"],
            "5XX": refusals()["5XX"],
        },
    }})
}

/// The error body every refusal carries.
fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["reason", "message"],
        "properties": {
            "reason": {"type": "string", "description": "machine-readable, e.g. unread_answer, stale, not_open, dedup_conflict, invalid, unauthorized, wrong_role, wrong_project, not_found"},
            "message": {"type": "string", "description": "what went wrong and what to do"},
            "detail": {"description": "the refusal's data (e.g. the item as it is now)"},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_params_and_operation_ids() {
        assert_eq!(
            path_params("/v1/boards/{board}/rows/{label}/annotate"),
            ["board", "label"]
        );
        assert_eq!(
            operation_id("POST", "/v1/actions/{id}/resolve-unknown"),
            "post_actions_id_resolve_unknown"
        );
    }
}
