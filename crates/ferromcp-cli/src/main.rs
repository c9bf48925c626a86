//! `mcp`: talk to any MCP server from a terminal, and serve the built-in ones.
//!
//! A server is given as a URL (`mcp tools http://127.0.0.1:8080/mcp`, or
//! `--server URL`, or `$MCP_SERVER`) or as a command after `--`
//! (`mcp tools -- everything-server --stdio`).

/// `println!` that ignores a closed stdout (`mcp tools | head`).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod args;
mod auth;
mod bridge;
mod bridge_expose;
mod bridge_log;
mod browser;
mod cargo_toml;
mod check;
mod connect;
mod elicit;
mod exit;
mod gateway;
mod gateway_metrics;
mod gateway_reload;
mod hosts;
mod jsonc;
mod more;
mod output;
mod pack;
mod paste;
mod progress;
mod registry;
mod registry_cmd;
mod registry_publish;
mod resource_auth;
mod serve;
mod skills;
mod zip;

use clap::{Args, Parser, Subcommand, ValueEnum};
use exit::{Failure, code};
use std::process::ExitCode;

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    the tool ran and reported an error (isError: true)
  2    usage error (bad arguments, bad URL, unknown tool)
  3    protocol error (the server answered with a JSON-RPC error, or
       sent something invalid, or no protocol version could be agreed)
  4    transport failure (cannot connect or spawn, connection lost, timeout)
  5    the server needs input from the user, but --no-input was given
  6    authorization needed or refused (run `mcp login URL`)
  7    the server needs you to complete an interaction at a URL first
       (URL elicitation required) and it was not done (--no-input, --json,
       declined); the URLs are printed
  130  interrupted (Ctrl-C; the request was cancelled)

Server: a URL as the first argument (or --server URL, or $MCP_SERVER), or a
command after `--` for stdio:
  mcp tools http://127.0.0.1:8080/mcp
  mcp call echo text=hello -- mcp serve --stdio";

/// Talk to any MCP server from a terminal, and serve the built-in ones.
#[derive(Debug, Parser)]
#[command(name = "mcp", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The default `--timeout`, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The default `--max-input-rounds`.
const DEFAULT_MAX_INPUT_ROUNDS: u32 = 16;

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
enum EraArg {
    /// Probe with `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
    /// 2026-07-28 only (a handshake-era server is an error).
    Modern,
    /// `initialize` straight away (2025-11-25 and older).
    Handshake,
}

/// Options shared by every client subcommand.
#[derive(Debug, Clone, Args)]
struct Common {
    /// The server's Streamable HTTP URL (instead of a leading URL argument).
    #[arg(long, short = 's', env = "MCP_SERVER")]
    server: Option<String>,
    /// Machine-readable JSON output.
    #[arg(long)]
    json: bool,
    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    era: EraArg,
    /// Pin the protocol revision: 2026-07-28, 2025-11-25, 2025-06-18 or
    /// 2025-03-26. A handshake revision is offered in `initialize` (no
    /// `server/discover` probe) and is the only one accepted back;
    /// 2026-07-28 never falls back to `initialize`. Overrides --era.
    #[arg(long, value_name = "REV", value_parser = parse_revision)]
    protocol_version: Option<ferromcp_protocol::ProtocolVersion>,
    /// Never prompt: server requests for user input fail instead.
    #[arg(long)]
    no_input: bool,
    /// Answer a form the server asks for without prompting, field by name
    /// (repeat for each field; typed as the form says; works with
    /// --no-input).
    #[arg(long, value_name = "FIELD=VALUE")]
    answer: Vec<String>,
    /// Accept tool results that break the tool's declared outputSchema
    /// (by default such a result, or one without structuredContent, is a
    /// protocol error, exit 3).
    #[arg(long)]
    no_validate_output: bool,
    /// Request timeout in seconds (progress notifications restart it).
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    timeout: u64,
    /// Progress of long requests: a bar on a terminal (auto), also plain
    /// lines on stderr when it is not a terminal (always), or none (never).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = progress::ProgressMode::Auto)]
    progress: progress::ProgressMode,
    /// The most rounds of server input requests (MRTR) one request may take.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INPUT_ROUNDS)]
    max_input_rounds: u32,
    /// The server command (stdio), after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Era, protocol version, capabilities and server info.
    Discover {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List the server's tools.
    Tools {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List the server's skills (skills extension, `skills/list`).
    Skills {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Show a skill's SKILL.md and files, or save them:
    /// `mcp skill [URL] NAME|URI [--save DIR]`.
    ///
    /// Every file is checked against the digest and size the server lists
    /// for it. `--save DIR` writes them under DIR/NAME/; paths that would
    /// leave DIR, or go through a symbolic link, are refused.
    Skill {
        /// `[URL] NAME|URI`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// Write SKILL.md and the skill's files under DIR/NAME/.
        #[arg(long, value_name = "DIR")]
        save: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Call a tool: `mcp call [URL] TOOL key=value… | '{json}'`.
    ///
    /// Values are typed by the tool's input schema: numbers, booleans,
    /// arrays and objects are parsed as JSON, strings are taken verbatim.
    /// `key:=JSON` always parses the value as JSON. A single argument
    /// starting with `{` (or `--args '{…}'`) gives all arguments as a JSON
    /// object.
    Call {
        /// `[URL] TOOL [key=value…]`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// All arguments as one JSON object.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Where to save images and audio (default: the current directory).
        #[arg(long, value_name = "DIR")]
        save_dir: Option<std::path::PathBuf>,
        /// Let the server run the call as a task (tasks extension, modern
        /// servers): its status is shown while polling, Ctrl-C cancels it.
        #[arg(long)]
        task: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Tasks of the tasks extension: `mcp tasks [URL] get|result|cancel TASK_ID`.
    ///
    /// `get` prints the task's status (JSON with `--json`), `result` waits
    /// for the task to finish and prints its result like `mcp call`,
    /// `cancel` asks the server to cancel it. There is no `list`: the
    /// extension (SEP-2663) removed `tasks/list`; task ids are printed by
    /// `mcp call --task`.
    Tasks {
        /// `[URL] get|result|cancel TASK_ID`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// Where to save images and audio of a result.
        #[arg(long, value_name = "DIR")]
        save_dir: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// List resources and resource templates.
    Resources {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Read a resource: `mcp read [URL] URI`.
    Read {
        /// `[URL] URI`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// Where to save binary contents (default: the current directory).
        #[arg(long, value_name = "DIR")]
        save_dir: Option<std::path::PathBuf>,
        /// Write the resource's contents (text, or the decoded bytes of a
        /// blob) to FILE instead of printing them, e.g. the HTML of an
        /// MCP App: `mcp read ui://app/view.html --save view.html`. The
        /// resource must have exactly one content item.
        #[arg(long, value_name = "FILE")]
        save: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// List prompts.
    Prompts {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Get a prompt: `mcp prompt [URL] NAME key=value…`.
    Prompt {
        /// `[URL] NAME [key=value…]`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// Where to save images and audio (default: the current directory).
        #[arg(long, value_name = "DIR")]
        save_dir: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Complete an argument: `mcp complete [URL] --prompt NAME ARG=PARTIAL [key=value…]`
    /// (or `--template URI_TEMPLATE`); extra pairs are the context.
    Complete {
        /// `[URL] ARG=PARTIAL [key=value…]`
        #[arg(value_name = "ARGS", required = true)]
        positional: Vec<String>,
        /// The prompt whose argument is completed.
        #[arg(long, value_name = "NAME", conflicts_with = "template")]
        prompt: Option<String>,
        /// The resource template whose variable is completed.
        #[arg(long, value_name = "URI_TEMPLATE")]
        template: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Print notifications as they come (list changes, resource updates).
    /// Without filters, every list change.
    Listen {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        /// Tool list changes.
        #[arg(long)]
        tools: bool,
        /// Prompt list changes.
        #[arg(long)]
        prompts: bool,
        /// Resource list changes.
        #[arg(long)]
        resources: bool,
        /// Updates of this resource (repeatable).
        #[arg(long, value_name = "URI")]
        uri: Vec<String>,
        /// Exit after this many notifications.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        /// Modern: when the stream breaks or the server ends it (a restart
        /// behind a load balancer), listen again with backoff and say so on
        /// stderr, instead of exiting.
        #[arg(long)]
        relisten: bool,
        #[command(flatten)]
        common: Common,
    },
    /// A quick health and compliance report: era, versions, caching hints,
    /// `x-mcp-header` validity of every tool, the other era, Origin
    /// protection (HTTP), timings. Exit 0 when every check passes, else 3.
    Check {
        /// `[URL]`
        #[arg(value_name = "URL")]
        positional: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Log in to an HTTP server (OAuth 2.1 authorization code with PKCE):
    /// prints the authorization URL, opens it in a browser ($MCP_BROWSER,
    /// $BROWSER, open or xdg-open) and waits for the redirect on a loopback
    /// port. Credentials are stored per issuer in $XDG_CONFIG_HOME/mcp/tokens
    /// (or ~/.config/mcp/tokens); every subcommand then uses them for that
    /// URL, refreshing them when they expire.
    Login {
        /// The server's URL.
        #[arg(value_name = "URL")]
        url: String,
        /// Only print the URL; do not open a browser.
        #[arg(long)]
        no_browser: bool,
        /// RFC 8628 device flow: print a code (on stderr) to enter at the
        /// authorization server's page on any device; no browser here.
        #[arg(long, conflicts_with_all = ["no_browser", "paste"])]
        device: bool,
        /// Print the URL, then read the whole address the browser was
        /// redirected to (a connection error page), pasted on stdin.
        #[arg(long, conflicts_with = "no_browser")]
        paste: bool,
        /// How long to wait for the browser's redirect, the device
        /// approval or the paste, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = auth::DEFAULT_LOGIN_TIMEOUT.as_secs())]
        timeout: u64,
    },
    /// Forget stored credentials: those of URL, or all of them.
    Logout {
        /// The server's URL.
        #[arg(
            value_name = "URL",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        url: Option<String>,
        /// Every stored credential.
        #[arg(long)]
        all: bool,
    },
    /// Run a built-in MCP server: the everything-server fixtures (with
    /// `--docs DIR`, plus a folder of documents), or `mcp serve docs DIR`,
    /// the documentation assistant.
    Serve(serve::ServeArgs),
    /// Be a stdio MCP server for hosts that only start local servers,
    /// relaying to a remote Streamable HTTP server:
    /// `"command": "mcp", "args": ["bridge", "https://…"]`. Request ids are
    /// remapped, unknown methods and fields cross untouched, and
    /// --allow-tool/--deny-tool filter tools (listing and calling).
    Bridge(bridge::BridgeArgs),
    /// Add a server to a host's configuration:
    /// `mcp add NAME (URL | -- CMD ARGS…) --host HOST`. The host's own file
    /// and format; other entries, settings and comments are kept, the old
    /// file is saved as FILE.bak. A URL goes in natively for hosts that
    /// speak HTTP, through `mcp bridge` for Claude Desktop (or with
    /// --via-bridge). $MCP_HOSTS_HOME replaces the home directory.
    Add(hosts::AddArgs),
    /// Remove a server from a host's configuration.
    Remove(hosts::RemoveArgs),
    /// The hosts' configuration files that exist, and the servers in each.
    Hosts(hosts::HostsArgs),
    /// The MCP Registry's `server.json`: `mcp registry init` writes it from
    /// the server's own answer and Cargo.toml, `mcp registry validate`
    /// checks it (the registry's rules, with line:column).
    Registry {
        #[command(subcommand)]
        command: registry_cmd::RegistryCommand,
    },
    /// Build an MCPB bundle (manifest plus binary, the one-click install
    /// format of desktop hosts): `mcp pack --binary PATH [-- PATH ARGS…]`;
    /// the command is run to list its tools and prompts. `mcp pack --check
    /// FILE.mcpb` validates a bundle.
    Pack(Box<pack::PackArgs>),
    /// Serve many MCP servers (stdio commands and HTTP URLs from a
    /// `{"mcpServers": …}` file) behind one endpoint, over --http or
    /// --stdio: tools and prompts as NAME__TOOL, allowTools/denyTools
    /// enforced on calls, each upstream with only its own credentials.
    Gateway(gateway::GatewayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp: cannot start the runtime: {e}");
            return ExitCode::from(code::TRANSPORT);
        }
    };
    let result = rt.block_on(run(cli));
    // A refused input request decides the exit code whatever the outcome:
    // a server may turn the refusal into a tool error (`isError: true`, as
    // the TypeScript SDK does) or even carry on without the input.
    let needed_input = elicit::NEEDED_INPUT.load(std::sync::atomic::Ordering::Acquire);
    let status = match result {
        Ok(_) if needed_input => {
            eprintln!("mcp: the server asked for input, but --no-input was given");
            code::NEEDS_INPUT
        }
        Ok(c) => c,
        Err(f) => {
            eprintln!("mcp: {}", f.message);
            if needed_input {
                code::NEEDS_INPUT
            } else {
                f.code
            }
        }
    };
    // Leave without waiting for stray blocking tasks (stdin readers).
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    ExitCode::from(status)
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Discover { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let client = connect::connect(&target, &common).await?;
            let r = output::discover(&client, common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Tools { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let client = connect::connect(&target, &common).await?;
            let r = async {
                let tools = more::none_offered(client.list_tools().await, "tools")?;
                output::tools(&tools, common.json)
            }
            .await;
            connect::close(&client, &r).await;
            r
        }
        Command::Skills { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let client = connect::connect(&target, &common).await?;
            let r = skills::list(&client, common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Skill {
            positional,
            save,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let [which] = rest.as_slice() else {
                return Err(Failure::usage(
                    "usage: mcp skill [URL] NAME|URI [--save DIR]",
                ));
            };
            let client = connect::connect(&target, &common).await?;
            let r = skills::show(&client, which, save.as_deref(), common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Tasks {
            positional,
            save_dir,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let (action, id) = match rest.as_slice() {
                [a, id] if ["get", "result", "cancel"].contains(&a.as_str()) => {
                    (a.clone(), id.clone())
                }
                [a, ..] if a == "list" => {
                    return Err(Failure::usage(
                        "the tasks extension has no tasks/list (removed by SEP-2663); `mcp call --task` prints the id of the task it starts",
                    ));
                }
                _ => {
                    return Err(Failure::usage(
                        "usage: mcp tasks [URL] get|result|cancel TASK_ID",
                    ));
                }
            };
            let client = connect::connect(&target, &common).await?;
            let opts = output::CallOptions {
                json: common.json,
                save_dir: save_dir.unwrap_or_else(|| std::path::PathBuf::from(".")),
            };
            let show = common.progress != progress::ProgressMode::Never;
            let r = async {
                match action.as_str() {
                    "get" => {
                        let t = client.get_task(&id).await.map_err(Failure::from)?;
                        if common.json {
                            output::print_json(&t)?;
                        } else {
                            output::print_text(&format!(
                                "{} {}{}",
                                t.task.task_id,
                                t.task.status.as_str(),
                                t.task
                                    .status_message
                                    .as_deref()
                                    .map(|m| format!(": {m}"))
                                    .unwrap_or_default()
                            ));
                        }
                        Ok(code::OK)
                    }
                    "cancel" => {
                        client.cancel_task(&id).await.map_err(Failure::from)?;
                        Ok(code::OK)
                    }
                    _ => {
                        let t = output::wait_shown(&client, &id, show).await?;
                        output::render_task(&t, "task", &opts)
                    }
                }
            }
            .await;
            connect::close(&client, &r).await;
            r
        }
        Command::Call {
            positional,
            args,
            save_dir,
            task,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let Some((tool, kv)) = rest.split_first() else {
                return Err(Failure::usage(
                    "which tool? usage: mcp call TOOL key=value…",
                ));
            };
            let client = connect::connect(&target, &common).await?;
            let r = async {
                let tools = client.list_tools().await.map_err(Failure::from)?;
                let schema = tools
                    .iter()
                    .find(|t| &t.name == tool)
                    .map(|t| t.input_schema.clone());
                if schema.is_none() {
                    return Err(Failure::usage(format!(
                        "no tool named {tool:?} (see `mcp tools`)"
                    )));
                }
                let arguments = args::tool_arguments(schema.as_ref(), kv, args.as_deref())
                    .map_err(Failure::usage)?;
                let opts = output::CallOptions {
                    json: common.json,
                    save_dir: save_dir.unwrap_or_else(|| std::path::PathBuf::from(".")),
                };
                if task {
                    return output::call_task(&client, tool, arguments.clone(), &common, &opts)
                        .await;
                }
                elicit::with_url_interactions(
                    common.no_input,
                    common.json,
                    common.max_input_rounds,
                    || output::call(&client, tool, arguments.clone(), &common, &opts),
                )
                .await
            }
            .await;
            connect::close(&client, &r).await;
            r
        }
        Command::Resources { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let client = connect::connect(&target, &common).await?;
            let r = more::resources(&client, common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Read {
            positional,
            save_dir,
            save,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let [uri] = rest.as_slice() else {
                return Err(Failure::usage("usage: mcp read [URL] URI"));
            };
            let client = connect::connect(&target, &common).await?;
            let dir = save_dir.unwrap_or_else(|| std::path::PathBuf::from("."));
            let r = elicit::with_url_interactions(
                common.no_input,
                common.json,
                common.max_input_rounds,
                || more::read(&client, uri, &common, &dir, save.as_deref()),
            )
            .await;
            connect::close(&client, &r).await;
            r
        }
        Command::Prompts { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let client = connect::connect(&target, &common).await?;
            let r = more::prompts(&client, common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Prompt {
            positional,
            save_dir,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let Some((name, kv)) = rest.split_first() else {
                return Err(Failure::usage(
                    "which prompt? usage: mcp prompt NAME key=value…",
                ));
            };
            let arguments = args::string_pairs(kv).map_err(Failure::usage)?;
            let client = connect::connect(&target, &common).await?;
            let dir = save_dir.unwrap_or_else(|| std::path::PathBuf::from("."));
            let r = elicit::with_url_interactions(
                common.no_input,
                common.json,
                common.max_input_rounds,
                || more::prompt(&client, name, arguments.clone(), &common, &dir),
            )
            .await;
            connect::close(&client, &r).await;
            r
        }
        Command::Complete {
            positional,
            prompt,
            template,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            let reference = match (prompt, template) {
                (Some(p), None) => serde_json::json!({"type": "ref/prompt", "name": p}),
                (None, Some(t)) => serde_json::json!({"type": "ref/resource", "uri": t}),
                _ => {
                    return Err(Failure::usage(
                        "give --prompt NAME or --template URI_TEMPLATE",
                    ));
                }
            };
            let Some((arg, ctx)) = rest.split_first() else {
                return Err(Failure::usage(
                    "give the argument being completed as NAME=PARTIAL",
                ));
            };
            let context = args::string_pairs(ctx).map_err(Failure::usage)?;
            let client = connect::connect(&target, &common).await?;
            let r = more::complete(&client, reference, arg, context, common.json).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Listen {
            positional,
            tools,
            prompts,
            resources,
            uri,
            count,
            relisten,
            common,
        } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let builder = connect::builder(&common).on_notification(move |n| {
                let _ = tx.send((n.method.clone(), n.params.clone()));
            });
            let client = connect::connect_with(&target, builder).await?;
            let what = more::ListenWhat {
                tools,
                prompts,
                resources,
                uris: uri,
                count,
                relisten,
            };
            let r = more::listen(&client, what, rx, &common).await;
            connect::close(&client, &r).await;
            r
        }
        Command::Check { positional, common } => {
            let (target, rest) = connect::split_target(&common, positional)?;
            no_extra(&rest)?;
            check::run(&target, &common).await
        }
        Command::Serve(a) => serve::run(a).await,
        Command::Bridge(a) => bridge::run(a).await,
        Command::Add(a) => hosts::add(a),
        Command::Remove(a) => hosts::remove(a),
        Command::Hosts(a) => hosts::hosts(a),
        Command::Registry { command } => registry_cmd::run(command).await,
        Command::Pack(a) => pack::run(*a).await,
        Command::Gateway(a) => gateway::run(a).await,
        Command::Login {
            url,
            no_browser,
            device,
            paste,
            timeout,
        } => {
            if !connect::is_url(&url) {
                return Err(Failure::usage(format!("not an http(s) URL: {url:?}")));
            }
            let mode = match (device, paste) {
                (true, _) => auth::LoginMode::Device,
                (_, true) => auth::LoginMode::Paste,
                _ => auth::LoginMode::Browser { no_browser },
            };
            auth::login(&url, mode, std::time::Duration::from_secs(timeout.max(1))).await
        }
        Command::Logout { url, all } => match (url, all) {
            (_, true) => auth::logout_all(),
            (Some(u), false) => auth::logout(&u).await,
            (None, false) => Err(Failure::usage("give a URL or --all")),
        },
    }
}

/// The revisions `--protocol-version` accepts.
const PINNABLE: [ferromcp_protocol::ProtocolVersion; 4] = [
    ferromcp_protocol::ProtocolVersion::V2026_07_28,
    ferromcp_protocol::ProtocolVersion::V2025_11_25,
    ferromcp_protocol::ProtocolVersion::V2025_06_18,
    ferromcp_protocol::ProtocolVersion::V2025_03_26,
];

/// `--protocol-version`: one of [`PINNABLE`].
fn parse_revision(s: &str) -> Result<ferromcp_protocol::ProtocolVersion, String> {
    PINNABLE
        .into_iter()
        .find(|v| v.as_str() == s)
        .ok_or_else(|| {
            let all: Vec<&str> = PINNABLE.iter().map(|v| v.as_str()).collect();
            format!(
                "unsupported protocol revision; use one of {}",
                all.join(", ")
            )
        })
}

fn no_extra(rest: &[String]) -> Result<(), Failure> {
    match rest.first() {
        None => Ok(()),
        Some(x) => Err(Failure::usage(format!("unexpected argument {x:?}"))),
    }
}
