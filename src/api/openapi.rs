//! The OpenAPI 3.0 document, built from the route table
//! ([`super::ROUTES`]) so every route is documented and nothing documented
//! is missing. Request and response bodies are described loosely (JSON
//! objects); errors share one schema.

use serde_json::{Map, Value, json};

use super::ROUTES;
use super::auth::Access;

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

/// The whole document.
pub(crate) fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for r in ROUTES {
        let parameters: Vec<Value> = path_params(r.path)
            .into_iter()
            .map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut op = json!({
            "operationId": operation_id(r.method, r.path),
            "summary": r.summary,
            "x-handoff-access": r.access.as_str(),
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                "4XX": {"description": "Refused: see `reason`", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            },
        });
        if !parameters.is_empty() {
            op["parameters"] = Value::Array(parameters);
        }
        if r.access == Access::Public {
            op["security"] = json!([]);
        }
        if matches!(r.method, "POST" | "PUT") {
            op["requestBody"] = json!({
                "required": true,
                "content": {"application/json": {"schema": {"type": "object"}}},
            });
        }
        if let Value::Object(ops) = paths.entry(r.path.to_string()).or_insert_with(|| json!({})) {
            ops.insert(r.method.to_ascii_lowercase(), op);
        }
    }
    // Inbound wakes are outside the token table: each source authenticates
    // with its own secret (bearer, Standard Webhooks or GitHub signature).
    paths.insert(
        super::wake::PATH.to_string(),
        json!({"post": {
            "operationId": operation_id("POST", super::wake::PATH),
            "summary": "Wake a session from outside (CI, GitHub): authenticated per [[wake.sources]] by a bearer secret, a Standard Webhooks signature or X-Hub-Signature-256; deduplicated by delivery id",
            "x-handoff-access": "wake-source",
            "security": [],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {
                "202": {"description": "Recorded"},
                "200": {"description": "Duplicate delivery"},
                "4XX": {"description": "Refused: see `reason`", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            },
        }}),
    );
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "handoff",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Hand agents' questions, blocked steps and risky actions to humans. \
                Every /v1 route needs `Authorization: Bearer hnd_…` (see `handoff token create`) \
                unless the daemon runs with [http] open = true on loopback. \
                `x-handoff-access` says which token roles may call a route: \
                read = any, agent = agent or admin, human = human or admin.",
        },
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {
                "type": "object",
                "required": ["reason", "message"],
                "properties": {
                    "reason": {"type": "string", "description": "machine-readable, e.g. unread_answer, stale, not_open, dedup_conflict, invalid, unauthorized, wrong_role, wrong_project, not_found"},
                    "message": {"type": "string", "description": "what went wrong and what to do"},
                    "detail": {"type": "object", "description": "the refusal's data"},
                },
            }},
        },
        "paths": paths,
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
