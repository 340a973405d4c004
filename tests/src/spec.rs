//! The HTTP contract, checked on every answer the end-to-end tests receive: a JSON body that
//! `Client::send` gets must be one `openapi.yaml` documents for that route and status, and must
//! match its schema. So the spec cannot drift from what the server really returns.
//!
//! The validator covers the JSON Schema keywords the spec uses: `$ref`, `type` (also as a list),
//! `properties`, `required`, `additionalProperties`, `items`, `const`, `enum`, `pattern`,
//! `minimum`, `maximum`, `minLength`, `maxLength`, `minProperties`, `maxProperties`, `allOf`, `anyOf`, `oneOf`. An unknown keyword
//! that constrains values is an error, so a spec that starts using one fails loudly here instead
//! of being checked less than it says.

use std::sync::OnceLock;

use serde_json::Value;

/// Keywords that describe without constraining.
const ANNOTATIONS: &[&str] = &[
    "description",
    "example",
    "examples",
    "default",
    "format",
    "title",
    "deprecated",
    "readOnly",
    "writeOnly",
];

pub struct Spec {
    doc: Value,
    /// (method, template segments, template) of every documented operation.
    routes: Vec<(String, Vec<Option<String>>, String)>,
}

static SPEC: OnceLock<Spec> = OnceLock::new();

/// The repository's `openapi.yaml`, parsed once per test process.
pub fn spec() -> &'static Spec {
    SPEC.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.yaml");
        let text = std::fs::read_to_string(path).expect("read openapi.yaml");
        let doc: Value = serde_saphyr::from_str(&text).expect("openapi.yaml is YAML");
        Spec::new(doc)
    })
}

fn segments(path: &str) -> Vec<&str> {
    path.trim_matches('/').split('/').collect()
}

impl Spec {
    pub fn new(doc: Value) -> Spec {
        let mut routes = Vec::new();
        if let Some(paths) = doc["paths"].as_object() {
            for (template, ops) in paths {
                let segs = segments(template)
                    .into_iter()
                    .map(|s| (!s.starts_with('{')).then(|| s.to_owned()))
                    .collect::<Vec<_>>();
                for method in ops.as_object().into_iter().flat_map(|o| o.keys()) {
                    routes.push((method.to_uppercase(), segs.clone(), template.clone()));
                }
            }
        }
        Spec { doc, routes }
    }

    /// The documented operation for a request, if any.
    fn operation(&self, method: &str, path: &str) -> Option<(&Value, &str)> {
        let method = if method == "HEAD" { "GET" } else { method };
        let segs = segments(path);
        self.routes
            .iter()
            .find(|(m, t, _)| {
                m == method
                    && t.len() == segs.len()
                    && t.iter()
                        .zip(&segs)
                        .all(|(t, s)| t.as_deref().is_none_or(|lit| lit == *s) && !s.is_empty())
            })
            .map(|(m, _, tpl)| {
                (
                    &self.doc["paths"][tpl.as_str()][m.to_lowercase()],
                    tpl.as_str(),
                )
            })
    }

    fn resolve<'a>(&'a self, mut v: &'a Value) -> Result<&'a Value, String> {
        for _ in 0..16 {
            let Some(r) = v.get("$ref").and_then(Value::as_str) else {
                return Ok(v);
            };
            let pointer = r
                .strip_prefix('#')
                .ok_or_else(|| format!("unsupported $ref {r}"))?;
            v = self
                .doc
                .pointer(pointer)
                .ok_or_else(|| format!("dangling $ref {r}"))?;
        }
        Err("a $ref chain longer than 16".into())
    }

    /// Checks one JSON answer. Requests to undocumented routes must answer the error shape.
    pub fn check(&self, method: &str, path: &str, status: u16, body: &Value) -> Result<(), String> {
        let Some((op, template)) = self.operation(method, path) else {
            if status >= 400 {
                let schema = serde_json::json!({ "$ref": "#/components/schemas/ErrorBody" });
                return self.validate(&schema, body, "$");
            }
            return Err(format!(
                "{method} {path} answered {status} but the spec has no such route"
            ));
        };
        let responses = &op["responses"];
        let code = status.to_string();
        let range = format!("{}XX", status / 100);
        let response = [code.as_str(), range.as_str(), "default"]
            .iter()
            .find_map(|k| responses.get(*k))
            .ok_or_else(|| format!("{method} {template}: status {status} is not documented"))?;
        let response = self.resolve(response)?;
        let Some(schema) = response
            .get("content")
            .and_then(|c| c.get("application/json"))
            .and_then(|c| c.get("schema"))
        else {
            return Err(format!(
                "{method} {template}: {status} answered JSON, but the spec documents no JSON body for it"
            ));
        };
        self.validate(schema, body, "$")
            .map_err(|e| format!("{method} {template} → {status}: {e}"))
    }

    fn validate(&self, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
        let schema = self.resolve(schema)?;
        let Some(obj) = schema.as_object() else {
            return match schema {
                Value::Bool(true) => Ok(()),
                _ => Err(format!("{at}: unusable schema {schema}")),
            };
        };
        for (k, s) in obj {
            match k.as_str() {
                "$ref" => {}
                k if ANNOTATIONS.contains(&k) => {}
                "type" => {
                    let types: Vec<&str> = match s {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        _ => return Err(format!("{at}: bad `type` {s}")),
                    };
                    if !types.iter().any(|t| type_matches(t, v)) {
                        return Err(format!("{at}: expected {types:?}, got {}", short(v)));
                    }
                }
                "const" if v != s => {
                    return Err(format!("{at}: expected {s}, got {}", short(v)));
                }
                "enum" if !s.as_array().is_some_and(|a| a.contains(v)) => {
                    return Err(format!("{at}: {} is not one of {s}", short(v)));
                }
                "const" | "enum" => {}
                "pattern" => {
                    if let Some(text) = v.as_str() {
                        let re = regex::Regex::new(s.as_str().unwrap_or(""))
                            .map_err(|e| format!("{at}: bad pattern: {e}"))?;
                        if !re.is_match(text) {
                            return Err(format!("{at}: {} does not match {s}", short(v)));
                        }
                    }
                }
                "minimum" | "maximum" => {
                    if let (Some(n), Some(lim)) = (v.as_f64(), s.as_f64()) {
                        let ok = if k == "minimum" { n >= lim } else { n <= lim };
                        if !ok {
                            return Err(format!("{at}: {n} is outside its {k} {lim}"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Some(t), Some(lim)) = (v.as_str(), s.as_u64()) {
                        let n = t.chars().count() as u64;
                        let ok = if k == "minLength" { n >= lim } else { n <= lim };
                        if !ok {
                            return Err(format!("{at}: length {n} is outside its {k} {lim}"));
                        }
                    }
                }
                "minProperties" | "maxProperties" => {
                    if let (Some(o), Some(lim)) = (v.as_object(), s.as_u64()) {
                        let n = o.len() as u64;
                        let ok = if k == "minProperties" {
                            n >= lim
                        } else {
                            n <= lim
                        };
                        if !ok {
                            return Err(format!("{at}: {n} properties, outside its {k} {lim}"));
                        }
                    }
                }
                "required" => {
                    if let Some(o) = v.as_object() {
                        for r in s.as_array().into_iter().flatten().filter_map(Value::as_str) {
                            if !o.contains_key(r) {
                                return Err(format!("{at}: required `{r}` is missing"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let (Some(o), Some(props)) = (v.as_object(), s.as_object()) {
                        for (name, ps) in props {
                            if let Some(x) = o.get(name) {
                                self.validate(ps, x, &format!("{at}.{name}"))?;
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Some(o) = v.as_object() {
                        let known = obj.get("properties").and_then(Value::as_object);
                        for (name, x) in o {
                            if known.is_some_and(|p| p.contains_key(name)) {
                                continue;
                            }
                            match s {
                                Value::Bool(false) => {
                                    return Err(format!("{at}: `{name}` is not in the spec"));
                                }
                                Value::Bool(true) => {}
                                other => self.validate(other, x, &format!("{at}.{name}"))?,
                            }
                        }
                    }
                }
                "items" => {
                    if let Some(a) = v.as_array() {
                        for (i, x) in a.iter().enumerate() {
                            self.validate(s, x, &format!("{at}[{i}]"))?;
                        }
                    }
                }
                "allOf" => {
                    for sub in s.as_array().into_iter().flatten() {
                        self.validate(sub, v, at)?;
                    }
                }
                "anyOf" | "oneOf" => {
                    let subs = s.as_array().cloned().unwrap_or_default();
                    let errors: Vec<String> = subs
                        .iter()
                        .filter_map(|sub| self.validate(sub, v, at).err())
                        .collect();
                    let passed = subs.len() - errors.len();
                    if passed == 0 {
                        return Err(format!("{at}: matches none of {k}: {}", errors.join(" | ")));
                    }
                    if k == "oneOf" && passed > 1 {
                        return Err(format!("{at}: matches {passed} schemas of oneOf"));
                    }
                }
                other => {
                    return Err(format!(
                        "{at}: keyword `{other}` is not supported by this check"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        _ => false,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        format!("{}…", &s[..s.floor_char_boundary(80)])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_check_catches_what_it_claims_to() {
        let s = spec();
        let ok = json!({ "status": "ok" });
        assert!(s.check("GET", "/healthz", 200, &ok).is_ok());
        // An undocumented status, a wrong shape, an extra field where none is allowed.
        assert!(s.check("GET", "/healthz", 418, &ok).is_err());
        let e = json!({ "error": { "code": "x", "message": "m", "details": {} } });
        assert!(s.check("GET", "/v1/nowhere", 404, &e).is_ok());
        assert!(s.check("GET", "/v1/nowhere", 404, &ok).is_err());
        let push = json!({ "project": "acme/api", "revision": "one", "created_revision": true,
                           "changes": [], "merged": [] });
        let err = s
            .check("POST", "/v1/projects/acme/api/push", 200, &push)
            .unwrap_err();
        assert!(err.contains("revision"), "{err}");
    }
}
