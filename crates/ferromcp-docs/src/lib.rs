//! # ferromcp-docs
//!
//! A documentation server any MCP host can ask questions of: the Markdown
//! and plain-text files under a folder become `docs://` resources, a BM25
//! index over their sections answers the `search_docs` tool, the `ask`
//! prompt hands a model the relevant sections with rules for answering
//! from them, and a watcher keeps it all current.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let (lib, _skipped) = ferromcp_docs::Library::open("docs".as_ref(), ferromcp_docs::Options::default())?;
//! let lib = Arc::new(lib);
//! let server = ferromcp_docs::server(lib.clone())?;
//! let _watch = ferromcp_docs::watch(lib, server.clone())?; // live updates
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```
//!
//! ## What is served
//!
//! - Every file with a Markdown (`md`, `markdown`) or text (`txt`, `text`)
//!   extension under the folder, hidden entries and symbolic links left
//!   out, as a resource `docs://<relative path>` with its title (a YAML
//!   front matter `title:`, else the first heading; for text files the
//!   first line), description (first paragraph), size and MIME type.
//! - The template `docs://{+path}`, with completion of `path`; a fragment
//!   reads one section: `docs://guide.md#installation` is that heading and
//!   everything under it up to the next heading of the same level.
//! - Reads of `..` paths, absolute paths, symbolic links (and paths through
//!   a linked folder, with one answer whether or not the target exists),
//!   FIFOs, sockets and devices, binary and oversized files are refused
//!   with an error that says why.
//! - `search_docs {query, limit?, offset?}`: sections ranked by BM25, each
//!   with a `docs://file#slug` resource link and a snippet with the
//!   matching words in `**bold**`; structured output (`outputSchema`) and
//!   offset paging (`nextOffset`).
//! - The `ask {question}` prompt: a persona and rules (answer only from the
//!   documentation, cite the URIs used, say so when the documentation does
//!   not cover the question), the best sections as embedded resources, then
//!   the question.
//! - [`watch`]: files added, changed or removed update the index within
//!   ~150 ms of the last event, then `notifications/resources/list_changed`
//!   and `notifications/resources/updated` (for the file URI and each of
//!   its section URIs) go to subscribers.
//!
//! ## The search library: `bm25`, not tantivy
//!
//! Measured on this project's 2-core build machine: clean builds of a
//! probe crate depending on nothing but the library (`cargo build`, then
//! `cargo build --release`, each into an empty target folder; the release
//! builds ran while other builds shared the two cores, so read them as
//! upper bounds and compare the ratio):
//!
//! | library | crates in its tree | debug build | release build |
//! | --- | --- | --- | --- |
//! | `bm25` 2.3 (default tokenizer) | 44 | 28 s | 77 s |
//! | `tantivy` 0.27 (default features) | 132 | 164 s | 298 s |
//!
//! tantivy is a full search engine (segments on disk, a query language,
//! snippet generation) whose build costs minutes on two cores for features a
//! documentation folder does not need: even 50 MB of Markdown indexes in
//! memory in a few seconds. The `bm25` crate (maintained, MIT) brings what
//! ranking quality depends on: Unicode word splitting, ASCII folding,
//! stop words, Snowball stemming and BM25's term-frequency saturation and
//! length normalisation. This crate adds the inverted index (posting lists
//! per term, see [`index`]) so a query costs its terms' posting lists
//! rather than a scan of every section, plus snippets. The trade-offs:
//! English stemming only, no phrase or boolean queries, the whole index in
//! memory (about 2.6 times the size of the text, see below), `avgdl` fitted at
//! start-up and not refitted on live updates.
//!
//! ## Performance
//!
//! `cargo run --release -p ferromcp-docs --example bench` generates a synthetic
//! corpus (10,000 Markdown files, 52.5 MB) in a temporary folder, indexes it,
//! runs queries, times a live refresh and removes the corpus. On the 2-core
//! build machine, quiet / while other builds loaded it (load average 6–8):
//!
//! | figure | quiet | loaded |
//! | --- | --- | --- |
//! | index 10,000 files / 52.5 MB (walk, read, parse, tokenize, index; 2 threads) | 3.2–3.3 s | 5.7–7.6 s |
//! | sections indexed | 74,517 | |
//! | query p50 / p90 / p99 (10 hits with snippets; 2,000 queries of 1–3 words matching 12,359 sections on average) | 0.16 / 0.33 / 0.46–0.51 ms | 0.19 / 0.40 / 4.5–4.6 ms |
//! | query max | 2.1–4.5 ms | 13–133 ms (preempted) |
//! | refresh after one changed file (walk of the 10,000 + reindex) | | 65–100 ms |
//! | resident memory after indexing (the text itself is 52.5 MB of it) | 136 MB (peak 139 MB) | 136–137 MB |
//!
//! ## Limits
//!
//! Every limit is a field of [`Options`] with a named default:
//! [`Options::DEFAULT_MAX_FILE_SIZE`], [`Options::DEFAULT_MAX_FILES`],
//! [`Options::DEFAULT_PAGE_SIZE`], [`Options::DEFAULT_MAX_PAGE_SIZE`],
//! [`Options::DEFAULT_PROMPT_SECTIONS`], [`Options::DEFAULT_MAX_QUERY_BYTES`],
//! [`Options::DEFAULT_SNIPPET_WORDS`], [`Options::DEFAULT_SNIPPET_SCAN_BYTES`],
//! [`Options::DEFAULT_PROMPT_SECTION_BYTES`], [`Options::DEFAULT_MAX_PROMPT_BYTES`],
//! [`Options::DEFAULT_DEBOUNCE`].
//!
//! Files are read with a bound on the bytes actually read (a file that
//! grows past [`Options::max_file_size`] while read, or claims a size it
//! does not have, is refused at the limit), never through a symbolic link
//! at any component of the path (checked on the opened descriptor, not
//! before the open), and only when the opened descriptor is a regular file
//! (FIFOs, sockets and devices are refused without a read). Reads for
//! `resources/read` run on Tokio's blocking pool, never on its workers.

pub mod index;
mod library;
pub mod markdown;
mod mcp;
mod open;
mod watch;

pub use library::{
    Changes, DocFile, Hit, Library, ReadOut, SCHEME, SearchPage, Skipped, check_rel, uri_path,
};
pub use mcp::{DEFAULT_PERSONA, RULES, URI_TEMPLATE, ask_messages, instructions, register, server};
pub use watch::{Watcher, watch};

use std::time::Duration;

/// Why a document operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocsError {
    /// Refused for safety: outside the folder, a symbolic link, binary,
    /// too large, or not a served document type.
    Refused(String),
    /// No such document or section.
    NotFound(String),
    /// The file system failed.
    Io(String),
}

impl std::fmt::Display for DocsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(m) => write!(f, "refused: {m}"),
            Self::NotFound(m) => write!(f, "not found: {m}"),
            Self::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for DocsError {}

/// Settings and limits of a [`Library`] and its server.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files larger than this many bytes are not served.
    pub max_file_size: u64,
    /// At most this many files are served (the first ones in path order).
    pub max_files: usize,
    /// `search_docs` hits per page when the caller gives no `limit`.
    pub page_size: usize,
    /// The largest `limit` a caller may ask for.
    pub max_page_size: usize,
    /// Sections the `ask` prompt embeds.
    pub prompt_sections: usize,
    /// The longest `search_docs` query or `ask` question, in bytes.
    pub max_query_bytes: usize,
    /// Words in a search snippet.
    pub snippet_words: usize,
    /// Snippets are built from at most this many bytes at the start of a
    /// section, so a huge section costs no more than a normal one.
    pub snippet_scan_bytes: usize,
    /// The most bytes of one section the `ask` prompt embeds; a longer
    /// section is cut (at a character boundary) and followed by a resource
    /// link to the whole of it.
    pub prompt_section_bytes: usize,
    /// The most bytes of section text the `ask` prompt embeds in all; once
    /// spent, the remaining sections are given as resource links only.
    pub max_prompt_bytes: usize,
    /// Quiet time after a file-system event before the index is updated.
    pub debounce: Duration,
    /// Extensions served as Markdown (lowercase, without the dot).
    pub markdown_extensions: Vec<String>,
    /// Extensions served as plain text.
    pub text_extensions: Vec<String>,
    /// Threads tokenizing at start-up.
    pub index_threads: usize,
    /// The persona that opens the `ask` prompt (Markdown); `None` for
    /// [`DEFAULT_PERSONA`].
    pub persona: Option<String>,
    /// A name for the documentation in the server's instructions.
    pub name: String,
}

impl Options {
    /// Default [`Options::max_file_size`]: 4 MiB.
    pub const DEFAULT_MAX_FILE_SIZE: u64 = 4 * 1024 * 1024;
    /// Default [`Options::max_files`].
    pub const DEFAULT_MAX_FILES: usize = 50_000;
    /// Default [`Options::page_size`].
    pub const DEFAULT_PAGE_SIZE: usize = 10;
    /// Default [`Options::max_page_size`].
    pub const DEFAULT_MAX_PAGE_SIZE: usize = 50;
    /// Default [`Options::prompt_sections`].
    pub const DEFAULT_PROMPT_SECTIONS: usize = 5;
    /// Default [`Options::max_query_bytes`].
    pub const DEFAULT_MAX_QUERY_BYTES: usize = 4096;
    /// Default [`Options::snippet_words`].
    pub const DEFAULT_SNIPPET_WORDS: usize = 30;
    /// Default [`Options::snippet_scan_bytes`]: 16 KiB.
    pub const DEFAULT_SNIPPET_SCAN_BYTES: usize = 16 * 1024;
    /// Default [`Options::prompt_section_bytes`]: 16 KiB.
    pub const DEFAULT_PROMPT_SECTION_BYTES: usize = 16 * 1024;
    /// Default [`Options::max_prompt_bytes`]: 64 KiB.
    pub const DEFAULT_MAX_PROMPT_BYTES: usize = 64 * 1024;
    /// Default [`Options::debounce`].
    pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_file_size: Self::DEFAULT_MAX_FILE_SIZE,
            max_files: Self::DEFAULT_MAX_FILES,
            page_size: Self::DEFAULT_PAGE_SIZE,
            max_page_size: Self::DEFAULT_MAX_PAGE_SIZE,
            prompt_sections: Self::DEFAULT_PROMPT_SECTIONS,
            max_query_bytes: Self::DEFAULT_MAX_QUERY_BYTES,
            snippet_words: Self::DEFAULT_SNIPPET_WORDS,
            snippet_scan_bytes: Self::DEFAULT_SNIPPET_SCAN_BYTES,
            prompt_section_bytes: Self::DEFAULT_PROMPT_SECTION_BYTES,
            max_prompt_bytes: Self::DEFAULT_MAX_PROMPT_BYTES,
            debounce: Self::DEFAULT_DEBOUNCE,
            markdown_extensions: vec!["md".into(), "markdown".into()],
            text_extensions: vec!["txt".into(), "text".into()],
            index_threads: std::thread::available_parallelism().map_or(1, usize::from),
            persona: None,
            name: "the documentation".into(),
        }
    }
}
