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
//! - `search_docs {query, limit?, offset?}`: sections ranked by field-weighted
//!   BM25 (see [Ranking](#ranking)), each with a `docs://file#slug` resource
//!   link, a snippet with the matching words in `**bold**` and a
//!   `relevance` from 0 to 1; `covered` says whether the best hit reaches
//!   [`Options::min_relevance`] (see [Knowing when the documentation does
//!   not answer](#knowing-when-the-documentation-does-not-answer)); structured output (`outputSchema`) and
//!   offset paging (`nextOffset`).
//! - The `ask {question}` prompt: a persona and rules (answer only from the
//!   documentation, cite the URIs used, say so when the documentation does
//!   not cover the question), the best sections whose relevance reaches
//!   [`Options::min_relevance`] as embedded resources, then the question.
//!   When no section reaches it, nothing is embedded: the prompt says that
//!   the documentation does not cover the question and names the closest
//!   sections.
//! - [`watch`]: files added, changed or removed update the index within
//!   ~150 ms of the last event, then `notifications/resources/list_changed`
//!   and `notifications/resources/updated` (for the file URI and each of
//!   its section URIs) go to subscribers.
//!
//! ## Ranking
//!
//! [`index`] (the `ferromcp-rank` crate, which the gateway's tool search
//! shares) is the project's own field-weighted BM25 (BM25F): each section
//! is indexed as the document title, its heading, its heading path (the
//! headings above it, so "Mitigation" under "Confused Deputy Problem" is
//! found by both), its prose, its code and its link targets, each field
//! with its own weight and length normalisation; link targets and URLs
//! match but do not count towards the body's length. Identifiers, paths,
//! method names and URLs (`notifications/initialized`, `max_file_size`,
//! `listChanged`) are indexed whole and as their parts. Words are stemmed
//! (Snowball English, the `rust-stemmers` crate) and English stop words
//! dropped; a small table of related terms ([`index::RELATED`]: abort →
//! cancel, timer → timeout, restarted → reset, signal → SIGTERM, check →
//! validation, url → uri, …) widens a query at half weight. The best
//! [`index::RERANK_DEPTH`] candidates are re-ranked by their best passage
//! (the share of the query one window of [`index::PASSAGE_WORDS`] words
//! holds), phrases (query words adjacent in the section), how much of
//! the query their whole document holds and how much of it the section
//! itself holds ([`index::coverage_boost`]: siblings share their title
//! and heading path, so this prefers the sibling whose own heading and
//! body hold the query). The relevance signal combines the
//! share of the query's words (by IDF) a section holds, the same share
//! for its whole file and its score relative to the best the query could
//! reach.
//!
//! Why not a library: `tantivy` (132 crates in its tree, minutes of build on
//! two cores) is a full search engine whose features a documentation folder
//! does not need; the `bm25` crate this crate used before has no fields,
//! so titles, headings and link-heavy sections could not be weighted apart.
//!
//! No semantic (embedding) re-ranker: one would need a model's weights
//! vendored under a compatible licence (tens of MB even for a small
//! sentence encoder, too much for this repository and the published
//! crate), downloaded at run time (impossible on the build machine and in
//! CI, and a network dependency for every user) or trained here; none of
//! these could be shipped and measured honestly, so the ranking stays
//! lexical. The evaluation below is where a re-ranker would have to prove
//! itself.
//!
//! ### Evaluation
//!
//! `cargo run -p ferromcp-docs --release --example eval` (add `-- --quick` for
//! the CI version on a smaller corpus, `--split tune|held|fresh|fresh2|fresh3`
//! for one split, `--verbose` for every question and the next hits of a
//! miss, `--show-fresh` / `--show-fresh2` / `--show-fresh3` to list those
//! splits' questions too,
//! `--sections` to list the answerable documents' section URIs). The
//! corpus is read at run time, nothing of it is kept in `eval/`: this
//! repository's own texts (`docs/*.md`, `README.md`, `CHANGELOG.md`,
//! `bench/RESULTS.md`, `deploy/README.md`, `crates/*/README.md`), the
//! project's shared specification texts kept beside the checkout, never in
//! it (when they are missing the run says so loudly and skips the
//! questions they answer; with `CI=true` it fails) and, as distractors,
//! the README and CHANGELOG files of the crates in the workspace's
//! `Cargo.lock` found in the cargo registry. The questions
//! (`eval/questions.tsv`) are written in a developer's own words at
//! section level (paraphrases, a typo or two), in five splits. `tune`
//! (23 answerable + 5 unanswerable), `held` (36 + 10) and `fresh` (26 + 8)
//! are tuning data: `held` and `fresh` were each held out once, then their
//! misses were looked at while tuning. `fresh2` (30 + 8, on the shared
//! spec texts, the project's docs and six distractor READMEs of the first
//! 60 locked crates) is the held-out split: written and committed before
//! the last two tuning rounds (the section's own coverage in the re-rank,
//! then the abstain decision), its per-question results were not looked
//! at while tuning and print only with `--show-fresh2`. `fresh3` (24 + 11,
//! on the shared spec texts and the project's docs; the unanswerable ones
//! ask for features neither has, several near a distractor README's topic)
//! is the newer held-out split, written and measured before any change of
//! the round that added it; its results print only with `--show-fresh3`.
//! The baseline is a plain Okapi BM25 over the same sections (no stemming,
//! no stop words, no fields).
//!
//! ### Knowing when the documentation does not answer
//!
//! Each hit's `relevance` ([`index::relevance`]) is, from 0 to 1, 0.55 ×
//! the share of the query's words (by IDF) the section holds + 0.2 × the
//! same share for its whole file + 0.25 × its score relative to the best
//! the query could reach (full at a third of it). `covered` (and the `ask`
//! prompt's choice to embed sections) needs the first hit to reach
//! [`Options::min_relevance`] (0.62) and, unless it clears it by 0.10,
//! to score at least 5 % above the second hit: a weak first hit tied with
//! the next one is how a question the documents do not answer looks
//! (several sections sharing its common words, none about it). The
//! file's share tells a section that shares a question's rare words with
//! a file about something else (another crate's TLS set-up, for a
//! question about mutual TLS) from one whose file covers the rest of the
//! question. Its bias: a very long file (a whole specification in one
//! Markdown file) holds most words of most questions, so its sections
//! get up to 0.2 more than those of a short file holding as much of the
//! question themselves.
//!
//! What a lexical signal cannot do: the unanswerable questions of the
//! tuning splits still not abstained on are answered, lexically, by a
//! distractor README that really documents the topic for another product
//! (TLS client certificates and WebAssembly for `redis`, gRPC through
//! `tower`), or share every word but one with a benchmark section ("run
//! the server on windows as a service"). Telling "not about this
//! project" from "about another product in the folder" needs the
//! question's subject, which a bag of words does not have. Rules tried
//! on the tuning splits, with each written word's IDF and whether the
//! first hit's section and file hold it, all failed the same way (they
//! lose answerable questions before they catch an unanswerable one):
//! requiring the query's rarest known word in the hit's file (answerable
//! questions often use one rare word the answer does not: "talk",
//! "keepalive", "interim"); requiring the hit's file to hold about as much
//! of the query as the best-covering file (the answer is often a short
//! document while a whole specification holds more of the words); the
//! first five hits scattered over several files; the share of words
//! (not IDF) the section holds. The false positives' relevance (0.65 to
//! 0.87) lies inside the answerable questions' (0.48 to 1.0).
//!
//! ### Figures
//!
//! Full run (`cargo run -p ferromcp-docs --release --example eval`) on
//! the 2-core build machine while other sessions built (load average
//! about 4), corpus of 448 files / 9,675 sections (26 project documents,
//! 422 READMEs and CHANGELOGs); the abstain decision is `covered == false`
//! at the default [`Options::min_relevance`]. The ranking and the abstain
//! decision are those of the previous round (which raised `fresh2`'s
//! abstentions from 4 of 8 to 5 of 8 at the cost of one answerable
//! question, and the tuning splits' from 17 to 18 of 23 at no cost); the
//! baseline's figures move a little as the project's own documents
//! change:
//!
//! | split | ranking | top-1 | top-3 | file@1 | abstained (unanswerable) | answerable abstained on |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | **fresh3, held out** (24 + 11) | plain BM25 | 13 | 19 | 16 | – | – |
//! | **fresh3, held out** (24 + 11) | this crate | **20** | **23** | 20 | **9 of 11** | 2 |
//! | **fresh2, held out** (30 + 8) | plain BM25 | 21 | 27 | 23 | – | – |
//! | **fresh2, held out** (30 + 8) | this crate | **27** | **29** | 29 | **5 of 8** | 1 |
//! | fresh, tuning (26 + 8) | plain BM25 | 12 | 17 | 16 | – | – |
//! | fresh, tuning (26 + 8) | this crate | 18 | 26 | 22 | 5 of 8 | 0 |
//! | held, tuning (36 + 10) | plain BM25 | 15 | 23 | 17 | – | – |
//! | held, tuning (36 + 10) | this crate | 28 | 34 | 30 | 8 of 10 | 1 |
//! | tune (23 + 5) | plain BM25 | 11 | 14 | 14 | – | – |
//! | tune (23 + 5) | this crate | 16 | 22 | 18 | 5 of 5 | 0 |
//!
//! On the newer held-out split `fresh3`: top-1 20/24 (83 %), top-3 23/24
//! (96 %), the baseline beaten by 7 at top-1 and 4 at top-3; 9 of its 11
//! unanswerable questions are abstained on, and 2 of its 24 answerable
//! ones wrongly. Seven of its questions first written repeated tuning
//! questions almost word for word and were replaced, before any tuning,
//! by questions on sections no split used (the figures above are after
//! the replacement; before it: 21 / 23 / 21, abstained 9 of 11, 2 wrongly;
//! baseline 13 / 18 / 17); several of the rest still ask about sections
//! the tuning splits ask about, in other words.
//!
//! On the held-out `fresh2` split: top-1 27/30 (90 %), top-3 29/30
//! (97 %); the baseline is beaten by 6 questions at top-1 and 2 at top-3,
//! and 5 of the 8 unanswerable questions are abstained on, at the cost
//! of one answerable question wrongly abstained on. Of the issue's goals
//! (top-1 at least 90 %, top-3 at least 97 %, the baseline beaten by at
//! least 6, every unanswerable question abstained on) the first three are
//! met on this split (the third only because the baseline lost a question
//! as the documents changed) and the last is not. The abstain round (the
//! file's share in the relevance signal, the threshold and margin refitted
//! on the three tuning splits together) abstained on one more unanswerable
//! question of the tuning splits without losing an answerable one; on the
//! held-out split it abstained on one more and lost one: no better there,
//! and the figure to expect on new questions. Earlier rounds: `fresh2`'s
//! questions turned out easier than `fresh`'s (the baseline gets 21 of 30
//! on them against 12 of 26): the figures of the two splits while each
//! was held out together, 44/56 (79 %) at top-1 and 55/56 (98 %) at
//! top-3, are the fairer estimate of the ranking. The remaining misses on
//! the tuning splits are mostly close competitors answering a
//! neighbouring question (a gateway option with the same character rule
//! as tool names, a bridge option that "keeps state per connection", a
//! crate's README on remote `$ref`s), which a lexical ranking cannot tell
//! apart; re-weighting the fields, `k1`, the boosts or the related-term
//! weight one at a time gains at most one question at top-1 on the tuning
//! splits, and re-sorting the first hits by relevance loses several.
//! (`--quick`, 117 files / 2,332 sections, is what CI runs: fresh3 21 / 23
//! at top-1 / top-3, baseline 14 / 20; fresh2 27 / 28, baseline 23 / 28;
//! fresh 17 / 26, baseline 12 / 16; held 30 / 36, baseline 19 / 29; tune
//! 18 / 19, baseline 12 / 15. The run fails when the ranking falls below
//! the baseline on a split, and fresh2's top-3 ties it there.)
//!
//! Same run (every split's questions timed 50 times; load average about
//! 4): index build 0.56 s on 2 threads, RSS of the library 23 MB;
//! `search` at limit 10 (snippets included, 9,050 queries): p50 1.05 ms,
//! p90 1.67 ms, p99 5.66 ms; at limit 1: p50 0.54 ms, p99 4.91 ms (the
//! tail is preemption by the other builds: earlier rounds measured p99
//! 4.88 ms at limit 10 at load average 3–4, and 1.7–2.1 ms at load
//! average 2; the quick run's 543 queries at limit 10 gave p99 1.92 ms).
//! The longest query a client may send (4 KiB of distinct words, 9,458
//! sections matched) takes 14 ms.
//! Snippets are
//! built only for the returned hits, with one tokenizer pass over at most
//! [`Options::snippet_scan_bytes`] of each that stems only words starting
//! like a query term; the re-rank reads at most [`index::RERANK_SCAN_BYTES`]
//! of [`index::RERANK_DEPTH`] candidates the same way.
//! ## Performance
//!
//! `cargo run --release -p ferromcp-docs --example bench` generates a synthetic
//! corpus (10,000 Markdown files, 52.5 MB) in a temporary folder, indexes it,
//! runs queries, times a live refresh and removes the corpus. On the 2-core
//! build machine; the first two columns are the earlier ranking (the `bm25`
//! crate, no fields, no re-rank), quiet and while other builds loaded the
//! machine (load average 6–8); the last is this ranking (BM25F, passage
//! re-rank, document coverage), measured only under a heavier load (9–10),
//! so it is an upper bound, but the ranking does cost more per query and
//! per section:
//!
//! | figure | before, quiet | before, loaded | BM25F, loaded (9–10) |
//! | --- | --- | --- | --- |
//! | index 10,000 files / 52.5 MB (walk, read, parse, tokenize, index; 2 threads) | 3.2–3.3 s | 5.7–7.6 s | 10.3–10.8 s |
//! | sections indexed | 74,517 | | 74,517 |
//! | query p50 / p90 / p99 (10 hits with snippets; 2,000 queries of 1–3 words matching ~12,370 sections on average) | 0.16 / 0.33 / 0.46–0.51 ms | 0.19 / 0.40 / 4.5–4.6 ms | 0.60 / 4.8 / 12.7 ms |
//! | query max | 2.1–4.5 ms | 13–133 ms (preempted) | 24 ms |
//! | refresh after one changed file (walk of the 10,000 + reindex) | | 65–100 ms | 101–135 ms |
//! | resident memory after indexing (the text itself is 52.5 MB of it) | 136 MB (peak 139 MB) | 136–137 MB | 169 MB (peak 171 MB) |
//!
//! The extra memory is each section's term list (kept so a section can be
//! removed without re-tokenizing it) and its document key.
//!
//! ## Limits
//!
//! Every limit is a field of [`Options`] with a named default:
//! [`Options::DEFAULT_MAX_FILE_SIZE`], [`Options::DEFAULT_MAX_FILES`],
//! [`Options::DEFAULT_PAGE_SIZE`], [`Options::DEFAULT_MAX_PAGE_SIZE`],
//! [`Options::DEFAULT_PROMPT_SECTIONS`], [`Options::DEFAULT_MAX_QUERY_BYTES`],
//! [`Options::DEFAULT_SNIPPET_WORDS`], [`Options::DEFAULT_SNIPPET_SCAN_BYTES`],
//! [`Options::DEFAULT_PROMPT_SECTION_BYTES`], [`Options::DEFAULT_MAX_PROMPT_BYTES`],
//! [`Options::DEFAULT_DEBOUNCE`], and the abstain threshold
//! [`Options::DEFAULT_MIN_RELEVANCE`] (`mcp serve docs --min-relevance`).
//!
//! Files are read with a bound on the bytes actually read (a file that
//! grows past [`Options::max_file_size`] while read, or claims a size it
//! does not have, is refused at the limit), never through a symbolic link
//! at any component of the path (checked on the opened descriptor, not
//! before the open), and only when the opened descriptor is a regular file
//! (FIFOs, sockets and devices are refused without a read). Reads for
//! `resources/read` run on Tokio's blocking pool, never on its workers.

/// The section index: the ranking core, shared with the gateway's tool
/// search (the `ferromcp-rank` crate).
pub use ferromcp_rank as index;
mod library;
pub mod markdown;
mod mcp;
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
    /// The relevance (0 to 1) a section needs for the `ask` prompt to
    /// embed it; when no section reaches it, the prompt says that the
    /// documentation does not cover the question and names the closest
    /// sections. `search_docs` reports it and whether the best hit reaches it.
    pub min_relevance: f32,
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
    /// Default [`Options::min_relevance`], tuned on the tuning splits
    /// (`tune`, `held`, `fresh`) of the ranking evaluation (see the crate
    /// docs).
    pub const DEFAULT_MIN_RELEVANCE: f32 = 0.62;
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
            min_relevance: Self::DEFAULT_MIN_RELEVANCE,
        }
    }
}
