//! Typed form elicitation: the requested schema derived from a Rust type,
//! the answer read back into it.
//!
//! ```
//! use ferromcp_server::{Elicited, HandlerError, RequestContext};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Contact {
//!     /// Your name
//!     name: String,
//!     /// May we write to you?
//!     newsletter: bool,
//! }
//!
//! async fn signup(cx: RequestContext) -> Result<String, HandlerError> {
//!     // 2026-07-28: without an answer this returns early (`?`) and the
//!     // client asks the user; the handler then runs again from the top
//!     // with the answer, so code before this line runs twice.
//!     Ok(match cx.elicit_form::<Contact>("contact", "Sign up")? {
//!         Elicited::Accepted(c) => format!("welcome, {}", c.name),
//!         Elicited::Declined | Elicited::Cancelled => "maybe later".into(),
//!     })
//! }
//! ```

use crate::error::HandlerError;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ElicitationSchema,
    OrderedMap, PrimitiveSchemaDefinition,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What the user did with a typed form.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// Submitted, and the content is a valid `T`.
    Accepted(T),
    /// Refused explicitly.
    Declined,
    /// Dismissed without a choice.
    Cancelled,
}

// ELICIT-04
/// Types a form field may have (a flat object of primitives).
const PRIMITIVES: [&str; 4] = ["string", "number", "integer", "boolean"];

/// The form-mode params asking for a `T`: its JSON Schema (from `schemars`)
/// reduced to what elicitation allows. A `T` that is not a flat object of
/// primitive fields (strings, numbers, booleans, string enums, arrays of
/// string enums) is refused with a message naming the field.
///
/// The fields are asked in `T`'s declaration order (the wire keeps it:
/// `requestedSchema.properties` is an ordered map), whatever the
/// program's `serde_json` features.
pub(crate) fn form_params<T: JsonSchema + DeserializeOwned>(
    message: &str,
) -> Result<ElicitRequestParams, HandlerError> {
    let schema = serde_json::to_value(schemars::schema_for!(T))
        .map_err(|e| config(format!("schema of the form type: {e}")))?;
    let Value::Object(mut root) = schema else {
        return Err(config("the form type's schema is not an object".into()));
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(config(
            "a form type must be a struct of named fields (ELICIT-04)".into(),
        ));
    }
    let defs = root.remove("$defs").or_else(|| root.remove("definitions"));
    // ELICIT-04: in declaration order, not the sorted order of the map.
    let order = crate::field_order::property_order(
        crate::field_order::declared_fields::<T>(),
        &Value::Object(root.clone()),
    );
    let mut properties: Vec<(String, Value)> = Vec::new();
    if let Some(Value::Object(mut props)) = root.remove("properties") {
        for name in order {
            if let Some(prop) = props.remove(&name) {
                properties.push((name, prop));
            }
        }
        properties.extend(props);
    }
    let mut fields = OrderedMap::new();
    for (name, prop) in properties {
        let prop = primitive(&name, prop, defs.as_ref())?;
        let prop: PrimitiveSchemaDefinition = serde_json::from_value(prop)
            .map_err(|e| config(format!("the form field {name:?}: {e}")))?;
        fields.insert(name, prop);
    }
    let required = match root.remove("required") {
        Some(req) => Some(
            serde_json::from_value(req)
                .map_err(|e| config(format!("the form's required list: {e}")))?,
        ),
        None => None,
    };
    Ok(ElicitRequestParams::Form(ElicitRequestFormParams {
        message: message.to_owned(),
        requested_schema: ElicitationSchema {
            properties: fields,
            required,
            ..ElicitationSchema::default()
        },
    }))
}

/// One property, `$ref`s to enums inlined, checked to be primitive.
fn primitive(name: &str, prop: Value, defs: Option<&Value>) -> Result<Value, HandlerError> {
    let prop = resolve(prop, defs);
    let Value::Object(mut p) = prop else {
        return Err(not_primitive(name));
    };
    // `Option<T>` comes as `"type": ["T", "null"]`: optional-ness is
    // `required`'s business.
    if let Some(Value::Array(types)) = p.get("type") {
        let non_null: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        if let [one] = non_null.as_slice() {
            p.insert("type".into(), one.clone());
        }
    }
    // `Option<Enum>` comes as `anyOf: [{$ref}, {type: null}]`.
    if let Some(Value::Array(any)) = p.remove("anyOf") {
        let mut rest = any
            .into_iter()
            .filter(|v| v.get("type").and_then(Value::as_str) != Some("null"));
        match (rest.next(), rest.next()) {
            (Some(one), None) => {
                if let Value::Object(inner) = resolve(one, defs) {
                    for (k, v) in inner {
                        p.entry(k).or_insert(v);
                    }
                }
            }
            _ => return Err(not_primitive(name)),
        }
    }
    if let Some(f) = p.remove("format") {
        if f.as_str().is_some_and(is_elicit_format) {
            p.insert("format".into(), f);
        }
    }
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
    let ok = PRIMITIVES.contains(&ty)
        || (ty == "array"
            && p.get("items")
                .map(|i| resolve(i.clone(), defs))
                .is_some_and(|i| i.get("enum").is_some()));
    if !ok {
        return Err(not_primitive(name));
    }
    if let Some(items) = p.remove("items") {
        p.insert("items".into(), resolve(items, defs));
    }
    Ok(Value::Object(p))
}

fn is_elicit_format(f: &str) -> bool {
    matches!(f, "email" | "uri" | "date" | "date-time")
}

/// Follows a local `$ref` into the definitions.
fn resolve(v: Value, defs: Option<&Value>) -> Value {
    let target = v
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .and_then(|n| defs?.get(n));
    match target {
        Some(t) => {
            let mut t = t.clone();
            // Keep the field's own description over the type's.
            if let (Value::Object(t), Some(d)) = (&mut t, v.get("description")) {
                t.insert("description".into(), d.clone());
            }
            t
        }
        None => v,
    }
}

/// Reads the answer to a typed form.
pub(crate) fn read_answer<T: DeserializeOwned>(
    r: ElicitResult,
) -> Result<Elicited<T>, HandlerError> {
    match r.action {
        ElicitAction::Decline => Ok(Elicited::Declined),
        ElicitAction::Cancel => Ok(Elicited::Cancelled),
        ElicitAction::Accept => {
            let content = serde_json::to_value(r.content.unwrap_or_default())
                .map_err(|e| config(format!("form answer: {e}")))?;
            serde_json::from_value(content)
                .map(Elicited::Accepted)
                .map_err(|e| {
                    HandlerError::Protocol(ErrorObject::invalid_params(format!(
                        "the submitted form does not match the requested fields: {e}"
                    )))
                })
        }
    }
}

fn not_primitive(field: &str) -> HandlerError {
    config(format!(
        "form field `{field}` is not a string, number, boolean or enum (elicitation forms are flat, ELICIT-04)"
    ))
}

fn config(msg: String) -> HandlerError {
    HandlerError::Protocol(ErrorObject::internal(msg))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema, Debug, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Size {
        Small,
        Large,
    }

    #[derive(Deserialize, JsonSchema, Debug, PartialEq)]
    struct Order {
        /// Who orders
        name: String,
        count: u32,
        gift: bool,
        size: Size,
        note: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Nested {
        #[allow(dead_code)]
        inner: Order,
    }

    #[test]
    fn a_flat_struct_becomes_a_form_schema() {
        let p = form_params::<Order>("Your order").unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["mode"], "form");
        let s = &v["requestedSchema"];
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["name"]["type"], "string");
        assert_eq!(s["properties"]["name"]["description"], "Who orders");
        assert_eq!(s["properties"]["count"]["type"], "integer");
        assert_eq!(s["properties"]["gift"]["type"], "boolean");
        assert_eq!(
            s["properties"]["size"]["enum"],
            serde_json::json!(["small", "large"])
        );
        assert_eq!(s["properties"]["note"]["type"], "string");
        let req: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(req.contains(&"name") && !req.contains(&"note"), "{req:?}");
    }

    #[test]
    fn nested_objects_are_refused_naming_the_field() {
        let e = form_params::<Nested>("x").unwrap_err();
        assert!(format!("{e:?}").contains("`inner`"), "{e:?}");
    }

    #[test]
    fn answers_are_typed() {
        let r: ElicitResult = serde_json::from_value(serde_json::json!({
            "action": "accept",
            "content": {"name": "Ada", "count": 2, "gift": true, "size": "large"}
        }))
        .unwrap();
        assert_eq!(
            read_answer::<Order>(r).unwrap(),
            Elicited::Accepted(Order {
                name: "Ada".into(),
                count: 2,
                gift: true,
                size: Size::Large,
                note: None
            })
        );
        let bad: ElicitResult = serde_json::from_value(
            serde_json::json!({"action": "accept", "content": {"name": "Ada"}}),
        )
        .unwrap();
        assert!(read_answer::<Order>(bad).is_err());
        let no: ElicitResult =
            serde_json::from_value(serde_json::json!({"action": "decline"})).unwrap();
        assert_eq!(read_answer::<Order>(no).unwrap(), Elicited::Declined);
    }
}
