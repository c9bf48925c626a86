//! `key=value` arguments typed by a JSON Schema.

use serde_json::{Map, Value};

type JsonObject = Map<String, Value>;

/// The JSON type(s) the schema gives property `key`, if it says.
fn declared_types(schema: Option<&JsonObject>, key: &str) -> Vec<String> {
    let Some(prop) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .and_then(|p| p.get(key))
    else {
        return Vec::new();
    };
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// One value typed by the declared types: strings verbatim, anything else
/// parsed as JSON; without a declaration, JSON when it parses, else a string.
pub fn typed_value(types: &[String], raw: &str) -> Result<Value, String> {
    let wants_string = types.iter().any(|t| t == "string");
    let wants_other = types.iter().any(|t| t != "string");
    if wants_string && !wants_other {
        return Ok(Value::String(raw.to_owned()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => Ok(v),
        Err(_) if wants_string || types.is_empty() => Ok(Value::String(raw.to_owned())),
        Err(e) => Err(format!(
            "expected {} but {raw:?} is not valid JSON ({e})",
            types.join(" or ")
        )),
    }
}

/// The `arguments` object from `key=value` / `key:=json` pairs, a single
/// `{…}` argument, or `--args`.
pub fn tool_arguments(
    schema: Option<&JsonObject>,
    pairs: &[String],
    json: Option<&str>,
) -> Result<Option<JsonObject>, String> {
    let mut out = JsonObject::new();
    let parse_object = |text: &str, out: &mut JsonObject| -> Result<(), String> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => {
                out.extend(o);
                Ok(())
            }
            Ok(_) => Err("the JSON arguments must be an object".to_owned()),
            Err(e) => Err(format!("invalid JSON arguments: {e}")),
        }
    };
    if let Some(j) = json {
        parse_object(j, &mut out)?;
    }
    for p in pairs {
        if p.trim_start().starts_with('{') {
            parse_object(p, &mut out)?;
            continue;
        }
        let Some(eq) = p.find('=') else {
            return Err(format!(
                "argument {p:?} is not key=value (or key:=JSON, or a JSON object)"
            ));
        };
        let (key, raw) = (&p[..eq], &p[eq + 1..]);
        let value = if let Some(key) = key.strip_suffix(':') {
            let v = serde_json::from_str::<Value>(raw)
                .map_err(|e| format!("{key}:= wants JSON, got {raw:?} ({e})"))?;
            out.insert(key.to_owned(), v);
            continue;
        } else {
            typed_value(&declared_types(schema, key), raw).map_err(|e| format!("{key}: {e}"))?
        };
        if key.is_empty() {
            return Err(format!("argument {p:?} has an empty name"));
        }
        out.insert(key.to_owned(), value);
    }
    Ok(if out.is_empty() && pairs.is_empty() && json.is_none() {
        None
    } else {
        Some(out)
    })
}

/// Prompt arguments: every value is a string (`key=value`).
pub fn string_pairs(
    pairs: &[String],
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut out = std::collections::BTreeMap::new();
    for p in pairs {
        let Some((k, v)) = p.split_once('=') else {
            return Err(format!("argument {p:?} is not key=value"));
        };
        if k.is_empty() {
            return Err(format!("argument {p:?} has an empty name"));
        }
        out.insert(k.to_owned(), v.to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> JsonObject {
        match json!({"type":"object","properties":{
            "text":{"type":"string"},
            "n":{"type":"integer"},
            "x":{"type":"number"},
            "flag":{"type":"boolean"},
            "obj":{"type":"object"},
            "maybe":{"type":["string","null"]}
        }}) {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    fn args(pairs: &[&str]) -> Result<Option<JsonObject>, String> {
        let pairs: Vec<String> = pairs.iter().map(|s| (*s).to_owned()).collect();
        tool_arguments(Some(&schema()), &pairs, None)
    }

    #[test]
    fn types_follow_the_schema() {
        let a = args(&["text=42", "n=7", "x=1.5", "flag=true", r#"obj={"a":1}"#])
            .unwrap_or_default()
            .unwrap_or_default();
        assert_eq!(
            Value::Object(a),
            json!({"text":"42","n":7,"x":1.5,"flag":true,"obj":{"a":1}})
        );
    }

    #[test]
    fn strings_keep_equals_signs_and_unknown_keys_guess() {
        let a = args(&["text=a=b", "other=3", "word=hello", "maybe=null"])
            .unwrap_or_default()
            .unwrap_or_default();
        assert_eq!(
            Value::Object(a),
            json!({"text":"a=b","other":3,"word":"hello","maybe":null})
        );
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(args(&["n=seven"]).is_err());
        assert!(args(&["flag=yes"]).is_err());
        assert!(args(&["novalue"]).is_err());
        assert!(args(&["=x"]).is_err());
        assert!(args(&["k:=nope"]).is_err());
        assert!(args(&["[1]"]).is_err());
    }

    #[test]
    fn json_object_and_raw_json() {
        let a = args(&[r#"{"text":"hi"}"#, "k:=[1,2]"])
            .unwrap_or_default()
            .unwrap_or_default();
        assert_eq!(Value::Object(a), json!({"text":"hi","k":[1,2]}));
        assert_eq!(args(&[]), Ok(None));
        let e = tool_arguments(None, &[], Some("[]"));
        assert!(e.is_err());
    }

    #[test]
    fn prompt_pairs() {
        let p = string_pairs(&["a=1".into(), "b=x=y".into()]).unwrap_or_default();
        assert_eq!(p.get("b").map(String::as_str), Some("x=y"));
        assert!(string_pairs(&["nope".into()]).is_err());
    }
}
