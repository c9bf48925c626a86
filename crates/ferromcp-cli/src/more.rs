//! `resources`, `read`, `prompts`, `prompt`, `complete`, `listen`.

use crate::Common;
use crate::exit::{Failure, code};
use crate::output::{print_content, print_json, print_text, table, to_value, uri_stem};
use crate::progress::Progress;
use ferromcp_client::protocol::types::{
    CompleteRequestParams, GetPromptRequestParams, MaybeInputRequired, ReadResourceRequestParams,
    ReadResourceResult, ResourceContents, SubscriptionFilter,
};
use ferromcp_client::{Client, Era, RequestOptions, SubscriptionEnd, SubscriptionEvent};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn first_line(s: Option<&str>) -> String {
    s.unwrap_or("").lines().next().unwrap_or("").to_owned()
}

// LEGACY-04
/// A listing of a feature the server does not offer is empty, not an
/// error: say so plainly on stderr (nothing was sent).
pub fn none_offered<T>(
    r: Result<Vec<T>, ferromcp_client::Error>,
    what: &str,
) -> Result<Vec<T>, Failure> {
    match r {
        Err(e) if e.is_not_offered() => {
            eprintln!("mcp: the server offers no {what}");
            Ok(Vec::new())
        }
        other => other.map_err(Failure::from),
    }
}

/// `mcp resources`: static resources and templates.
pub async fn resources(client: &Client, json_out: bool) -> Result<u8, Failure> {
    let resources = none_offered(client.list_resources().await, "resources")?;
    let templates = if resources.is_empty() && !offers_resources(client) {
        Vec::new()
    } else {
        client
            .list_resource_templates()
            .await
            .map_err(Failure::from)?
    };
    if json_out {
        print_json(&json!({ "resources": resources, "resourceTemplates": templates }))?;
        return Ok(code::OK);
    }
    let mut rows: Vec<Vec<String>> = resources
        .iter()
        .map(|r| {
            vec![
                r.uri.clone(),
                r.mime_type.clone().unwrap_or_default(),
                r.title
                    .clone()
                    .unwrap_or_else(|| first_line(r.description.as_deref())),
            ]
        })
        .collect();
    rows.extend(templates.iter().map(|t| {
        vec![
            t.uri_template.clone(),
            "(template)".to_owned(),
            t.title
                .clone()
                .unwrap_or_else(|| first_line(t.description.as_deref())),
        ]
    }));
    table(&["URI", "MIME TYPE", "TITLE / DESCRIPTION"], &rows);
    Ok(code::OK)
}

// MRTR-05
/// Backoff before retrying a state-only `input_required` round.
const STATE_RETRY: Duration = Duration::from_millis(100);

// MRTR-06, MRTR-07
/// `resources/read` to completion, with progress: each `input_required`
/// round is fulfilled by the terminal handlers and retried with the
/// original params, its `inputResponses` and the byte-exact `requestState`,
/// at most `--max-input-rounds` times.
async fn read_rounds(
    client: &Client,
    uri: &str,
    opts: RequestOptions,
    max_rounds: u32,
) -> Result<ReadResourceResult, Failure> {
    let base = match serde_json::to_value(ReadResourceRequestParams::new(uri)) {
        Ok(Value::Object(o)) => o,
        _ => return Err(Failure::usage(format!("cannot encode a read of {uri:?}"))),
    };
    let mut params = base.clone();
    for _ in 0..max_rounds.max(1) {
        let round = client
            .request_round::<ReadResourceResult>("resources/read", params, opts.clone())
            .await
            .map_err(Failure::from)?;
        let ir = match round {
            MaybeInputRequired::Complete(r) => return Ok(r),
            MaybeInputRequired::InputRequired(ir) => ir,
        };
        params = base.clone();
        match &ir.input_requests {
            Some(reqs) if !reqs.is_empty() => {
                let answers = client.fulfil(reqs).await.map_err(Failure::from)?;
                params.insert("inputResponses".into(), to_value(&answers));
            }
            _ => tokio::time::sleep(STATE_RETRY).await,
        }
        if let Some(state) = ir.request_state {
            params.insert("requestState".into(), Value::String(state));
        }
    }
    Err(Failure::protocol(format!(
        "the read of {uri} still needed input after {max_rounds} rounds (--max-input-rounds)"
    )))
}

/// `mcp read URI`: progress shown, Ctrl-C cancels the read.
pub async fn read(
    client: &Client,
    uri: &str,
    common: &Common,
    save_dir: &Path,
    save: Option<&Path>,
) -> Result<u8, Failure> {
    let progress = Progress::new(common.progress);
    let r = progress
        .run(
            "read",
            read_rounds(client, uri, progress.options(), common.max_input_rounds),
        )
        .await?;
    if let Some(file) = save {
        return save_contents(&r.contents, uri, file);
    }
    if common.json {
        print_json(&r)?;
        return Ok(code::OK);
    }
    for c in &r.contents {
        let v = to_value(c);
        if let Some(t) = v.get("text").and_then(Value::as_str) {
            print_text(t);
        } else if let Some(b) = v.get("blob").and_then(Value::as_str) {
            let mime = v.get("mimeType").and_then(Value::as_str).unwrap_or("");
            // Labelled by what the MIME type says it is: a PDF is not an image.
            let kind = if mime.starts_with("image/") {
                "image"
            } else if mime.starts_with("audio/") {
                "audio"
            } else {
                "binary"
            };
            let block = json!({"type": kind, "mimeType": mime, "data": b});
            let uri = v.get("uri").and_then(Value::as_str).unwrap_or(uri);
            print_content(&[block], save_dir, &uri_stem(uri))?;
        }
    }
    Ok(code::OK)
}

/// `mcp read URI --save FILE`: the one content item's text, or its blob
/// decoded, written to `file`; what was written is said on stderr.
fn save_contents(contents: &[ResourceContents], uri: &str, file: &Path) -> Result<u8, Failure> {
    let [c] = contents else {
        return Err(Failure::protocol(format!(
            "{uri} has {} content items; --save writes exactly one",
            contents.len()
        )));
    };
    let (bytes, mime) = match c {
        ResourceContents::Text(t) => (t.text.as_bytes().to_vec(), t.mime_type.as_deref()),
        ResourceContents::Blob(b) => (
            ferromcp_protocol::base64::decode_lenient(&b.blob)
                .ok_or_else(|| Failure::protocol(format!("{uri}: the blob is not valid base64")))?,
            b.mime_type.as_deref(),
        ),
    };
    std::fs::write(file, &bytes)
        .map_err(|e| Failure::new(code::USAGE, format!("cannot write {}: {e}", file.display())))?;
    let app = if c.ui().is_some() || uri.starts_with(ferromcp_client::protocol::types::UI_SCHEME) {
        " (MCP App)"
    } else {
        ""
    };
    eprintln!(
        "saved {} bytes of {}{app} to {}",
        bytes.len(),
        crate::output::printable(mime.unwrap_or("unknown type"), 80),
        file.display()
    );
    Ok(code::OK)
}

/// Whether the server's capabilities (when known) include resources.
fn offers_resources(client: &Client) -> bool {
    client.server_capabilities().resources.is_some()
}

/// `mcp prompts`.
pub async fn prompts(client: &Client, json_out: bool) -> Result<u8, Failure> {
    let prompts = none_offered(client.list_prompts().await, "prompts")?;
    if json_out {
        print_json(&json!({ "prompts": prompts }))?;
        return Ok(code::OK);
    }
    let rows: Vec<Vec<String>> = prompts
        .iter()
        .map(|p| {
            let args = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    if a.required == Some(true) {
                        format!("{}*", a.name)
                    } else {
                        a.name.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            vec![p.name.clone(), args, first_line(p.description.as_deref())]
        })
        .collect();
    table(&["PROMPT", "ARGUMENTS (* required)", "DESCRIPTION"], &rows);
    Ok(code::OK)
}

/// `mcp prompt NAME key=value…`: progress shown, Ctrl-C cancels.
pub async fn prompt(
    client: &Client,
    name: &str,
    arguments: BTreeMap<String, String>,
    common: &Common,
    save_dir: &Path,
) -> Result<u8, Failure> {
    let mut params = GetPromptRequestParams::new(name);
    if !arguments.is_empty() {
        params.arguments = Some(arguments);
    }
    let progress = Progress::new(common.progress);
    let r = progress
        .run("prompt", async {
            client
                .get_prompt(params, progress.options())
                .await
                .map_err(Failure::from)
        })
        .await?;
    if common.json {
        print_json(&r)?;
        return Ok(code::OK);
    }
    if let Some(d) = &r.description {
        out!("# {d}");
    }
    for m in &r.messages {
        out!("[{}]", to_value(&m.role).as_str().unwrap_or("?"));
        print_content(&[to_value(&m.content)], save_dir, name)?;
    }
    Ok(code::OK)
}

/// `mcp complete`: completions for a prompt argument or a template variable.
pub async fn complete(
    client: &Client,
    reference: Value,
    argument: &str,
    context: BTreeMap<String, String>,
    json_out: bool,
) -> Result<u8, Failure> {
    let Some((name, value)) = argument.split_once('=') else {
        return Err(Failure::usage(format!(
            "{argument:?}: give the argument being completed as NAME=PARTIAL"
        )));
    };
    let mut p = json!({"ref": reference, "argument": {"name": name, "value": value}});
    if !context.is_empty() {
        p["context"] = json!({ "arguments": context });
    }
    let params: CompleteRequestParams = serde_json::from_value(p)
        .map_err(|e| Failure::usage(format!("bad completion request: {e}")))?;
    let r = client.complete(params).await.map_err(Failure::from)?;
    if json_out {
        print_json(&r)?;
        return Ok(code::OK);
    }
    for v in &r.completion.values {
        out!("{v}");
    }
    if r.completion.values.is_empty() {
        eprintln!("(no completions)");
    }
    if r.completion.has_more == Some(true) {
        let total = r
            .completion
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        eprintln!(
            "({} shown{total}; more available)",
            r.completion.values.len()
        );
    }
    Ok(code::OK)
}

/// What `mcp listen` asks for.
#[derive(Debug, Clone, Default)]
pub struct ListenWhat {
    /// Tool list changes.
    pub tools: bool,
    /// Prompt list changes.
    pub prompts: bool,
    /// Resource list changes.
    pub resources: bool,
    /// Updates of these resources.
    pub uris: Vec<String>,
    /// Stop after this many notifications.
    pub count: Option<u64>,
    /// Listen again after a lost or ended stream (modern).
    pub relisten: bool,
}

/// A plain or a resilient listen.
enum Listening {
    Plain(ferromcp_client::Subscription),
    Resilient(ferromcp_client::ResilientSubscription),
}

impl Listening {
    async fn next(&mut self) -> Result<SubscriptionEvent, SubscriptionEnd> {
        match self {
            Self::Plain(s) => s.next().await,
            Self::Resilient(s) => s.next().await,
        }
    }
}

fn print_event(json_out: bool, method: &str, params: Option<&Value>) {
    if json_out {
        let line = json!({"method": method, "params": params});
        out!("{line}");
    } else {
        let detail = match params {
            Some(p) => match p.get("uri").and_then(Value::as_str) {
                Some(u) => u.to_owned(),
                None if p.as_object().is_some_and(|o| !o.is_empty()) => p.to_string(),
                None => String::new(),
            },
            None => String::new(),
        };
        if detail.is_empty() {
            out!("{method}");
        } else {
            out!("{method} {detail}");
        }
    }
}

/// `mcp listen`: prints notifications until Ctrl-C, `--count` or the end
/// of the subscription. Handshake-era notices arrive through `notices`.
pub async fn listen(
    client: &Client,
    what: ListenWhat,
    mut notices: tokio::sync::mpsc::UnboundedReceiver<(String, Option<Value>)>,
    common: &Common,
) -> Result<u8, Failure> {
    let all = !what.tools && !what.prompts && !what.resources && what.uris.is_empty();
    let mut seen = 0u64;
    let done = |seen: u64| what.count.is_some_and(|c| seen >= c);
    if client.era() == Era::Modern {
        let filter = SubscriptionFilter {
            tools_list_changed: (all || what.tools).then_some(true),
            prompts_list_changed: (all || what.prompts).then_some(true),
            resources_list_changed: (all || what.resources).then_some(true),
            resource_subscriptions: (!what.uris.is_empty()).then(|| what.uris.clone()),
        };
        let mut sub = if what.relisten {
            let policy = ferromcp_client::RetryPolicy::new()
                .max_attempts(u32::MAX)
                .max_total(std::time::Duration::from_secs(300));
            Listening::Resilient(
                client
                    .listen_resilient(filter, policy)
                    .await
                    .map_err(Failure::from)?,
            )
        } else {
            Listening::Plain(client.listen(filter).await.map_err(Failure::from)?)
        };
        eprintln!("listening (modern subscriptions/listen); Ctrl-C to stop");
        loop {
            if done(seen) {
                return Ok(code::OK);
            }
            let ev = tokio::select! {
                ev = sub.next() => ev,
                _ = tokio::signal::ctrl_c() => return Ok(code::OK),
            };
            match ev {
                Ok(SubscriptionEvent::Relistened { after_loss }) => {
                    let why = if after_loss {
                        "the stream broke"
                    } else {
                        "the server ended the stream"
                    };
                    eprintln!("{why}; listening again (changes in between may have been missed)");
                }
                Ok(e) => {
                    let (m, p) = match e {
                        SubscriptionEvent::ToolsListChanged => {
                            ("notifications/tools/list_changed".to_owned(), None)
                        }
                        SubscriptionEvent::PromptsListChanged => {
                            ("notifications/prompts/list_changed".to_owned(), None)
                        }
                        SubscriptionEvent::ResourcesListChanged => {
                            ("notifications/resources/list_changed".to_owned(), None)
                        }
                        SubscriptionEvent::ResourceUpdated { uri } => (
                            "notifications/resources/updated".to_owned(),
                            Some(json!({"uri": uri})),
                        ),
                        SubscriptionEvent::Other { method, params } => (method, params),
                        SubscriptionEvent::Relistened { .. } => continue,
                    };
                    print_event(common.json, &m, p.as_ref());
                    seen += 1;
                }
                Err(SubscriptionEnd::Completed) | Err(SubscriptionEnd::CancelledByServer) => {
                    eprintln!("the server ended the subscription");
                    return Ok(code::OK);
                }
                Err(SubscriptionEnd::Failed(e)) => {
                    return Err(Failure::protocol(format!(
                        "server error {}: {}",
                        e.code, e.message
                    )));
                }
                Err(SubscriptionEnd::Lost(e)) => return Err(Failure::from(e)),
            }
        }
    }
    for u in &what.uris {
        client.subscribe_resource(u).await.map_err(Failure::from)?;
    }
    eprintln!("listening (handshake-era notifications); Ctrl-C to stop");
    loop {
        if done(seen) {
            return Ok(code::OK);
        }
        let n = tokio::select! {
            n = notices.recv() => n,
            _ = tokio::signal::ctrl_c() => return Ok(code::OK),
        };
        let Some((method, params)) = n else {
            return Err(Failure::transport("the connection closed"));
        };
        let wanted = match method.as_str() {
            "notifications/tools/list_changed" => all || what.tools,
            "notifications/prompts/list_changed" => all || what.prompts,
            "notifications/resources/list_changed" => all || what.resources,
            "notifications/resources/updated" => true,
            _ => all,
        };
        if wanted {
            print_event(common.json, &method, params.as_ref());
            seen += 1;
        }
    }
}
