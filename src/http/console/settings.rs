//! Every settings section of the dashboard API in the console, as forms made from the API's
//! own document: each section's fields, their kinds and limits are read from the request
//! schema of its write route in the OpenAPI document the server serves, filled with what
//! its read route answers, and a submitted form becomes that route's JSON body, handed to
//! the route's own handler (so the console cannot accept what the API refuses, nor drift
//! from it). A `PATCH` section sends the fields that changed; a `PUT` section sends them
//! all. A nested object of plain strings (Apple's key, the wallet's assurance floor) is a
//! group of inputs; any other nested value (the wallet's trust anchors, the minors' texts)
//! is edited as JSON. A secret is never shown: left empty, the stored one stays.
//!
//! Owners edit; other members read. A write that needs a recent re-authentication asks for
//! the password first.

use std::{collections::HashMap, future::Future, pin::Pin, sync::Arc};

use axum::{
    extract::{Extension, Path, Query, State},
    http::StatusCode,
    response::Response,
    Json,
};

use serde_json::{Map, Value};

use super::{
    field_errors, sign_in::reauth_page, tenant_path, Area, CheckGroup, CheckOption, Control,
    DoneQuery, Lines, Link, Section, Select, SelectOption, TenantPost, Visit,
};
use crate::http::{
    dashboard::settings::{self as api, Caller},
    error::ApiError,
    extract::parse_json,
    pages::FieldView,
};

/// The OpenAPI document the server serves, as JSON: where the forms' fields come from.
#[derive(Clone)]
pub struct ApiDoc(pub Arc<Value>);

type Answer = Pin<Box<dyn Future<Output = Result<Value, ApiError>> + Send>>;

/// One settings section: its path segment, its write method, and its routes' handlers.
struct SectionDef {
    key: &'static str,
    /// The section's path after `settings/` in the API.
    api: &'static str,
    method: &'static str,
    read: fn(Caller) -> Answer,
    write: fn(Caller, axum::http::HeaderMap, Value) -> Answer,
}

fn json_of<T: serde::Serialize>(r: Result<Json<T>, ApiError>) -> Result<Value, ApiError> {
    let Json(v) = r?;
    serde_json::to_value(v).map_err(ApiError::internal)
}

/// The body as the route would read it from the wire: the same field errors.
fn body_of<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, ApiError> {
    let bytes = serde_json::to_vec(v).map_err(ApiError::internal)?;
    parse_json(&bytes)
}

/// One section of the dashboard API's own: its read and write handlers (`with headers`: the
/// write also takes the request's headers, for its confirmation header).
macro_rules! section {
    (@write $write:path, $c:ident, $headers:ident, $req:ident) => {{
        let _ = $headers;
        $write($c, crate::http::extract::ApiJson($req))
    }};
    (@write $write:path, $c:ident, $headers:ident, $req:ident, with headers) => {
        $write($c, $headers, crate::http::extract::ApiJson($req))
    };
    ($key:literal, $method:literal, $get:path, $write:path $(, with $h:ident)?) => {
        SectionDef {
            key: $key,
            api: $key,
            method: $method,
            read: |c| Box::pin(async move { json_of($get(c).await) }),
            write: |c, headers, body| {
                Box::pin(async move {
                    let req = body_of(&body)?;
                    json_of(section!(@write $write, c, headers, req $(, with $h)?).await)
                })
            },
        }
    };
}

/// One social provider's section: the provider's own route, with its name in the path.
macro_rules! social {
    ($provider:literal) => {
        SectionDef {
            key: concat!("social-", $provider),
            api: "social/{provider}",
            method: "put",
            read: |c| {
                Box::pin(async move {
                    let (state, auth, slug) = c.into_parts();
                    let path = Path((slug, $provider.to_owned()));
                    json_of(
                        crate::http::dashboard::social::get_provider(State(state), auth, path)
                            .await,
                    )
                })
            },
            write: |c, _, body| {
                Box::pin(async move {
                    let req = body_of(&body)?;
                    let (state, auth, slug) = c.into_parts();
                    let path = Path((slug, $provider.to_owned()));
                    json_of(
                        crate::http::dashboard::social::put_provider(
                            State(state),
                            auth,
                            path,
                            crate::http::extract::ApiJson(req),
                        )
                        .await,
                    )
                })
            },
        }
    };
}

/// The social providers, as the API names them, and as people do.
const PROVIDERS: [(&str, &str); 10] = [
    ("google", "Google"),
    ("apple", "Apple"),
    ("microsoft", "Microsoft"),
    ("github", "GitHub"),
    ("gitlab", "GitLab"),
    ("linkedin", "LinkedIn"),
    ("slack", "Slack"),
    ("discord", "Discord"),
    ("facebook", "Facebook"),
    ("x", "X"),
];

/// The sections, in the order the console lists them.
fn sections() -> [SectionDef; 23] {
    use api::{
        agents::{get_agents, patch_agents},
        anonymous::{get_anonymous, patch_anonymous},
        branding::{get_branding, patch_branding},
        email_domains::{get_email_domains, put_email_domains},
        minors::{get_minors, put_minors},
        passkey_domain::{get_passkey_domain, put_passkey_domain},
        roles::{get_roles, patch_roles},
        security::{get_security, patch_security},
        urls::{get_cors, get_urls, put_cors, put_urls},
        users::{get_users, patch_users},
        wallet::{get_eudi, put_eudi},
        wallet_age::{get_eudi_age, put_eudi_age},
    };
    [
        section!("security", "patch", get_security, patch_security),
        section!("email-domains", "put", get_email_domains, put_email_domains),
        section!("urls", "put", get_urls, put_urls),
        section!("cors", "put", get_cors, put_cors),
        section!("passkey-domain", "put", get_passkey_domain, put_passkey_domain, with headers),
        section!("users", "patch", get_users, patch_users),
        section!("anonymous", "patch", get_anonymous, patch_anonymous, with headers),
        section!("roles", "patch", get_roles, patch_roles),
        section!("branding", "patch", get_branding, patch_branding),
        section!("agents", "patch", get_agents, patch_agents),
        section!("minors", "put", get_minors, put_minors),
        section!("eudi", "put", get_eudi, put_eudi),
        section!("eudi-age", "put", get_eudi_age, put_eudi_age),
        social!("google"),
        social!("apple"),
        social!("microsoft"),
        social!("github"),
        social!("gitlab"),
        social!("linkedin"),
        social!("slack"),
        social!("discord"),
        social!("facebook"),
        social!("x"),
    ]
}

/// A section's name in the reader's language (a provider's section is named after it).
fn section_title(visit: &Visit, key: &str) -> String {
    match key.strip_prefix("social-") {
        Some(p) => {
            let name = PROVIDERS
                .iter()
                .find(|(k, _)| *k == p)
                .map_or(p, |(_, n)| *n);
            visit.t_with("console-section-social", &[("provider", name)])
        }
        None => visit.t(&format!("console-section-{key}")),
    }
}

/// What kind of input a field is.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Bool,
    Int {
        min: Option<i64>,
        max: Option<i64>,
    },
    Text {
        secret: bool,
        max_len: Option<u64>,
    },
    Choice(Vec<String>),
    /// A list of strings, one a line.
    Lines,
    /// Several of a fixed set of strings.
    Options(Vec<String>),
    /// A nested object of strings: one input each, named `field.property`.
    Object(Vec<Part>),
    /// Any other nested value (a list of objects, a map, an object with numbers), as JSON.
    Json {
        array: bool,
    },
}

/// One property of a nested object's group of inputs.
#[derive(Clone, Debug, PartialEq)]
struct Part {
    name: String,
    /// Never shown (a private key): left empty, the stored one stays.
    secret: bool,
    /// Long text (a PEM file): a text area.
    long: bool,
    /// The values it may take, when they are a fixed set.
    choices: Option<Vec<String>>,
}

/// The properties of `schema` when it is an object of strings only (its group of inputs).
fn parts_of(doc: &Value, schema: &Value) -> Option<Vec<Part>> {
    let props = schema.get("properties")?.as_object()?;
    props
        .iter()
        .map(|(name, p)| {
            let p = resolve(doc, p);
            let (types, _) = types_of(p);
            (types.first().map(String::as_str) == Some("string")).then(|| Part {
                name: name.clone(),
                secret: name.contains("private") || name.contains("secret"),
                long: p.get("maxLength").and_then(Value::as_u64).unwrap_or(0) > 512,
                choices: string_enum(p),
            })
        })
        .collect()
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    kind: Kind,
    nullable: bool,
}

fn resolve<'d>(doc: &'d Value, mut s: &'d Value) -> &'d Value {
    for _ in 0..8 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let name = r.rsplit('/').next().unwrap_or("");
        match doc.pointer(&format!("/components/schemas/{name}")) {
            Some(next) => s = next,
            None => break,
        }
    }
    s
}

/// The JSON types a schema allows (`type` as a string or a list), and whether `null` is one.
fn types_of(s: &Value) -> (Vec<String>, bool) {
    let mut types: Vec<String> = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let nullable = types.iter().any(|t| t == "null");
    types.retain(|t| t != "null");
    (types, nullable)
}

fn string_enum(s: &Value) -> Option<Vec<String>> {
    let values: Vec<String> = s
        .get("enum")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    (!values.is_empty()).then_some(values)
}

/// The editable fields of the request body of `method` on `path`, from the document.
fn fields_of(doc: &Value, path: &str, method: &str) -> Vec<Field> {
    let pointer = format!(
        "/paths/{}/{method}/requestBody/content/application~1json/schema",
        path.replace('~', "~0").replace('/', "~1")
    );
    let Some(schema) = doc.pointer(&pointer) else {
        return Vec::new();
    };
    let schema = resolve(doc, schema);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let prop = resolve(doc, prop);
            // `oneOf: [null, {$ref}]`: an optional nested object.
            if let Some(variants) = prop.get("oneOf").and_then(Value::as_array) {
                let object = variants
                    .iter()
                    .map(|v| resolve(doc, v))
                    .find(|v| v.get("properties").is_some());
                let kind = match object.and_then(|o| parts_of(doc, o)) {
                    Some(parts) => Kind::Object(parts),
                    None => Kind::Json { array: false },
                };
                return Field {
                    name: name.clone(),
                    kind,
                    nullable: true,
                };
            }
            let (types, nullable) = types_of(prop);
            let kind = match types.first().map(String::as_str) {
                Some("boolean") => Kind::Bool,
                Some("integer") => Kind::Int {
                    min: prop.get("minimum").and_then(Value::as_i64),
                    max: prop.get("maximum").and_then(Value::as_i64),
                },
                Some("string") => match string_enum(prop) {
                    Some(values) => Kind::Choice(values),
                    None => Kind::Text {
                        secret: name.contains("secret") || name.contains("token"),
                        max_len: prop.get("maxLength").and_then(Value::as_u64),
                    },
                },
                Some("array") => {
                    let items = resolve(doc, prop.get("items").unwrap_or(&Value::Null));
                    let (item_types, _) = types_of(items);
                    match (item_types.first().map(String::as_str), string_enum(items)) {
                        (Some("string"), Some(values)) => Kind::Options(values),
                        (Some("string"), None) => Kind::Lines,
                        _ => Kind::Json { array: true },
                    }
                }
                _ => Kind::Json { array: false },
            };
            Field {
                name: name.clone(),
                kind,
                nullable,
            }
        })
        .collect()
}

fn api_path(api: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{{slug}}/settings/{api}")
}

fn find(key: &str) -> Option<SectionDef> {
    sections().into_iter().find(|s| s.key == key)
}

/// The sections, each a link.
pub async fn index(visit: Visit, Path(slug): Path<String>) -> Response {
    let (_, m) = match visit.member(&slug) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let mut page = visit.tenant_page(&m, Area::Settings, "console-settings");
    let base = format!("{}/settings", tenant_path(&slug));
    let (social, own): (Vec<SectionDef>, Vec<SectionDef>) = sections()
        .into_iter()
        .partition(|s| s.key.starts_with("social-"));
    let link = |s: &SectionDef| Link {
        href: format!("{base}/{}", s.key),
        label: section_title(&visit, s.key),
    };
    page.sections.push(Section {
        links: own.iter().map(link).collect(),
        ..Section::default()
    });
    page.sections.push(Section {
        heading: Some(visit.t("console-section-social-heading")),
        links: social.iter().map(link).collect(),
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}

/// One section: its form for an owner, its values for other members.
pub async fn show(
    visit: Visit,
    Path((slug, key)): Path<(String, String)>,
    Query(q): Query<DoneQuery>,
    Extension(doc): Extension<ApiDoc>,
) -> Response {
    let (auth, m) = match visit.member(&slug) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let Some(def) = find(&key) else {
        return visit.refused(&ApiError::not_found("settings section"));
    };
    let caller = Caller::new(visit.state.clone(), auth.clone(), slug.clone());
    let current = match (def.read)(caller).await {
        Ok(v) => v,
        Err(e) => return visit.refused(&e),
    };
    let fields = fields_of(&doc.0, &api_path(def.api), def.method);
    let notice = q.done.map(|_| visit.t("console-saved"));
    render(
        &visit,
        &m,
        &def,
        &fields,
        &current,
        (notice, HashMap::new(), None),
    )
}

/// The section's page: the values, as a form an owner may submit.
fn render(
    visit: &Visit,
    m: &tessera_actors::directory::dashboard::MemberOf,
    def: &SectionDef,
    fields: &[Field],
    shown: &Value,
    (notice, errors, summary): (Option<String>, HashMap<String, String>, Option<String>),
) -> Response {
    let mut page = visit.tenant_page(m, Area::Settings, "console-settings");
    page.title = section_title(visit, def.key);
    page.notice = notice;
    page.error_summary = summary;
    let action = format!("{}/settings/{}", tenant_path(&m.slug), def.key);
    let owner = m.role.as_str() == "owner";
    let mut section = Section::default();
    if owner {
        let mut form = visit.form(action.clone(), visit.t("console-save"));
        form.controls = fields
            .iter()
            .flat_map(|f| controls(visit, f, shown.get(&f.name), errors.get(&f.name)))
            .collect();
        section.forms.push(form);
    } else {
        section
            .paragraphs
            .push(visit.t("console-settings-read-only"));
        section.facts = fields
            .iter()
            .map(|f| {
                (
                    label(visit, &f.name),
                    shown_value(visit, shown.get(&f.name)),
                )
            })
            .collect();
    }
    page.sections.push(section);
    let status = if errors.is_empty() && page.error_summary.is_none() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    visit.answer(status, page)
}

fn label(visit: &Visit, name: &str) -> String {
    visit.t(&format!("console-field-{name}"))
}

fn shown_value(visit: &Visit, v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::Bool(b)) => visit.t(if *b { "console-yes" } else { "console-no" }),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}

/// The inputs of `f`, showing `v`: one, or a nested object's group.
fn controls(visit: &Visit, f: &Field, v: Option<&Value>, error: Option<&String>) -> Vec<Control> {
    let reason = |e: &String| visit.t_with("console-not-accepted", &[("reason", e)]);
    match &f.kind {
        Kind::Object(parts) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let id = format!("f-{}-{}", f.name, p.name).replace('_', "-");
                let name = format!("{}.{}", f.name, p.name);
                let label = visit.t(&format!("console-field-{}-{}", f.name, p.name));
                // The group's refusal is said once, beside its first input.
                let error = error.filter(|_| i == 0).map(reason);
                let shown = if p.secret {
                    String::new()
                } else {
                    v.and_then(|o| o.get(&p.name))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let hint = p.secret.then(|| visit.t("console-hint-secret"));
                if let Some(choices) = &p.choices {
                    let options = choice_options(visit, choices, &shown, true);
                    return Control::Select(Select {
                        id,
                        name,
                        label,
                        options,
                        error,
                    });
                }
                if p.long {
                    return Control::Lines(Lines {
                        id,
                        name,
                        label,
                        hint,
                        error,
                        value: shown,
                    });
                }
                let kind = if p.secret { "password" } else { "text" };
                let mut input = FieldView::input(&id, "", kind, label, "off");
                input.value = shown;
                input.hint = hint;
                input.error = error;
                Control::Input(input_named(input, name))
            })
            .collect(),
        Kind::Json { .. } => vec![Control::Lines(Lines {
            id: format!("f-{}", f.name.replace('_', "-")),
            name: f.name.clone(),
            label: label(visit, &f.name),
            hint: Some(visit.t("console-hint-json")),
            error: error.map(reason),
            value: match v {
                None | Some(Value::Null) => String::new(),
                Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
            },
        })],
        _ => control(visit, f, v, error).into_iter().collect(),
    }
}

/// The options of a choice among `values`, `current` selected; first "not set" when it may
/// be left unset.
fn choice_options(
    visit: &Visit,
    values: &[String],
    current: &str,
    unset: bool,
) -> Vec<SelectOption> {
    let none = unset.then(|| SelectOption {
        value: String::new(),
        label: visit.t("console-not-set"),
        selected: current.is_empty(),
    });
    none.into_iter()
        .chain(values.iter().map(|value| SelectOption {
            value: value.clone(),
            label: value.clone(),
            selected: value == current,
        }))
        .collect()
}

/// The input of `f`, showing `v`.
fn control(visit: &Visit, f: &Field, v: Option<&Value>, error: Option<&String>) -> Option<Control> {
    let id = format!("f-{}", f.name.replace('_', "-"));
    let name = f.name.clone();
    let error = error.map(|e| visit.t_with("console-not-accepted", &[("reason", e)]));
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    Some(match &f.kind {
        Kind::Object(_) | Kind::Json { .. } => return None,
        Kind::Bool => Control::Select(Select {
            id,
            name,
            label: label(visit, &f.name),
            options: [("true", "console-yes"), ("false", "console-no")]
                .iter()
                .map(|(value, l)| SelectOption {
                    value: (*value).to_owned(),
                    label: visit.t(l),
                    selected: v.and_then(Value::as_bool).map(|b| b.to_string()).as_deref()
                        == Some(*value),
                })
                .collect(),
            error,
        }),
        Kind::Choice(values) => {
            let current = text(v);
            let options = choice_options(visit, values, &current, f.nullable);
            Control::Select(Select {
                id,
                name,
                label: label(visit, &f.name),
                options,
                error,
            })
        }
        Kind::Int { min, max } => {
            let mut input = FieldView::input(&id, "", "text", label(visit, &f.name), "off");
            input.inputmode = "numeric";
            input.max = 20;
            input.value = text(v);
            input.hint = match (min, max) {
                (Some(lo), Some(hi)) => Some(visit.t_with(
                    "console-hint-range",
                    &[("min", &lo.to_string()), ("max", &hi.to_string())],
                )),
                _ => None,
            };
            input.error = error;
            Control::Input(input_named(input, name))
        }
        Kind::Text { secret, max_len } => {
            let kind = if *secret { "password" } else { "text" };
            let mut input = FieldView::input(&id, "", kind, label(visit, &f.name), "off");
            input.max = max_len.map_or(2048, |m| m as usize);
            let mut hints = Vec::new();
            if *secret {
                hints.push(visit.t("console-hint-secret"));
            } else {
                input.value = text(v);
                if f.nullable {
                    hints.push(visit.t("console-hint-empty-none"));
                }
            }
            input.hint = (!hints.is_empty()).then(|| hints.join(" "));
            input.error = error;
            Control::Input(input_named(input, name))
        }
        Kind::Lines => Control::Lines(Lines {
            id,
            name,
            label: label(visit, &f.name),
            hint: Some(visit.t("console-hint-lines")),
            error,
            value: v
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
        }),
        Kind::Options(values) => {
            let chosen: Vec<&str> = v
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Control::Checks(CheckGroup {
                legend: label(visit, &f.name),
                options: values
                    .iter()
                    .map(|value| CheckOption {
                        id: format!("{id}-{}", value.to_lowercase().replace('_', "-")),
                        value: value.clone(),
                        label: value.clone(),
                        checked: chosen.contains(&value.as_str()),
                    })
                    .collect(),
                name,
                error,
            })
        }
    })
}

/// A settings field's input, named as the document names the field.
fn input_named(mut input: FieldView, name: String) -> FieldView {
    input.name = name.into();
    input
}

/// The form's values as the route's body: `Err` names each field that is not of its kind.
fn body_from(
    fields: &[Field],
    form: &[(String, String)],
    current: &Value,
    method: &str,
) -> Result<Value, HashMap<String, String>> {
    let one = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
    };
    let mut body = Map::new();
    let mut errors = HashMap::new();
    for f in fields {
        let now = current.get(&f.name);
        let value = match &f.kind {
            Kind::Object(parts) => object_value(f, parts, &one, (now, method)),
            Kind::Json { array } => match one(&f.name) {
                None => None,
                Some(v) if v.is_empty() => Some(if f.nullable {
                    Value::Null
                } else if *array {
                    Value::Array(Vec::new())
                } else {
                    Value::Object(Map::new())
                }),
                Some(v) => match serde_json::from_str::<Value>(&v) {
                    Ok(parsed) => Some(parsed),
                    Err(e) => {
                        errors.insert(f.name.clone(), format!("must be JSON ({e})"));
                        None
                    }
                },
            },
            Kind::Bool => one(&f.name).map(|v| Value::Bool(v == "true")),
            Kind::Choice(values) => match one(&f.name) {
                Some(v) if v.is_empty() && f.nullable => Some(Value::Null),
                Some(v) if values.contains(&v) => Some(Value::String(v)),
                Some(_) => {
                    errors.insert(f.name.clone(), "not one of the choices".to_owned());
                    None
                }
                None => None,
            },
            Kind::Int { .. } => match one(&f.name) {
                Some(v) if v.is_empty() && f.nullable => Some(Value::Null),
                Some(v) => match v.parse::<i64>() {
                    Ok(n) => Some(Value::from(n)),
                    Err(_) => {
                        errors.insert(f.name.clone(), "must be a whole number".to_owned());
                        None
                    }
                },
                None => None,
            },
            Kind::Text { secret, .. } => match one(&f.name) {
                // A secret is never shown: an empty input keeps the stored one.
                Some(v) if v.is_empty() && *secret => None,
                Some(v) if v.is_empty() && f.nullable => Some(Value::Null),
                Some(v) => Some(Value::String(v)),
                None => None,
            },
            Kind::Lines => one(&f.name).map(|v| {
                let items: Vec<Value> = v
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|l| Value::String(l.to_owned()))
                    .collect();
                if items.is_empty() && f.nullable && now.is_none_or(Value::is_null) {
                    Value::Null
                } else {
                    Value::Array(items)
                }
            }),
            Kind::Options(values) => Some(Value::Array(
                form.iter()
                    .filter(|(k, v)| *k == f.name && values.contains(v))
                    .map(|(_, v)| Value::String(v.clone()))
                    .collect(),
            )),
        };
        let Some(value) = value else {
            continue;
        };
        // A patch names only what changed.
        if method == "patch" && now == Some(&value) {
            continue;
        }
        body.insert(f.name.clone(), value);
    }
    if errors.is_empty() {
        Ok(Value::Object(body))
    } else {
        Err(errors)
    }
}

/// A nested object's value from its group of inputs. Unchanged (the secrets left empty, the
/// rest as they were), it is left out when the stored object is write-only (its read form
/// says `..._set`: the API keeps what it has), else a `PUT` sends it as it was; all empty is
/// `null` when the field may be; otherwise the object of what was typed.
fn object_value(
    f: &Field,
    parts: &[Part],
    one: &dyn Fn(&str) -> Option<String>,
    (now, method): (Option<&Value>, &str),
) -> Option<Value> {
    let typed: Vec<(&Part, String)> = parts
        .iter()
        .filter_map(|p| {
            one(&format!("{}.{}", f.name, p.name)).map(|v| (p, v.replace("\r\n", "\n")))
        })
        .collect();
    if typed.is_empty() {
        return None;
    }
    let stored = now.and_then(Value::as_object);
    let write_only = stored.is_some_and(|o| o.keys().any(|k| k.ends_with("_set")));
    let unchanged = typed.iter().all(|(p, v)| {
        if p.secret {
            v.is_empty()
        } else {
            stored
                .and_then(|o| o.get(&p.name))
                .and_then(Value::as_str)
                .unwrap_or("")
                == v
        }
    });
    if unchanged {
        return match (write_only, method) {
            (false, "put") => now.cloned(),
            _ => None,
        };
    }
    if typed.iter().all(|(_, v)| v.is_empty()) {
        return f.nullable.then_some(Value::Null);
    }
    Some(Value::Object(
        typed
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(p, v)| (p.name.clone(), Value::String(v)))
            .collect(),
    ))
}

/// Saves a section through its route's handler; the form again with each refused field's
/// reason, or the section saying it was saved.
pub async fn save(
    Path((slug, key)): Path<(String, String)>,
    Extension(doc): Extension<ApiDoc>,
    p: TenantPost,
) -> Response {
    let (visit, form, caller) = p.into_parts();
    let auth = &caller.auth;
    let Some(def) = find(&key) else {
        return visit.refused(&ApiError::not_found("settings section"));
    };
    let form = form.pairs();
    let action = format!("{}/settings/{}", tenant_path(&slug), def.key);
    let (m, _) = match auth.member(&visit.state, &slug) {
        Ok(m) => m,
        Err(e) => return visit.refused(&e),
    };
    let caller = || Caller::new(visit.state.clone(), auth.clone(), slug.clone());
    let current = match (def.read)(caller()).await {
        Ok(v) => v,
        Err(e) => return visit.refused(&e),
    };
    let fields = fields_of(&doc.0, &api_path(def.api), def.method);
    // What the reader typed, shown again when something is refused.
    let typed = |current: &Value| {
        let mut shown = current.clone();
        if let Ok(Value::Object(sent)) = body_from(&fields, form, current, "put") {
            if let Value::Object(o) = &mut shown {
                o.extend(sent);
            }
        }
        shown
    };
    // The form again, with what was typed, each refused field's reason and the summary.
    let again = |errors, summary: String| {
        let shown = typed(&current);
        render(
            &visit,
            &m,
            &def,
            &fields,
            &shown,
            (None, errors, Some(summary)),
        )
    };
    let request = match body_from(&fields, form, &current, def.method) {
        Ok(b) => b,
        Err(errors) => return again(errors, visit.t("console-settings-refused")),
    };
    // A patch of nothing is no change: nothing to write, nothing to audit.
    if def.method == "patch" && request.as_object().is_some_and(Map::is_empty) {
        return visit.go(&format!("{action}?done=1"));
    }
    match (def.write)(caller(), visit.headers.clone(), request).await {
        Ok(_) => visit.go(&format!("{action}?done=1")),
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &action, None),
        Err(e) if e.status == StatusCode::BAD_REQUEST || e.status == StatusCode::CONFLICT => {
            let errors = field_errors(&e);
            let summary = if errors.is_empty() {
                visit.t_with("console-not-accepted", &[("reason", &e.message)])
            } else {
                visit.t("console-settings-refused")
            };
            again(errors, summary)
        }
        Err(e) => visit.refused(&e),
    }
}
