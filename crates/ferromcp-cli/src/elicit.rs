//! Elicitation in a terminal: form fields become prompts on stderr read
//! from stdin (types, defaults and enums honoured); URL mode prints the URL
//! and opens it in a browser if the user says so. `--no-input` refuses
//! instead (exit code 5).

use crate::exit::{Failure, code};
use ferromcp_client::HandlerError;
use ferromcp_client::protocol::types::{ElicitRequestParams, ElicitResult, ElicitationSchema};
use serde_json::{Map, Value, json};
use std::io::{BufRead, Write};
use std::sync::Arc;

/// Serialises prompts: several input requests may arrive at once.
static TERMINAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Set when a request for input was refused because of `--no-input`.
pub static NEEDED_INPUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reads one line from stdin; `None` at end of input.
async fn read_line() -> Option<String> {
    tokio::task::spawn_blocking(|| {
        let mut s = String::new();
        match std::io::stdin().lock().read_line(&mut s) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(s.trim_end_matches(['\n', '\r']).to_owned()),
        }
    })
    .await
    .ok()
    .flatten()
}

fn ask(prompt: &str) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "{prompt}");
    let _ = e.flush();
}

/// The allowed values of a property, with their titles.
fn choices(p: &Value) -> Vec<(String, String)> {
    let items = p.get("items").unwrap_or(p);
    if let Some(e) = items.get("enum").and_then(Value::as_array) {
        let names = items.get("enumNames").and_then(Value::as_array);
        return e
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = v.as_str()?.to_owned();
                let t = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .unwrap_or(&v)
                    .to_owned();
                Some((v, t))
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = items.get(key).and_then(Value::as_array) {
            return alts
                .iter()
                .filter_map(|a| {
                    let v = a.get("const")?.as_str()?.to_owned();
                    let t = a
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or(&v)
                        .to_owned();
                    Some((v, t))
                })
                .collect();
        }
    }
    Vec::new()
}

/// Parses one answer for property `p`; `Err` says what is wrong.
pub fn parse_answer(p: &Value, raw: &str) -> Result<Value, String> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("string");
    let ch = choices(p);
    let pick = |s: &str| -> Result<String, String> {
        if ch.is_empty() {
            return Ok(s.to_owned());
        }
        if let Some((v, _)) = ch.iter().find(|(v, t)| v == s || t == s) {
            return Ok(v.clone());
        }
        if let Ok(i) = s.parse::<usize>()
            && let Some((v, _)) = i.checked_sub(1).and_then(|i| ch.get(i))
        {
            return Ok(v.clone());
        }
        Err(format!(
            "choose one of {}",
            ch.iter()
                .map(|(v, _)| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    match ty {
        "boolean" => match raw.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".into()),
        },
        "integer" => raw
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "expected a whole number".into()),
        "number" => match raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            Some(n) => Ok(Value::Number(n)),
            None => Err("expected a number".into()),
        },
        "array" => raw
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| pick(s).map(Value::String))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => pick(raw).map(Value::String),
    }
}

/// Asks for a form; `None` when input ended (cancel).
/// The fields are asked in the server's order (the schema keeps the wire
/// order of `properties`), not alphabetically.
async fn form(message: &str, schema: &ElicitationSchema) -> Option<Map<String, Value>> {
    let required: Vec<&str> = schema
        .required
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    eprintln!("\nThe server asks: {message}");
    let mut out = Map::new();
    for (name, p) in &schema.properties {
        let p = &serde_json::to_value(p).unwrap_or(Value::Null);
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("string");
        let ch = choices(p);
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            eprintln!("  {d}");
        }
        for (i, (v, t)) in ch.iter().enumerate() {
            if v == t {
                eprintln!("    {}) {v}", i + 1);
            } else {
                eprintln!("    {}) {v} ({t})", i + 1);
            }
        }
        let default = p.get("default");
        let req = required.contains(&name.as_str());
        let mut hint = ty.to_owned();
        if ty == "array" {
            hint.push_str(", comma-separated");
        }
        if let Some(d) = default {
            hint.push_str(&format!(", default {d}"));
        } else if !req {
            hint.push_str(", optional");
        }
        loop {
            ask(&format!("{name} ({hint}): "));
            let line = read_line().await?;
            let line = line.trim();
            if line.is_empty() {
                if let Some(d) = default {
                    out.insert(name.clone(), d.clone());
                    break;
                }
                if !req {
                    break;
                }
                eprintln!("  required");
                continue;
            }
            match parse_answer(p, line) {
                Ok(v) => {
                    out.insert(name.clone(), v);
                    break;
                }
                Err(e) => eprintln!("  {e}"),
            }
        }
    }
    Some(out)
}

/// A form answered from `--answer FIELD=VALUE` options, without prompts:
/// each value parsed as its field's type. `Ok(None)` without answers;
/// an error for a field the form does not have, a value that does not
/// parse, or a required field (without default) left unanswered.
fn scripted(
    schema: &ElicitationSchema,
    answers: &[String],
) -> Result<Option<Map<String, Value>>, String> {
    if answers.is_empty() {
        return Ok(None);
    }
    let fields: Vec<&str> = schema.properties.keys().map(String::as_str).collect();
    let mut given: Vec<(&str, &str)> = Vec::new();
    for a in answers {
        let Some((name, value)) = a.split_once('=') else {
            return Err(format!("--answer {a:?}: expected FIELD=VALUE"));
        };
        if !fields.contains(&name) {
            return Err(format!(
                "--answer {name}: the form has no such field (its fields: {})",
                fields.join(", ")
            ));
        }
        given.push((name, value));
    }
    let required: Vec<&str> = schema
        .required
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut out = Map::new();
    for (name, p) in &schema.properties {
        let p = serde_json::to_value(p).unwrap_or(Value::Null);
        match given.iter().rev().find(|(n, _)| n == name) {
            Some((_, raw)) => {
                let v =
                    parse_answer(&p, raw.trim()).map_err(|e| format!("--answer {name}: {e}"))?;
                out.insert(name.clone(), v);
            }
            None => match p.get("default") {
                Some(d) => {
                    out.insert(name.clone(), d.clone());
                }
                None if required.contains(&name.as_str()) => {
                    return Err(format!("--answer: no value for the required field {name}"));
                }
                None => {}
            },
        }
    }
    Ok(Some(out))
}

fn result(v: Value) -> Result<ElicitResult, HandlerError> {
    serde_json::from_value(v).map_err(|e| HandlerError::new(format!("bad elicitation answer: {e}")))
}

/// Answers one elicitation request in the terminal.
pub async fn answer(
    params: ElicitRequestParams,
    no_input: bool,
    answers: &[String],
) -> Result<ElicitResult, HandlerError> {
    // Scripted answers need no terminal, with --no-input too.
    let scripted_form = match &params {
        ElicitRequestParams::Form(f) => {
            scripted(&f.requested_schema, answers).map_err(HandlerError::new)?
        }
        ElicitRequestParams::Url(_) => None,
    };
    if let Some(content) = scripted_form {
        return result(json!({"action": "accept", "content": content}));
    }
    if no_input {
        NEEDED_INPUT.store(true, std::sync::atomic::Ordering::Release);
        return Err(HandlerError::new(format!(
            "the server asks for input ({:?}) but --no-input was given",
            params.message()
        )));
    }
    let _guard = TERMINAL.lock().await;
    let _hidden = crate::progress::pause();
    match params {
        ElicitRequestParams::Url(u) => {
            // URL mode: show the URL, open it only with the user's consent.
            eprintln!(
                "\nThe server asks: {}\nIt wants you to open this URL:\n  {}",
                u.message, u.url
            );
            ask("Open it in your browser? [y/N] ");
            let Some(l) = read_line().await else {
                return result(json!({"action": "cancel"}));
            };
            if l.trim().eq_ignore_ascii_case("y") {
                match crate::browser::open(&u.url) {
                    Some(program) => eprintln!("(opened with {program})"),
                    None => eprintln!("(no browser to open it with: open it yourself)"),
                }
            }
            ask("Press Enter when done, or type n to decline: ");
            match read_line().await {
                None => result(json!({"action": "cancel"})),
                Some(l) if l.trim().eq_ignore_ascii_case("n") => {
                    result(json!({"action": "decline"}))
                }
                Some(_) => result(json!({"action": "accept"})),
            }
        }
        ElicitRequestParams::Form(f) => match form(&f.message, &f.requested_schema).await {
            None => {
                eprintln!("(input ended: cancelled)");
                result(json!({"action": "cancel"}))
            }
            Some(content) => {
                ask("Send? [Y/n] ");
                match read_line().await {
                    None => result(json!({"action": "cancel"})),
                    Some(l) if l.trim().eq_ignore_ascii_case("n") => {
                        result(json!({"action": "decline"}))
                    }
                    Some(_) => result(json!({"action": "accept", "content": content})),
                }
            }
        },
    }
}

/// The handler for the client builder.
pub fn handler(
    no_input: bool,
    answers: Vec<String>,
) -> impl Fn(
    ElicitRequestParams,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ElicitResult, HandlerError>> + Send>,
> + Send
+ Sync
+ 'static {
    let answers: Arc<[String]> = answers.into();
    move |p| {
        let answers = answers.clone();
        Box::pin(async move { answer(p, no_input, &answers).await })
    }
}

// LEGACY-22
/// Runs `attempt` and, while it fails with -32042 (URL elicitation required),
/// shows each interaction's message and URL, offers to open it,
/// and retries once the user says it is done, at most `max_rounds` times.
///
/// Without a terminal conversation (`no_input`) or with `json_out` (the
/// interactions are printed as JSON on stdout), and when the user declines,
/// the command ends with [`code::NEEDS_URL_INTERACTION`].
pub async fn with_url_interactions<F, Fut>(
    no_input: bool,
    json_out: bool,
    max_rounds: u32,
    mut attempt: F,
) -> Result<u8, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u8, Failure>>,
{
    let mut rounds = 0;
    loop {
        let f = match attempt().await {
            Err(f) if !f.url_elicitations.is_empty() => f,
            other => return other,
        };
        let stop = |why: &str| {
            Failure::new(
                code::NEEDS_URL_INTERACTION,
                format!("{} ({why})", f.message),
            )
        };
        if json_out {
            crate::output::print_json(&json!({
                "error": {"code": -32042, "message": f.message},
                "urlElicitations": f.url_elicitations,
            }))?;
            return Err(stop(
                "complete the interactions above, then run the command again",
            ));
        }
        let _guard = TERMINAL.lock().await;
        eprintln!("\nThe server needs you to complete this first:");
        for u in &f.url_elicitations {
            eprintln!("  {}\n    {}", u.message, u.url);
        }
        if no_input {
            return Err(stop(
                "--no-input was given: open the URLs, then run the command again",
            ));
        }
        if rounds >= max_rounds {
            return Err(stop("still required after the retries"));
        }
        rounds += 1;
        for u in &f.url_elicitations {
            ask(&format!("Open {} in your browser? [y/N] ", u.url));
            let Some(l) = read_line().await else {
                return Err(stop("input ended"));
            };
            if l.trim().eq_ignore_ascii_case("y") {
                match crate::browser::open(&u.url) {
                    Some(program) => eprintln!("(opened with {program})"),
                    None => eprintln!("(no browser to open it with: open it yourself)"),
                }
            }
        }
        ask("Press Enter to retry when done, or type n to stop: ");
        match read_line().await {
            Some(l) if !l.trim().eq_ignore_ascii_case("n") => {}
            _ => return Err(stop("not retried")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 30 item 11: `--answer FIELD=VALUE` fills a form by name.
    #[test]
    fn scripted_answers_fill_the_form_by_field() {
        // From text: the form keeps the server's field order.
        let schema: ElicitationSchema = serde_json::from_str(
            r#"{"type": "object", "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer"},
                "newsletter": {"type": "boolean", "default": false},
                "plan": {"type": "string"}
            }, "required": ["name", "age"]}"#,
        )
        .unwrap_or_default();
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let out = scripted(&schema, &a(&["age=36", "name=Ada"]));
        assert_eq!(
            out.map(|o| o.map(Value::Object)),
            Ok(Some(json!({"name": "Ada", "age": 36, "newsletter": false})))
        );
        assert_eq!(scripted(&schema, &[]), Ok(None));
        let e = scripted(&schema, &a(&["nmae=Ada"])).unwrap_err();
        assert!(
            e.contains("no such field") && e.contains("name, age"),
            "{e}"
        );
        let e = scripted(&schema, &a(&["name=Ada", "age=old"])).unwrap_err();
        assert!(e.starts_with("--answer age:"), "{e}");
        let e = scripted(&schema, &a(&["name=Ada"])).unwrap_err();
        assert!(e.contains("required field age"), "{e}");
    }

    #[test]
    fn answers_are_typed() {
        let b = json!({"type":"boolean"});
        assert_eq!(parse_answer(&b, "y"), Ok(json!(true)));
        assert!(parse_answer(&b, "maybe").is_err());
        assert_eq!(
            parse_answer(&json!({"type":"integer"}), "30"),
            Ok(json!(30))
        );
        assert!(parse_answer(&json!({"type":"integer"}), "3.5").is_err());
        assert_eq!(
            parse_answer(&json!({"type":"number"}), "2.5"),
            Ok(json!(2.5))
        );
        let e = json!({"type":"string","enum":["a","b"]});
        assert_eq!(parse_answer(&e, "2"), Ok(json!("b")));
        assert!(parse_answer(&e, "c").is_err());
        let t = json!({"type":"string","oneOf":[{"const":"v1","title":"First"}]});
        assert_eq!(parse_answer(&t, "First"), Ok(json!("v1")));
        let m = json!({"type":"array","items":{"type":"string","enum":["x","y"]}});
        assert_eq!(parse_answer(&m, "x, 2"), Ok(json!(["x", "y"])));
    }
}
