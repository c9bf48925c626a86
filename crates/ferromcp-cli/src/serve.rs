//! `mcp serve`: the everything-server fixtures, optionally with a folder of
//! documents (`--docs DIR`); `mcp serve docs DIR`: the documentation server
//! of its own (crate `ferromcp-docs`).

use crate::exit::{Failure, code};
use clap::{Args, Subcommand};
use ferromcp_server::Server;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `mcp serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// A server other than the everything-server fixtures.
    #[command(subcommand)]
    what: Option<ServeWhat>,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    http: Option<SocketAddr>,
    /// Serve over stdin/stdout (the default).
    #[arg(long)]
    stdio: bool,
    /// Also serve the documents under DIR as the `docs` server does
    /// (`docs://` resources, `search_docs`, the `ask` prompt, live updates)
    /// next to the fixtures; `mcp serve docs DIR` serves them alone.
    #[arg(long, value_name = "DIR")]
    docs: Option<PathBuf>,
    /// Share list changes and resource updates with other replicas through
    /// Redis (built with the `redis` feature). Needs a shared requestState
    /// key ring: MCP_STATE_KEYS=hex1,hex2 (or MCP_STATE_KEY=hex).
    #[arg(long, value_name = "redis://HOST:PORT/DB")]
    redis: Option<String>,
    /// On SIGTERM or Ctrl-C (HTTP): stop accepting, end listen streams with
    /// their final result, give in-flight requests this many seconds to
    /// finish, then exit 0.
    #[arg(long, value_name = "SECONDS", default_value_t = ferromcp_server::Limits::DEFAULT_DRAIN_TIMEOUT.as_secs_f64())]
    drain_timeout: f64,
    /// During the drain, keep idle keep-alive connections open this many
    /// seconds (answers on them say `connection: close`), so a request a
    /// load balancer already sent on one is not lost.
    #[arg(long, value_name = "SECONDS", default_value_t = ferromcp_server::Limits::DEFAULT_DRAIN_GRACE.as_secs_f64())]
    drain_grace: f64,
    /// Which protocol eras to serve: both (default), only the handshake
    /// era (2025-11-25 and older, like a server written before 2026-07-28)
    /// or only 2026-07-28.
    #[arg(long, value_enum, value_name = "ERA", default_value_t = ServeEra::Both)]
    era: ServeEra,
}

/// The eras `mcp serve --era` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ServeEra {
    /// 2026-07-28 and the handshake revisions.
    Both,
    /// `initialize` sessions only (2025-11-25, 2025-06-18, 2025-03-26).
    Handshake,
    /// 2026-07-28 only.
    Modern,
}

/// The servers `mcp serve` can run instead of the fixtures.
#[derive(Debug, Subcommand)]
enum ServeWhat {
    /// The documentation assistant: the Markdown and text files under DIR
    /// as `docs://` resources (and sections, `docs://file#slug`), ranked
    /// search (`search_docs`), the `ask` prompt, live updates.
    Docs(DocsArgs),
    /// A skills server: every directory under DIR holding a SKILL.md is a
    /// skill, served as `skill://` resources with `skills/list`,
    /// `skills/get` and `resources/directory/read` (skills extension),
    /// reloaded when the folder changes.
    Skills(SkillsArgs),
}

/// Arguments of `mcp serve skills`.
#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// The skills folder.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    http: Option<SocketAddr>,
    /// Serve over stdin/stdout (the default).
    #[arg(long)]
    stdio: bool,
    /// Which protocol eras to serve.
    #[arg(long, value_enum, value_name = "ERA", default_value_t = ServeEra::Both)]
    era: ServeEra,
    /// Serve at most this many skills.
    #[arg(long, value_name = "N", default_value_t = ferromcp_server::skills::SkillsLimits::default().max_skills)]
    max_skills: usize,
    /// Files per skill at most.
    #[arg(long, value_name = "N", default_value_t = ferromcp_server::skills::SkillsLimits::default().max_files_per_skill)]
    max_skill_files: usize,
    /// Bytes per skill at most.
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_server::skills::SkillsLimits::default().max_bytes_per_skill)]
    max_skill_bytes: u64,
    /// Quiet time in milliseconds after a change before the skills are
    /// read again.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    debounce_ms: u64,
    /// Do not watch DIR for changes.
    #[arg(long)]
    no_watch: bool,
}

/// Runs `mcp serve skills`.
async fn run_skills(a: SkillsArgs) -> Result<u8, Failure> {
    let mut limits = ferromcp_server::skills::SkillsLimits::default();
    limits.max_skills = a.max_skills;
    limits.max_files_per_skill = a.max_skill_files;
    limits.max_bytes_per_skill = a.max_skill_bytes;
    let server = Server::builder("ferromcp-skills", env!("CARGO_PKG_VERSION"))
        .instructions(
            "This server serves agent skills (skills extension): list them with skills/list, \
             read a skill's SKILL.md and files with resources/read.",
        )
        .modern_era(a.era != ServeEra::Handshake)
        .handshake_era(a.era != ServeEra::Modern)
        .skills_limits(limits)
        .skills_dir(&a.dir)
        .build()
        .map_err(|e| Failure::usage(format!("cannot serve {}: {e}", a.dir.display())))?;
    let _watch = if a.no_watch {
        None
    } else {
        Some(
            ferromcp_server::skills::watch(
                server.clone(),
                &a.dir,
                std::time::Duration::from_millis(a.debounce_ms),
            )
            .map_err(|e| Failure::usage(e.to_string()))?,
        )
    };
    transport(server, a.http).await
}

/// Arguments of `mcp serve docs`.
#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The documentation folder.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    http: Option<SocketAddr>,
    /// Serve over stdin/stdout (the default).
    #[arg(long)]
    stdio: bool,
    /// A Markdown file whose text replaces the `ask` prompt's default
    /// persona (the rules stay).
    #[arg(long, value_name = "FILE")]
    persona: Option<PathBuf>,
    /// A name for the documentation in the server's instructions
    /// (default: the folder's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Files larger than this are not served.
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_docs::Options::DEFAULT_MAX_FILE_SIZE)]
    max_file_size: u64,
    /// Serve at most this many files.
    #[arg(long, value_name = "N", default_value_t = ferromcp_docs::Options::DEFAULT_MAX_FILES)]
    max_files: usize,
    /// `search_docs` hits per page by default.
    #[arg(long, value_name = "N", default_value_t = ferromcp_docs::Options::DEFAULT_PAGE_SIZE)]
    page_size: usize,
    /// The largest page `search_docs` returns.
    #[arg(long, value_name = "N", default_value_t = ferromcp_docs::Options::DEFAULT_MAX_PAGE_SIZE)]
    max_page_size: usize,
    /// Sections the `ask` prompt embeds.
    #[arg(long, value_name = "N", default_value_t = ferromcp_docs::Options::DEFAULT_PROMPT_SECTIONS)]
    prompt_sections: usize,
    /// The longest `search_docs` query or `ask` question, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_docs::Options::DEFAULT_MAX_QUERY_BYTES)]
    max_query_bytes: usize,
    /// The most bytes of one section the `ask` prompt embeds (a longer one
    /// is cut and linked).
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_docs::Options::DEFAULT_PROMPT_SECTION_BYTES)]
    prompt_section_bytes: usize,
    /// The most bytes of section text the `ask` prompt embeds in all.
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_docs::Options::DEFAULT_MAX_PROMPT_BYTES)]
    max_prompt_bytes: usize,
    /// The relevance (0 to 1) a section needs for the `ask` prompt to embed
    /// it; below it for every section, the prompt says the documentation
    /// does not cover the question.
    #[arg(long, value_name = "0..1", default_value_t = ferromcp_docs::Options::DEFAULT_MIN_RELEVANCE)]
    min_relevance: f32,
    /// Search snippets are built from at most this many bytes at the start
    /// of a section.
    #[arg(long, value_name = "BYTES", default_value_t = ferromcp_docs::Options::DEFAULT_SNIPPET_SCAN_BYTES)]
    snippet_scan_bytes: usize,
    /// Quiet time in milliseconds after a file change before the index is
    /// updated.
    #[arg(long, value_name = "MS", default_value_t = ferromcp_docs::Options::DEFAULT_DEBOUNCE.as_millis() as u64)]
    debounce_ms: u64,
    /// Do not watch DIR for changes.
    #[arg(long)]
    no_watch: bool,
    /// As `mcp serve --drain-timeout`.
    #[arg(long, value_name = "SECONDS", default_value_t = ferromcp_server::Limits::DEFAULT_DRAIN_TIMEOUT.as_secs_f64())]
    drain_timeout: f64,
    /// As `mcp serve --drain-grace`.
    #[arg(long, value_name = "SECONDS", default_value_t = ferromcp_server::Limits::DEFAULT_DRAIN_GRACE.as_secs_f64())]
    drain_grace: f64,
}

fn drain_limits(timeout: f64, grace: f64) -> Result<ferromcp_server::Limits, Failure> {
    let seconds = |v: f64, flag: &str| {
        std::time::Duration::try_from_secs_f64(v)
            .map_err(|_| Failure::usage(format!("{flag} wants a number of seconds, at least 0")))
    };
    let mut limits = ferromcp_server::Limits::default();
    limits.drain_timeout = seconds(timeout, "--drain-timeout")?;
    limits.drain_grace = seconds(grace, "--drain-grace")?;
    Ok(limits)
}

/// Opens the library at `dir` (reporting what was skipped on stderr).
fn open_library(
    dir: &Path,
    opts: ferromcp_docs::Options,
) -> Result<Arc<ferromcp_docs::Library>, Failure> {
    let started = std::time::Instant::now();
    let (lib, skipped) = ferromcp_docs::Library::open(dir, opts)
        .map_err(|e| Failure::usage(format!("cannot serve {}: {e}", dir.display())))?;
    for (rel, why) in &skipped.files {
        eprintln!("mcp serve: skipped {rel}: {why}");
    }
    if skipped.over_limit > 0 {
        eprintln!(
            "mcp serve: {} more files not served (over --max-files)",
            skipped.over_limit
        );
    }
    let (files, sections) = lib.counts();
    eprintln!(
        "mcp serve: {files} documents ({sections} sections) from {} indexed in {:.0?}",
        dir.display(),
        started.elapsed()
    );
    Ok(Arc::new(lib))
}

fn docs_options(a: &DocsArgs) -> Result<ferromcp_docs::Options, Failure> {
    let persona =
        match &a.persona {
            Some(p) => Some(std::fs::read_to_string(p).map_err(|e| {
                Failure::usage(format!("cannot read --persona {}: {e}", p.display()))
            })?),
            None => None,
        };
    let name = a.name.clone().unwrap_or_else(|| {
        a.dir
            .canonicalize()
            .ok()
            .and_then(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .map(|n| format!("the documentation in {n}/"))
            })
            .unwrap_or_else(|| "the documentation".to_owned())
    });
    if a.page_size == 0 || a.max_page_size == 0 || a.prompt_sections == 0 {
        return Err(Failure::usage(
            "--page-size, --max-page-size and --prompt-sections must be at least 1",
        ));
    }
    if !(0.0..=1.0).contains(&a.min_relevance) {
        return Err(Failure::usage(format!(
            "--min-relevance must be between 0 and 1, not {}",
            a.min_relevance
        )));
    }
    Ok(ferromcp_docs::Options {
        min_relevance: a.min_relevance,
        max_file_size: a.max_file_size,
        max_files: a.max_files,
        page_size: a.page_size,
        max_page_size: a.max_page_size,
        prompt_sections: a.prompt_sections,
        max_query_bytes: a.max_query_bytes,
        prompt_section_bytes: a.prompt_section_bytes,
        max_prompt_bytes: a.max_prompt_bytes,
        snippet_scan_bytes: a.snippet_scan_bytes,
        debounce: std::time::Duration::from_millis(a.debounce_ms),
        persona,
        name,
        ..ferromcp_docs::Options::default()
    })
}

/// Runs `mcp serve docs`.
async fn run_docs(a: DocsArgs) -> Result<u8, Failure> {
    let opts = docs_options(&a)?;
    let opts_debounce = opts.debounce;
    let lib = open_library(&a.dir, opts)?;
    let limits = drain_limits(a.drain_timeout, a.drain_grace)?;
    let builder = || {
        let b = Server::builder("ferromcp-docs", env!("CARGO_PKG_VERSION"))
            .instructions(ferromcp_docs::instructions(&lib))
            .limits(limits.clone());
        ferromcp_docs::register(b, &lib, true)
    };
    // The skills in the folder (directories holding a SKILL.md) are served
    // too, as skill:// resources; a folder whose skills break a rule is
    // still served as documentation.
    let skills = ferromcp_server::skills::load_dir(&a.dir, &Default::default())
        .ok()
        .filter(|s| !s.is_empty());
    let mut with_skills = false;
    let built = match skills {
        Some(found) => match builder().skills(found).build() {
            Ok(server) => {
                with_skills = true;
                Ok(server)
            }
            Err(e) => {
                eprintln!("mcp serve: the folder's skills are not served: {e}");
                builder().build()
            }
        },
        None => builder().build(),
    };
    let server = built.map_err(|e| Failure::usage(format!("cannot build the server: {e}")))?;
    let _watch = if a.no_watch {
        None
    } else {
        Some(
            ferromcp_docs::watch(lib.clone(), server.clone())
                .map_err(|e| Failure::usage(e.to_string()))?,
        )
    };
    let _skills_watch = if a.no_watch || !with_skills {
        None
    } else {
        Some(
            ferromcp_server::skills::watch(server.clone(), &a.dir, opts_debounce)
                .map_err(|e| Failure::usage(e.to_string()))?,
        )
    };
    transport(server, a.http).await
}

async fn transport(server: Server, http: Option<SocketAddr>) -> Result<u8, Failure> {
    let r = match http {
        Some(addr) => {
            eprintln!("mcp serve: listening on http://{addr}/mcp");
            ferromcp_server::transport::http::serve(server, addr, shutdown_signal()).await
        }
        None => {
            tokio::select! {
                r = server.serve_stdio() => r,
                _ = shutdown_signal() => Ok(()),
            }
        }
    };
    r.map_err(|e| Failure::transport(format!("serve: {e}")))?;
    Ok(code::OK)
}

/// The requestState key ring of `MCP_STATE_KEY`/`MCP_STATE_KEYS` (as
/// `everything-server` reads it), `None` when neither is set.
pub(crate) fn state_key_ring_from_env()
-> Result<Option<ferromcp_server::request_state::KeyRing>, Failure> {
    let env = |name: &str| match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(Failure::usage(format!("{name} is not valid UTF-8")))
        }
    };
    let (key, keys) = (env("MCP_STATE_KEY")?, env("MCP_STATE_KEYS")?);
    ferromcp_everything::config::state_key_ring(key.as_deref(), keys.as_deref())
        .map_err(Failure::usage)
}

/// The server `mcp serve` runs: the everything-server fixtures, with the
/// requestState key ring from `MCP_STATE_KEY`/`MCP_STATE_KEYS` (as
/// `everything-server`) and, with `--redis`, the shared change bus.
async fn build_server(
    a: &ServeArgs,
    docs: Option<&Arc<ferromcp_docs::Library>>,
) -> Result<Server, Failure> {
    let ring = state_key_ring_from_env()?;
    let shared_keys = ring.is_some();
    let limits = drain_limits(a.drain_timeout, a.drain_grace)?;
    let mut builder = ferromcp_everything::everything_builder()
        .limits(limits)
        .modern_era(a.era != ServeEra::Handshake)
        .handshake_era(a.era != ServeEra::Modern);
    if let Some(lib) = docs {
        // The fixtures' completion handler stays.
        builder = ferromcp_docs::register(builder, lib, false);
    }
    let mut state = ferromcp_server::RequestStateConfig::default();
    if let Some(ring) = ring {
        state = state.keys(ring);
    }
    if let Some(url) = &a.redis {
        let opts = ferromcp_everything::config::RedisOptions {
            url: url.clone(),
            backlog: ferromcp_server::Limits::default().listen_backlog,
            ..Default::default()
        };
        let backplane;
        (state, backplane) = ferromcp_everything::config::with_redis(state, &opts, shared_keys)
            .await
            .map_err(Failure::usage)?;
        builder = builder.backplane(backplane);
    }
    builder
        .request_state(state)
        .build()
        .map_err(|e| Failure::usage(format!("cannot build the server: {e}")))
}

pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs `mcp serve`.
pub async fn run(a: ServeArgs) -> Result<u8, Failure> {
    match a.what {
        Some(ServeWhat::Docs(d)) => return run_docs(d).await,
        Some(ServeWhat::Skills(s)) => return run_skills(s).await,
        None => {}
    }
    let lib = match &a.docs {
        Some(dir) => Some(open_library(dir, ferromcp_docs::Options::default())?),
        None => None,
    };
    let server = build_server(&a, lib.as_ref()).await?;
    let _watch = match &lib {
        Some(lib) => Some(
            ferromcp_docs::watch(lib.clone(), server.clone())
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        None => None,
    };
    let _ = a.stdio;
    transport(server, a.http).await
}
