//! Readable and `--json` output of each subcommand.

use crate::Common;
use crate::exit::{Failure, code};
use crate::progress::Progress;
use ferromcp_client::Client;
use ferromcp_client::Era;
use ferromcp_client::protocol::types::{CallToolRequestParams, CallToolResult, Tool};
use ferromcp_protocol::base64;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Prints `v` as pretty JSON.
pub fn print_json<T: Serialize>(v: &T) -> Result<(), Failure> {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| Failure::protocol(format!("cannot encode the output: {e}")))?;
    out!("{s}");
    Ok(())
}

/// Serialises `v` to a JSON value (never fails for the SDK's types).
pub fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Prints rows as left-aligned columns; the last column is not padded and
/// is cut to fit a typical terminal.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(width[i].saturating_sub(c.chars().count()) + 2));
            }
        }
        out!("{}", out.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

fn era_name(e: Era) -> &'static str {
    match e {
        Era::Modern => "modern",
        Era::Handshake => "handshake",
    }
}

/// `mcp discover`.
pub async fn discover(client: &Client, json_out: bool) -> Result<u8, Failure> {
    let discovered = if client.era() == Era::Modern {
        Some(client.discover().await.map_err(Failure::from)?)
    } else {
        None
    };
    let info = client.server_info();
    let caps = client.server_capabilities();
    let supported: Vec<String> = discovered
        .as_ref()
        .map(|d| d.supported_versions.clone())
        .unwrap_or_default();
    if json_out {
        print_json(&json!({
            "era": era_name(client.era()),
            "protocolVersion": client.protocol_version().to_string(),
            "transport": format!("{:?}", client.transport_kind()).to_lowercase(),
            "supportedVersions": supported,
            "serverInfo": info,
            "capabilities": caps,
            "instructions": client.instructions(),
        }))?;
        return Ok(code::OK);
    }
    out!("era:          {}", era_name(client.era()));
    out!("version:      {}", client.protocol_version());
    out!(
        "transport:    {}",
        format!("{:?}", client.transport_kind()).to_lowercase()
    );
    if !supported.is_empty() {
        out!("supported:    {}", supported.join(", "));
    }
    if let Some(i) = &info {
        out!("server:       {} {}", i.name, i.version);
    }
    let caps_v = to_value(&caps);
    if let Value::Object(m) = &caps_v {
        let names: Vec<String> = m
            .iter()
            .map(|(k, v)| match v {
                Value::Object(o) if !o.is_empty() => {
                    let flags: Vec<&str> = o
                        .iter()
                        .filter(|(_, v)| v.as_bool() == Some(true))
                        .map(|(k, _)| k.as_str())
                        .collect();
                    if flags.is_empty() {
                        k.clone()
                    } else {
                        format!("{k} ({})", flags.join(", "))
                    }
                }
                _ => k.clone(),
            })
            .collect();
        out!("capabilities: {}", names.join(", "));
    }
    if let Some(i) = client.instructions() {
        out!("instructions: {i}");
    }
    Ok(code::OK)
}

/// A one-line summary of a tool's arguments: `text*:string n:integer`.
pub fn schema_summary(schema: &Map<String, Value>) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    props
        .iter()
        .map(|(k, p)| {
            let p = resolve_ref(schema, p);
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ if p.get("enum").is_some() || is_const_union(p) => "enum".to_owned(),
                _ => "any".to_owned(),
            };
            let star = if required.contains(&k.as_str()) {
                "*"
            } else {
                ""
            };
            format!("{k}{star}:{ty}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Follows local `$ref`s (`#/$defs/Mode`, `#/definitions/…`, any JSON
/// pointer into the tool's own schema), and an `allOf` of one `$ref`, so a
/// derived enum or struct shows its type rather than `any`. Bounded: a
/// reference cycle or a remote reference stops where it is.
fn resolve_ref<'a>(root: &'a Map<String, Value>, mut p: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let only_ref = p
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1)
            .and_then(|a| a.first());
        let reference = p
            .get("$ref")
            .or_else(|| only_ref.and_then(|o| o.get("$ref")))
            .and_then(Value::as_str);
        let Some(pointer) = reference.and_then(|r| r.strip_prefix('#')) else {
            return p;
        };
        // `#/$defs/Mode`: the first token names a member of the root
        // object, the rest is a JSON pointer into it.
        let Some(path) = pointer.strip_prefix('/') else {
            return p;
        };
        let (first, rest) = match path.find('/') {
            Some(i) => path.split_at(i),
            None => (path, ""),
        };
        let first = first.replace("~1", "/").replace("~0", "~");
        let at = root.get(&first).and_then(|v| v.pointer(rest));
        match at {
            Some(target) => p = target,
            None => return p,
        }
    }
    p
}

/// `oneOf`/`anyOf` of constants: how derived enums with documented variants
/// come out.
fn is_const_union(p: &Value) -> bool {
    ["oneOf", "anyOf"].iter().any(|k| {
        p.get(*k).and_then(Value::as_array).is_some_and(|a| {
            !a.is_empty()
                && a.iter()
                    .all(|v| v.get("const").is_some() || v.get("enum").is_some())
        })
    })
}

pub fn one_line(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        first.to_owned()
    }
}

/// `mcp tools`.
pub fn tools(tools: &[Tool], json_out: bool) -> Result<u8, Failure> {
    if json_out {
        print_json(&json!({ "tools": tools }))?;
        return Ok(code::OK);
    }
    // MCP Apps: an APP column only when some tool has one, so the table
    // of a server without apps is unchanged.
    let apps = tools.iter().any(|t| t.ui().is_some());
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let mut row = vec![
                t.name.clone(),
                one_line(&schema_summary(&t.input_schema), 40),
                one_line(t.description.as_deref().unwrap_or(""), 60),
            ];
            if apps {
                row.push(app_cell(t));
            }
            row
        })
        .collect();
    if apps {
        table(
            &["TOOL", "ARGUMENTS (* required)", "DESCRIPTION", "APP"],
            &rows,
        );
    } else {
        table(&["TOOL", "ARGUMENTS (* required)", "DESCRIPTION"], &rows);
    }
    Ok(code::OK)
}

/// The APP cell of `mcp tools`: the tool's `ui://` resource, and
/// `(app only)` when hosts keep it from the model.
fn app_cell(t: &Tool) -> String {
    let Some(ui) = t.ui() else {
        return String::new();
    };
    let uri = printable(ui.resource_uri.as_deref().unwrap_or("(no resource)"), 80);
    if ui.visible_to_model() {
        uri
    } else {
        format!("{uri} (app only)")
    }
}

/// A server-given string made safe for one table cell or message line:
/// control characters (terminal escapes, newlines) dropped, at most `max`
/// characters.
pub fn printable(s: &str, max: usize) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).collect();
    one_line(&clean, max)
}

/// Options of `mcp call`.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// `--json`.
    pub json: bool,
    /// Where images and audio go.
    pub save_dir: PathBuf,
}

/// `mcp call`: progress shown, Ctrl-C cancels the call.
pub async fn call(
    client: &Client,
    tool: &str,
    arguments: Option<Map<String, Value>>,
    common: &Common,
    opts: &CallOptions,
) -> Result<u8, Failure> {
    let params = CallToolRequestParams::new(tool, arguments);
    let progress = Progress::new(common.progress);
    let result = progress
        .run("call", async {
            client
                .call_tool_with(params, progress.options())
                .await
                .map_err(Failure::from)
        })
        .await?;
    render_call(&result, tool, opts)
}

/// `mcp call --task`: lets the server run the call as a task (tasks
/// extension), shows its status while polling, and prints the result like
/// `mcp call`. Ctrl-C cancels the task (`tasks/cancel`).
pub async fn call_task(
    client: &Client,
    tool: &str,
    arguments: Option<Map<String, Value>>,
    common: &Common,
    opts: &CallOptions,
) -> Result<u8, Failure> {
    let params = CallToolRequestParams::new(tool, arguments.clone());
    let show = common.progress != crate::progress::ProgressMode::Never;
    let outcome = match client
        .call_tool_as_task(params, ferromcp_client::RequestOptions::new())
        .await
    {
        Ok(o) => o,
        // Handshake-era servers know no tasks: a plain call.
        Err(e) if e.is_unsupported() => return call(client, tool, arguments, common, opts).await,
        Err(e) => return Err(Failure::from(e)),
    };
    let task = match outcome {
        ferromcp_client::ToolCallOutcome::Complete(r) => return render_call(&r, tool, opts),
        ferromcp_client::ToolCallOutcome::Task(t) => t.task,
    };
    if show {
        eprintln!("task {} {}", task.task_id, task.status.as_str());
    }
    let id = task.task_id.clone();
    let done = wait_shown(client, &id, show).await?;
    render_task(&done, tool, opts)
}

/// Polls task `id` to its end, printing each new status line on stderr when
/// `show`; Ctrl-C cancels the task and fails with exit code 130.
pub async fn wait_shown(
    client: &Client,
    id: &str,
    show: bool,
) -> Result<ferromcp_protocol::types::GetTaskResult, Failure> {
    let mut last = String::new();
    let wait = client.wait_task(id, |t| {
        let line = format!(
            "task {} {}{}",
            t.task.task_id,
            t.task.status.as_str(),
            t.task
                .status_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        );
        if show && line != last {
            eprintln!("{line}");
            last = line;
        }
    });
    tokio::select! {
        r = wait => r.map_err(Failure::from),
        _ = tokio::signal::ctrl_c() => {
            let _ = client.cancel_task(id).await;
            Err(Failure::new(
                code::INTERRUPTED,
                format!("interrupted; task {id} was asked to cancel"),
            ))
        }
    }
}

/// Prints a terminal task: its tool result like `mcp call`, or its error.
pub fn render_task(
    t: &ferromcp_protocol::types::GetTaskResult,
    tool: &str,
    opts: &CallOptions,
) -> Result<u8, Failure> {
    if t.task.status == ferromcp_protocol::types::TaskStatus::Cancelled {
        return Err(Failure::protocol(format!(
            "task {} was cancelled",
            t.task.task_id
        )));
    }
    match ferromcp_client::task_outcome(t.clone()) {
        Ok(r) => render_call(&r, tool, opts),
        Err(e) => Err(Failure::from(e)),
    }
}

/// Prints a tool result; the exit code says whether the tool reported an error.
pub fn render_call(result: &CallToolResult, tool: &str, opts: &CallOptions) -> Result<u8, Failure> {
    let is_error = result.is_error == Some(true);
    if opts.json {
        print_json(result)?;
    } else {
        let blocks: Vec<Value> = result.content.iter().map(to_value).collect();
        print_content(&blocks, &opts.save_dir, tool)?;
        if let Some(s) = &result.structured_content
            && blocks.is_empty()
        {
            print_json(s)?;
        }
        if is_error {
            eprintln!("mcp: the tool reported an error");
        }
    }
    Ok(if is_error { code::TOOL_ERROR } else { code::OK })
}

/// Prints `text`, ending it with a newline unless it has one.
pub fn print_text(text: &str) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = o.write_all(b"\n");
    }
}

/// Prints content blocks: text as is, images and audio saved to files.
pub fn print_content(blocks: &[Value], save_dir: &Path, stem: &str) -> Result<(), Failure> {
    for (i, b) in blocks.iter().enumerate() {
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "text" => print_text(b.get("text").and_then(Value::as_str).unwrap_or("")),
            // "binary": a resource blob that is neither image nor audio.
            "image" | "audio" | "binary" => {
                let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("");
                let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                let bytes = base64::decode_lenient(data).ok_or_else(|| {
                    Failure::protocol(format!("the {ty} block is not valid base64"))
                })?;
                let name = format!("{}-{}", safe_stem(stem), i + 1);
                let path = save_new(save_dir, &name, extension(mime), &bytes)?;
                let mime = if mime.is_empty() {
                    "(no MIME type)"
                } else {
                    mime
                };
                out!(
                    "[{ty} {mime}, {} bytes saved to {}]",
                    bytes.len(),
                    path.display()
                );
            }
            "resource" => {
                let r = b.get("resource").cloned().unwrap_or(Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                out!("[resource {uri}]");
                if let Some(t) = r.get("text").and_then(Value::as_str) {
                    print_text(t);
                } else if let Some(bl) = r.get("blob").and_then(Value::as_str) {
                    out!(
                        "({} bytes of binary data)",
                        base64::decode_lenient(bl).map_or(0, |b| b.len())
                    );
                }
            }
            "resource_link" => {
                let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
                out!("[resource link {uri}] (mcp read {uri})");
            }
            _ => print_json(b)?,
        }
    }
    Ok(())
}

/// How many numbered variants of a file name are tried before giving up.
const MAX_NAME_TRIES: u32 = 1000;

/// Writes `bytes` to `dir/name.ext`, or `dir/name-2.ext`, `-3`… when that
/// exists: an existing file is never overwritten.
fn save_new(dir: &Path, name: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf, Failure> {
    use std::io::Write as _;
    for n in 1..=MAX_NAME_TRIES {
        let path = if n == 1 {
            dir.join(format!("{name}.{ext}"))
        } else {
            dir.join(format!("{name}-{n}.{ext}"))
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(bytes).map_err(|e| {
                    Failure::transport(format!("cannot write {}: {e}", path.display()))
                })?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Failure::transport(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
        }
    }
    Err(Failure::transport(format!(
        "cannot save {name}.{ext} in {}: {MAX_NAME_TRIES} names taken",
        dir.display()
    )))
}

/// A file name stem for a resource: the last segment of its URI path.
pub fn uri_stem(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or("");
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let last = last.rsplit_once('.').map_or(last, |(a, _)| a);
    safe_stem(last)
}

fn safe_stem(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() { "content".into() } else { t }
}

/// A file extension for a MIME type.
pub fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/csv" => "csv",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A hostile server's `_meta.ui.resourceUri` cannot drive the terminal.
    #[test]
    fn app_cell_drops_terminal_escapes() {
        let mut t = Tool::new("evil", Tool::no_arguments_schema());
        let mut meta = serde_json::Map::new();
        meta.insert(
            "ui".into(),
            json!({"resourceUri": "ui://e/\u{1b}]0;pwned\u{7}\nx", "visibility": ["app"]}),
        );
        t.meta = Some(meta);
        assert_eq!(app_cell(&t), "ui://e/]0;pwnedx (app only)");
        let plain = Tool::new("plain", Tool::no_arguments_schema());
        assert_eq!(app_cell(&plain), "");
    }

    #[test]
    fn summaries() {
        let s = json!({"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}}});
        let Value::Object(m) = s else { return };
        assert_eq!(schema_summary(&m), "a*:string b:integer|null");
    }

    #[test]
    fn summary_follows_local_refs() {
        let v = json!({
            "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "pos": {"allOf": [{"$ref": "#/$defs/Point"}]},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                "loop": {"$ref": "#/$defs/Loop"},
                "far": {"$ref": "https://example.com/schema"}
            },
            "required": ["mode"],
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "slow"]},
                "Point": {"type": "object"},
                "Loop": {"$ref": "#/$defs/Loop"}
            }
        });
        let Value::Object(m) = v else { unreachable!() };
        assert_eq!(
            schema_summary(&m),
            "far:any kind:enum loop:any mode*:string pos:object"
        );
        assert_eq!(one_line("abcdef\nx", 4), "abc…");
        assert_eq!(safe_stem("a/b"), "a_b");
        assert_eq!(uri_stem("test://static-binary"), "static-binary");
        assert_eq!(uri_stem("file:///x/pic.png?v=1"), "pic");
        assert_eq!(uri_stem("test://"), "test_");
    }

    #[test]
    fn saving_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-save-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let a = save_new(&dir, "x-1", "png", b"one").map_err(|f| f.message);
        let b = save_new(&dir, "x-1", "png", b"two").map_err(|f| f.message);
        assert_eq!(a, Ok(dir.join("x-1.png")));
        assert_eq!(b, Ok(dir.join("x-1-2.png")));
        assert_eq!(
            std::fs::read(dir.join("x-1.png")).ok(),
            Some(b"one".to_vec())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
