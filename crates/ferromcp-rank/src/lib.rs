//! # ferromcp-rank
//!
//! A section index: field-weighted BM25 (BM25F) with a passage re-rank.
//! Pure (no files, no I/O): `ferromcp-docs` ranks the sections of a
//! documentation folder with it, the gateway the tools of its upstreams.
//!
//! ```
//! use ferromcp_rank::{Fields, Index, Scratch};
//! let docs = [
//!     Fields { heading: "files__read_file", body: "Reads a file from disk.", ..Fields::default() },
//!     Fields { heading: "time__now", body: "The current time in a timezone.", ..Fields::default() },
//! ];
//! let mut index = Index::new(&docs);
//! for (id, d) in (0u32..).zip(&docs) {
//!     let terms = index.terms(d);
//!     index.insert(id, id, &terms);
//! }
//! let q = index.query("what time is it");
//! let (hits, total) = index.rank(&q, &mut Scratch::default(), 10, |id| {
//!     docs.get(id as usize).map(|d| index.passage_boost(&q, d))
//! });
//! assert_eq!((hits[0].id, total), (1, 1));
//! ```
//!
//! A section is indexed as fields, each with its own weight and length
//! normalisation ([`FIELDS`]): the document title, the section's own
//! heading, the headings above it (its heading path), the prose of its body,
//! its code (fenced blocks and inline code) and its link targets (URLs
//! count as matches but not towards the body's length, so a list of links
//! is not buried by length normalisation).
//!
//! Tokens: words are lowercased and stemmed (Snowball English); English
//! stop words are dropped. An identifier, path, method name or URL
//! (`notifications/initialized`, `max_file_size`, `listChanged`,
//! `https://example.com/x`) is indexed whole *and* as its parts, so a
//! query naming it exactly ranks the sections that name it above those
//! that merely share a common part. Query words are expanded with a small
//! table of related terms ([`RELATED`]) at a reduced weight. A written
//! word the index does not know, of [`TYPO_MIN_CHARS`] letters or more,
//! stands for its most frequent indexed neighbour at edit distance 1 (a
//! typo), at a reduced weight in the score and in the coverage; at most
//! [`TYPO_MAX_WORDS`] words per query are looked up.
//!
//! Scoring: per query term, BM25F's pseudo term frequency
//! `tf~ = Σ weight_f · tf_f / (1 − b_f + b_f · len_f / avglen_f)`,
//! saturated as `tf~ · (k1 + 1) / (k1 + tf~)` and multiplied by the term's
//! IDF `ln(1 + (N − df + 0.5) / (df + 0.5))`. The best
//! [`RERANK_DEPTH`] candidates are then re-ranked by their best passage:
//! how much of the query (by IDF) one window of [`PASSAGE_WORDS`] words
//! holds, how many of the query's adjacent word pairs appear next to
//! each other in the section (a phrase), how much of the query the
//! section's document holds and how much the section itself holds
//! ([`coverage_boost`]).
//!
//! The relevance signal ([`relevance`]) combines the share of the query's
//! IDF mass the section covers, the same share for its whole document and
//! its score normalised by the best score the query could reach; it is in
//! `[0, 1]` and comparable across queries.
//!
//! Posting lists per term hold `(section, tf~)`, so a query costs the
//! length of its terms' lists, not a scan of every section.

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;

/// A section's id in the index.
pub type SectionId = u32;

/// How many sections the length fit reads (evenly spread over the corpus).
pub const AVGDL_SAMPLE: usize = 2_000;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;

/// How much a document holding the whole query (in any of its sections)
/// lifts its sections in the re-rank.
pub const DOCUMENT_BOOST: f32 = 0.3;

/// How much a section holding the whole query (in its own heading,
/// heading path or body) lifts itself in the re-rank; the lift grows with
/// the square of the share of the query it holds ([`coverage_boost`]).
pub const COVERAGE_BOOST: f32 = 0.3;

/// How many of the best BM25F candidates the passage re-rank reads.
pub const RERANK_DEPTH: usize = 20;

/// The passage window of the re-rank, in words.
pub const PASSAGE_WORDS: usize = 40;

/// The most bytes of a section body the re-rank reads.
pub const RERANK_SCAN_BYTES: usize = 2 * 1024;

/// Weight of an expansion term (from [`RELATED`]) relative to the word the
/// user wrote.
const RELATED_WEIGHT: f32 = 0.5;

/// The fewest letters a word needs for typo tolerance: a shorter unknown
/// word is more likely a name than a misspelling.
pub const TYPO_MIN_CHARS: usize = 5;

/// The most unknown words of one query looked up as typos (each costs a
/// few hundred stems and hash lookups), so a long query of made-up words
/// stays cheap.
pub const TYPO_MAX_WORDS: usize = 4;

/// Weight of a typo's correction relative to a word written correctly
/// (in the score and in the query's coverage).
const TYPO_WEIGHT: f32 = 0.7;

/// A section field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The document's title.
    Title = 0,
    /// The section's own heading.
    Heading = 1,
    /// The headings above the section, outermost first.
    Path = 2,
    /// The body's prose (inline code included).
    Body = 3,
    /// Fenced code blocks and inline code.
    Code = 4,
    /// Link targets and bare URLs (not counted in any length).
    Link = 5,
}

const NFIELDS: usize = 6;

/// `(weight, b)` per [`Field`]: how much a match in the field counts and
/// how strongly its length normalises.
pub const FIELDS: [(f32, f32); NFIELDS] = [
    (1.0, 0.3),  // title
    (4.0, 0.5),  // heading
    (1.5, 0.5),  // heading path
    (1.0, 0.75), // body
    (0.6, 0.75), // code
    (0.3, 0.0),  // links
];

/// Related terms: a query word on the left also looks for the words on the
/// right (at half weight). Stems of both sides are compared, so inflections
/// are covered. Kept small and about protocols, servers and documentation.
pub const RELATED: &[(&str, &[&str])] = &[
    ("abort", &["cancel", "cancellation"]),
    ("cancel", &["abort"]),
    ("stop", &["cancel", "shutdown", "terminate"]),
    ("kill", &["terminate", "sigkill", "sigterm"]),
    ("signal", &["sigterm", "sigkill", "sigint"]),
    ("timer", &["timeout"]),
    ("deadline", &["timeout"]),
    ("timed", &["timeout"]),
    ("restart", &["reset", "reconnect"]),
    ("restarted", &["reset", "reconnect"]),
    ("reset", &["restart"]),
    ("resume", &["reconnect", "redelivery", "replay"]),
    ("alive", &["ping", "liveness", "health"]),
    ("heartbeat", &["ping"]),
    ("autocomplete", &["completion", "complete"]),
    ("autocompletion", &["completion", "complete"]),
    ("suggestion", &["completion"]),
    ("page", &["pagination", "cursor"]),
    ("paging", &["pagination", "cursor"]),
    ("paginate", &["pagination", "cursor"]),
    ("subscribe", &["subscription"]),
    ("subscription", &["subscribe"]),
    ("login", &["authorization", "oauth", "authentication"]),
    ("auth", &["authorization", "authentication", "oauth"]),
    ("permission", &["scope", "authorization"]),
    ("folder", &["directory", "root"]),
    ("directory", &["folder", "root"]),
    ("workspace", &["root"]),
    ("llm", &["model", "sampling"]),
    ("settings", &["configuration", "options"]),
    ("config", &["configuration", "options"]),
    ("fail", &["error", "failure"]),
    ("failure", &["error"]),
    ("crash", &["error", "failure"]),
    ("delete", &["remove"]),
    ("remove", &["delete"]),
    ("push", &["notification", "send"]),
    ("notify", &["notification"]),
    ("severity", &["level"]),
    ("id", &["identifier"]),
    ("identifier", &["id"]),
    ("steal", &["theft", "stolen"]),
    ("stolen", &["theft", "steal"]),
    ("hijack", &["hijacking"]),
    // Added while tuning on the `tune` split of the evaluation: words a
    // developer uses for what specifications say otherwise.
    ("check", &["validate", "validation"]),
    ("verify", &["validate", "validation"]),
    ("print", &["write"]),
    ("debug", &["log", "logging"]),
    ("url", &["uri"]),
    ("uri", &["url"]),
    ("remote", &["network"]),
    ("automatically", &["auto"]),
    ("character", &["char"]),
    ("char", &["character"]),
    ("state", &["stateless", "statelessness"]),
];

/// English stop words: function words that carry no topic.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "done", "each", "either", "else", "etc", "for", "from", "further", "had",
    "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "let", "me", "might", "more", "most", "must", "my",
    "need", "no", "nor", "not", "of", "off", "on", "once", "one", "only", "or", "other", "our",
    "out", "over", "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to",
    "too", "under", "until", "up", "very", "via", "want", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your",
    "yours",
];

fn is_stop(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// The hash a term is stored under (SipHash with fixed keys: the same in
/// every process).
fn hash(term: &str) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    term.hash(&mut h);
    h.finish()
}

/// One token of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tok {
    /// The term's hash.
    pub term: u64,
    /// Word position (a whole identifier shares its first part's).
    pub pos: u32,
    /// Byte range of the word in the text.
    pub span: (u32, u32),
    /// Whether this is a link target or URL.
    pub link: bool,
}

/// The tokenizer: splitting, identifiers, stemming, stop words.
pub struct Tokenizer {
    stemmer: Stemmer,
    /// [`RELATED`] with stemmed keys and hashed terms.
    /// (Per entry: the key's stem, the related terms' hashes and stems.)
    related: Vec<(String, Vec<u64>, Vec<String>)>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokenizer")
    }
}

impl Default for Tokenizer {
    fn default() -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let related = RELATED
            .iter()
            .map(|(from, to)| {
                let stems: Vec<String> = to
                    .iter()
                    .map(|t| stemmer.stem(&t.to_lowercase()).into_owned())
                    .collect();
                let terms = stems.iter().map(|t| hash(t)).collect();
                (
                    stemmer.stem(&from.to_lowercase()).into_owned(),
                    terms,
                    stems,
                )
            })
            .collect();
        Self { stemmer, related }
    }
}

/// Characters that join the parts of an identifier, path or URL.
fn is_joiner(c: char) -> bool {
    matches!(
        c,
        '_' | '.' | '/' | ':' | '-' | '#' | '@' | '?' | '=' | '&' | '%' | '~' | '+'
    )
}

impl Tokenizer {
    /// A word's term (lowercased, stemmed), `None` for a stop word.
    pub fn term(&self, word: &str) -> Option<String> {
        let lower = word.to_lowercase();
        if is_stop(&lower) {
            return None;
        }
        Some(self.stemmer.stem(&lower).into_owned())
    }

    /// The tokens of `text`, each with its position and byte span; `out`
    /// gets them appended. Returns the number of word positions used.
    pub fn tokenize(&self, text: &str, first_pos: u32, out: &mut Vec<Tok>) -> u32 {
        self.tokenize_near(text, first_pos, None, out)
    }

    /// Like [`Tokenizer::tokenize`], but with `prefixes` (sorted) only the words
    /// starting like one of them are stemmed and kept (the others only
    /// take their position): a cheap pass for matching a query's terms.
    pub fn tokenize_near(
        &self,
        text: &str,
        first_pos: u32,
        prefixes: Option<&Prefixes>,
        out: &mut Vec<Tok>,
    ) -> u32 {
        let mut pos = first_pos;
        let bytes = text.as_bytes();
        let mut parts: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            // Start of a chunk: an alphanumeric character.
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            if !c.is_alphanumeric() {
                i += c.len_utf8();
                continue;
            }
            let start = i;
            let mut end = i;
            for (k, ch) in text[i..].char_indices() {
                if ch.is_alphanumeric() || is_joiner(ch) {
                    end = i + k + ch.len_utf8();
                } else {
                    break;
                }
            }
            // Trailing joiners are punctuation, not part of the chunk.
            let chunk = text[start..end].trim_end_matches(is_joiner);
            let chunk_end = start + chunk.len();
            i = end.max(start + 1);
            split_parts_into(chunk, &mut parts);
            if let Some(pre) = prefixes
                && !parts.iter().any(|p| pre.near(p))
            {
                // No part can match: only the positions count.
                pos += parts.len() as u32;
                continue;
            }
            let link = chunk.contains("://") || chunk.starts_with("www.");
            let span = (start as u32, chunk_end as u32);
            if parts.len() > 1 {
                out.push(Tok {
                    term: hash(&chunk.to_lowercase()),
                    pos,
                    span,
                    link,
                });
            }
            for p in &parts {
                if let Some(pre) = prefixes
                    && !pre.near(p)
                {
                    pos += 1;
                    continue;
                }
                if let Some(t) = self.term(p) {
                    out.push(Tok {
                        term: hash(&t),
                        pos,
                        span,
                        link,
                    });
                }
                pos += 1;
            }
        }
        pos - first_pos
    }

    /// The distinct terms of a query: `(hash, weight, primary)` where
    /// primary terms are the words written (they count for coverage) and
    /// the others are whole identifiers or related terms.
    pub fn query(&self, text: &str) -> Vec<QueryTerm> {
        let mut toks = Vec::new();
        self.tokenize(text, 0, &mut toks);
        let mut out: Vec<QueryTerm> = Vec::new();
        let mut push = |t: QueryTerm| {
            if let Some(o) = out.iter_mut().find(|o| o.term == t.term) {
                o.weight = o.weight.max(t.weight);
                o.primary |= t.primary;
                o.pos = o.pos.min(t.pos);
            } else {
                out.push(t);
            }
        };
        // Whole identifiers are the tokens sharing a position with a part
        // emitted after them; tell them apart by re-deriving parts.
        let mut k = 0;
        while k < toks.len() {
            let t = toks[k];
            let same: Vec<Tok> = toks[k..]
                .iter()
                .take_while(|o| o.span == t.span)
                .copied()
                .collect();
            let chunk = text.get(t.span.0 as usize..t.span.1 as usize).unwrap_or("");
            let whole = split_parts(chunk).len() > 1;
            for (j, o) in same.iter().enumerate() {
                let is_whole = whole && j == 0;
                push(QueryTerm {
                    term: o.term,
                    weight: 1.0,
                    primary: !is_whole,
                    pos: o.pos,
                });
            }
            k += same.len().max(1);
        }
        // Related terms of each written word.
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let lower = w.to_lowercase();
            let stem = self.stemmer.stem(&lower);
            for (from, to, _) in &self.related {
                if *from == stem {
                    for t in to {
                        push(QueryTerm {
                            term: *t,
                            weight: RELATED_WEIGHT,
                            primary: false,
                            pos: u32::MAX,
                        });
                    }
                }
            }
        }
        out
    }
}

/// The chunks of `text` the tokenizer reads (a word, or an identifier,
/// path or URL with its joiners), with their byte offsets.
pub fn chunks(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_alnum_end = 0;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
            last_alnum_end = i + c.len_utf8();
        } else if !(is_joiner(c) && start.is_some())
            && let Some(s) = start.take()
        {
            out.push((s, &text[s..last_alnum_end]));
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..last_alnum_end]));
    }
    out
}

/// Leading characters of stems, packed (up to 3 characters
/// of 21 bits each) and sorted: "could this word stem to a query term?" in
/// at most three integer binary searches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefixes(Vec<u64>);

impl Prefixes {
    fn push(&mut self, stem: &str) {
        if let Some(k) = prefix_keys(stem).last() {
            self.0.push(k);
        }
    }

    fn finish(&mut self) {
        self.0.sort_unstable();
        self.0.dedup();
    }

    /// Whether `word` (any case) starts like one of the prefixes.
    pub fn near(&self, word: &str) -> bool {
        prefix_keys(word).any(|k| self.0.binary_search(&k).is_ok())
    }
}

/// The packed keys of the first 1, 2, … [`PREFIX_CHARS`] lowercase
/// characters of `word`.
fn prefix_keys(word: &str) -> impl Iterator<Item = u64> + '_ {
    word.chars()
        .flat_map(char::to_lowercase)
        .take(PREFIX_CHARS)
        .enumerate()
        .scan(0u64, |acc, (i, c)| {
            *acc |= u64::from(u32::from(c)) << (21 * i);
            Some(*acc)
        })
}

/// How many leading characters a word must share with a query term's stem
/// to be stemmed in a matching pass (stemming only rewrites endings).
const PREFIX_CHARS: usize = 3;

/// A chunk's parts: split at joiners and at lower-to-upper case changes
/// (`listChanged` → `list`, `Changed`).
fn split_parts(chunk: &str) -> Vec<&str> {
    let mut out = Vec::new();
    split_parts_into(chunk, &mut out);
    out
}

/// [`split_parts`] into a reused buffer (cleared first).
fn split_parts_into<'a>(chunk: &'a str, out: &mut Vec<&'a str>) {
    out.clear();
    for piece in chunk.split(|c: char| !c.is_alphanumeric()) {
        if piece.is_empty() {
            continue;
        }
        let mut start = 0;
        let mut prev_lower = false;
        for (k, c) in piece.char_indices() {
            if c.is_uppercase() && prev_lower {
                out.push(&piece[start..k]);
                start = k;
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
        }
        out.push(&piece[start..]);
    }
}

/// One term of a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryTerm {
    /// The term's hash.
    pub term: u64,
    /// 1 for a word written, less for a related term.
    pub weight: f32,
    /// Whether it counts towards coverage (a word written, not a whole
    /// identifier or a related term).
    pub primary: bool,
    /// Position in the query (`u32::MAX` for related terms).
    pub pos: u32,
}

/// A section's text, by field.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    /// The document title.
    pub title: &'a str,
    /// The section heading.
    pub heading: &'a str,
    /// The headings above the section, joined.
    pub path: &'a str,
    /// The body (Markdown), heading line excluded.
    pub body: &'a str,
}

/// Byte ranges of `body` that are code (fenced blocks, inline code) and
/// link targets (`](target)`, `<scheme://…>`, reference definitions).
pub fn markup_ranges(body: &str) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    let mut code = Vec::new();
    let mut links = Vec::new();
    let mut fence: Option<(u8, usize, usize)> = None;
    let mut pos = 0;
    for line in body.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let fch = t.bytes().next().filter(|b| *b == b'`' || *b == b'~');
        let run = fch.map_or(0, |b| t.bytes().take_while(|c| *c == b).count());
        if let Some((ch, n, from)) = fence {
            if fch == Some(ch) && run >= n && t.trim_end().bytes().all(|b| b == ch) {
                code.push(from..pos);
                fence = None;
            }
            continue;
        }
        if indent <= 3
            && run >= 3
            && let Some(ch) = fch
        {
            fence = Some((ch, run, start));
            continue;
        }
        // Reference definition: `[label]: target`.
        if t.starts_with('[')
            && let Some(close) = t.find("]:")
        {
            let tgt = start + indent + close + 2;
            links.push(tgt..pos);
            continue;
        }
        let b = line.as_bytes();
        let mut k = 0;
        while k < b.len() {
            match b[k] {
                b'`' => {
                    let n = b[k..].iter().take_while(|c| **c == b'`').count();
                    let rest = &line[k + n..];
                    let tick = "`".repeat(n);
                    if let Some(e) = rest.find(&tick) {
                        code.push(start + k + n..start + k + n + e);
                        k += n + e + n;
                    } else {
                        k += n;
                    }
                }
                b']' if b.get(k + 1) == Some(&b'(') => {
                    if let Some(e) = line[k + 2..].find(')') {
                        links.push(start + k + 2..start + k + 2 + e);
                        k += 2 + e + 1;
                    } else {
                        k += 1;
                    }
                }
                b'<' => {
                    let rest = &line[k + 1..];
                    match rest.find('>') {
                        Some(e) if rest[..e].contains("://") => {
                            links.push(start + k + 1..start + k + 1 + e);
                            k += e + 2;
                        }
                        _ => k += 1,
                    }
                }
                _ => k += 1,
            }
        }
    }
    if let Some((_, _, from)) = fence {
        code.push(from..body.len());
    }
    (code, links)
}

/// The terms of a section: per term its BM25F pseudo term frequency.
#[derive(Debug, Clone, Default)]
pub struct Terms(Vec<(u64, f32)>);

impl Terms {
    /// Whether the section has no terms.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    section: SectionId,
    weight: f32,
}

/// The inverted index over sections.
pub struct Index {
    tokenizer: Tokenizer,
    avglen: [f32; NFIELDS],
    postings: HashMap<u64, Vec<Posting>>,
    /// The terms each live section was indexed under (for removal).
    terms_of: Vec<Vec<u64>>,
    /// Each section's document key.
    doc_of: Vec<SectionId>,
    live: usize,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("terms", &self.postings.len())
            .field("sections", &self.live)
            .finish_non_exhaustive()
    }
}

/// A scored candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The section.
    pub id: SectionId,
    /// BM25F score (after the re-rank, when re-ranked).
    pub score: f32,
    /// The share of the query's IDF mass the section holds, in `[0, 1]`.
    pub coverage: f32,
    /// The same share for the section's whole document (any section).
    pub doc_coverage: f32,
}

/// Scratch space of [`Index::score`], kept between queries (per thread).
#[derive(Debug, Default)]
pub struct Scratch {
    /// Per section: score and covered IDF.
    sections: Vec<(f32, f32)>,
    /// Per document (by its key): covered IDF, and the last query term
    /// counted (+1; 0 = none).
    docs: Vec<(f32, u32)>,
}

/// A parsed query with its terms' IDFs.
#[derive(Debug, Clone, Default)]
pub struct Query {
    terms: Vec<(QueryTerm, f32)>,
    /// Σ idf · weight · (k1 + 1): the most a section can score.
    max_score: f32,
    /// Σ idf over primary terms (written words), unknown words included.
    primary_idf: f32,
    /// Leading characters of every term's stem (see
    /// [`Tokenizer::tokenize_near`]).
    prefixes: Prefixes,
}

impl Query {
    /// The best score any section could reach for this query.
    pub fn max_score(&self) -> f32 {
        self.max_score
    }

    /// Leading characters of the query terms' stems.
    pub fn prefixes(&self) -> &Prefixes {
        &self.prefixes
    }

    /// Whether `term` is one of the query's terms.
    pub fn has(&self, term: u64) -> bool {
        self.terms.iter().any(|(t, _)| t.term == term)
    }
}

/// The re-rank multiplier of a section holding `coverage` (in `[0, 1]`) of
/// the query's IDF mass: `1 + COVERAGE_BOOST · coverage²`. Siblings share
/// their title and heading path, so between two sections of one document
/// it favours the one whose own heading and body hold more of the query,
/// and the square keeps a section holding half the query close to one
/// holding none.
pub fn coverage_boost(coverage: f32) -> f32 {
    let c = coverage.clamp(0.0, 1.0);
    1.0 + COVERAGE_BOOST * c * c
}

/// The relevance signal of a hit, in `[0, 1]`: the share of the query's
/// IDF mass the section holds (weight 0.55), the same share for its whole
/// document (0.2) and its score relative to the best the query could
/// reach (0.25, full at a third of it). The document's share tells a
/// section that shares a question's rare words with a document about
/// something else (another product's TLS set-up, for "mutual TLS for the
/// gateway") from one whose document covers the rest of the question.
pub fn relevance(hit: &Scored, q: &Query) -> f32 {
    let norm = if q.max_score > 0.0 {
        (hit.score / q.max_score).clamp(0.0, 1.0)
    } else {
        0.0
    };
    // A score near a third of the maximum is already a strong match.
    (0.55 * hit.coverage + 0.2 * hit.doc_coverage + 0.25 * (norm * 3.0).min(1.0)).clamp(0.0, 1.0)
}

impl Index {
    /// An empty index whose average field lengths are fitted to `sample`.
    pub fn new(sample: &[Fields<'_>]) -> Self {
        let tokenizer = Tokenizer::default();
        let step = (sample.len() / AVGDL_SAMPLE).max(1);
        let mut sums = [0f64; NFIELDS];
        let mut n = 0f64;
        let mut toks = Vec::new();
        for f in sample.iter().step_by(step) {
            let lens = field_lengths(&tokenizer, f, &mut toks);
            for (s, l) in sums.iter_mut().zip(lens) {
                *s += f64::from(l);
            }
            n += 1.0;
        }
        let mut avglen = [1.0f32; NFIELDS];
        if n > 0.0 {
            for (a, s) in avglen.iter_mut().zip(sums) {
                *a = ((s / n) as f32).max(1.0);
            }
        } else {
            avglen = [4.0, 4.0, 8.0, 200.0, 50.0, 1.0];
        }
        Self {
            tokenizer,
            avglen,
            postings: HashMap::new(),
            terms_of: Vec::new(),
            doc_of: Vec::new(),
            live: 0,
        }
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The terms of a section (pure: may run on any thread).
    pub fn terms(&self, f: &Fields<'_>) -> Terms {
        let mut tf: HashMap<u64, [f32; NFIELDS]> = HashMap::new();
        let mut toks = Vec::new();
        let lens = field_tokens(&self.tokenizer, f, &mut toks);
        for (field, t) in toks {
            tf.entry(t.term).or_insert([0.0; NFIELDS])[field as usize] += 1.0;
        }
        let mut v: Vec<(u64, f32)> = tf
            .into_iter()
            .map(|(term, counts)| {
                let mut w = 0.0;
                for (k, c) in counts.iter().enumerate() {
                    if *c > 0.0 {
                        let (weight, b) = FIELDS[k];
                        let norm = 1.0 - b + b * (lens[k] as f32) / self.avglen[k];
                        w += weight * c / norm.max(0.1);
                    }
                }
                (term, w)
            })
            .collect();
        v.sort_unstable_by_key(|t| t.0);
        Terms(v)
    }

    /// Adds a section with precomputed terms.
    /// `doc` identifies the section's document: the same for all its
    /// sections (for example the id of its first section).
    pub fn insert(&mut self, id: SectionId, doc: SectionId, terms: &Terms) {
        let i = id as usize;
        let need = i.max(doc as usize) + 1;
        if self.terms_of.len() < need {
            self.terms_of.resize(need, Vec::new());
            self.doc_of.resize(need, 0);
        }
        self.doc_of[i] = doc;
        for (t, w) in &terms.0 {
            self.postings.entry(*t).or_default().push(Posting {
                section: id,
                weight: *w,
            });
        }
        self.terms_of[i] = terms.0.iter().map(|t| t.0).collect();
        self.live += 1;
    }

    /// Removes a section.
    pub fn remove(&mut self, id: SectionId) {
        let Some(terms) = self.terms_of.get_mut(id as usize).map(std::mem::take) else {
            return;
        };
        for t in &terms {
            if let Some(list) = self.postings.get_mut(t) {
                list.retain(|p| p.section != id);
                if list.is_empty() {
                    self.postings.remove(t);
                }
            }
        }
        self.live = self.live.saturating_sub(1);
    }

    /// The number of indexed sections.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn idf(&self, df: usize) -> f32 {
        let n = self.live as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Parses `text` into a query with its terms' IDFs.
    pub fn query(&self, text: &str) -> Query {
        let mut q = Query::default();
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .flat_map(split_parts)
        {
            let lower = w.to_lowercase();
            let stem = self.tokenizer.stemmer.stem(&lower);
            if !is_stop(&lower) {
                q.prefixes.push(&stem);
            }
            for r in self.tokenizer.related.iter().filter(|r| r.0 == stem) {
                for t in &r.2 {
                    q.prefixes.push(t);
                }
            }
        }
        // Typos: a written word the index does not know, of at least
        // TYPO_MIN_CHARS letters, stands for its most frequent indexed
        // neighbour at edit distance 1 (see `Index::correct`).
        let mut typos: Vec<(u64, u64)> = Vec::new();
        let mut tried = 0;
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .flat_map(split_parts)
        {
            let Some(stem) = self.tokenizer.term(w) else {
                continue;
            };
            let h = hash(&stem);
            if self.postings.contains_key(&h) || typos.iter().any(|t| t.0 == h) {
                continue;
            }
            if tried >= TYPO_MAX_WORDS {
                break;
            }
            tried += usize::from(w.len() >= TYPO_MIN_CHARS);
            if let Some(fix) = self.correct(w, &stem) {
                q.prefixes.push(&fix);
                typos.push((h, hash(&fix)));
            }
        }
        q.prefixes.finish();
        for mut t in self.tokenizer.query(text) {
            if t.primary
                && let Some((_, fix)) = typos.iter().find(|x| x.0 == t.term)
            {
                t.term = *fix;
                t.weight = TYPO_WEIGHT;
            }
            let df = self.postings.get(&t.term).map_or(0, Vec::len);
            // A written word no section holds still counts against
            // coverage, at the highest IDF.
            let idf = self.idf(df);
            if t.primary {
                q.primary_idf += idf;
            }
            if df > 0 {
                q.max_score += idf * t.weight * (K1 + 1.0);
            }
            q.terms.push((t, idf));
        }
        q
    }

    /// The indexed stem nearest to a word the index does not know: among
    /// the edits at distance 1 (a letter deleted, swapped with the next,
    /// replaced or inserted) of its stem, and the deletions and swaps of
    /// the word itself (then stemmed), the one the most sections hold.
    /// (Stemming every replacement and insertion of the word would cost
    /// about 26 stems per letter; hashing the stem's edits costs little.)
    /// Only for words of [`TYPO_MIN_CHARS`] or more ASCII letters.
    fn correct(&self, word: &str, stem: &str) -> Option<String> {
        let lower = word.to_ascii_lowercase();
        if lower.len() < TYPO_MIN_CHARS || !lower.bytes().all(|b| b.is_ascii_lowercase()) {
            return None;
        }
        let mut best: Option<(usize, String)> = None;
        let mut consider = |cand: &str| {
            let Some(list) = self.postings.get(&hash(cand)) else {
                return;
            };
            let df = list.len();
            if best
                .as_ref()
                .is_none_or(|(d, s)| df > *d || (df == *d && cand < s.as_str()))
            {
                best = Some((df, cand.to_owned()));
            }
        };
        let mut buf = String::new();
        edits(stem, true, &mut buf, |c| consider(c));
        edits(&lower, false, &mut buf, |c| {
            if let Some(t) = self.tokenizer.term(c) {
                consider(&t);
            }
        });
        best.map(|b| b.1)
    }

    /// Every section matching at least one query term, with its BM25F
    /// score, its coverage and its document's coverage, in one pass over
    /// the query terms' posting lists.
    pub fn score(&self, q: &Query, scratch: &mut Scratch) -> Vec<Scored> {
        let mut touched: Vec<SectionId> = Vec::new();
        let mut touched_docs: Vec<SectionId> = Vec::new();
        let n = self.doc_of.len();
        if scratch.sections.len() < n {
            scratch.sections.resize(n, (0.0, 0.0));
            scratch.docs.resize(n, (0.0, 0));
        }
        for (k, (t, idf)) in q.terms.iter().enumerate() {
            let Some(list) = self.postings.get(&t.term) else {
                continue;
            };
            let mark = u32::try_from(k + 1).unwrap_or(u32::MAX);
            for p in list {
                let i = p.section as usize;
                let Some(s) = scratch.sections.get_mut(i) else {
                    continue;
                };
                if s.0 == 0.0 && s.1 == 0.0 {
                    touched.push(p.section);
                }
                s.0 += idf * t.weight * p.weight * (K1 + 1.0) / (K1 + p.weight);
                if t.primary {
                    s.1 += idf * t.weight;
                    let doc = self.doc_of.get(i).copied().unwrap_or(p.section);
                    if let Some(d) = scratch.docs.get_mut(doc as usize)
                        && d.1 != mark
                    {
                        if d.1 == 0 {
                            touched_docs.push(doc);
                        }
                        d.1 = mark;
                        d.0 += idf * t.weight;
                    }
                }
            }
        }
        let denom = q.primary_idf.max(f32::MIN_POSITIVE);
        let out = touched
            .iter()
            .filter_map(|s| {
                let (score, cov) = *scratch.sections.get(*s as usize)?;
                let doc = self.doc_of.get(*s as usize).copied().unwrap_or(*s);
                let doc_cov = scratch.docs.get(doc as usize).map_or(0.0, |d| d.0);
                (score > 0.0).then_some(Scored {
                    id: *s,
                    score,
                    coverage: (cov / denom).min(1.0),
                    doc_coverage: (doc_cov / denom).min(1.0),
                })
            })
            .collect();
        for s in touched {
            if let Some(x) = scratch.sections.get_mut(s as usize) {
                *x = (0.0, 0.0);
            }
        }
        for d in touched_docs {
            if let Some(x) = scratch.docs.get_mut(d as usize) {
                *x = (0.0, 0);
            }
        }
        out
    }

    /// The re-rank multiplier of a candidate from its text: `1 +` the
    /// share of the query (by IDF) its best passage holds `+` a bonus per
    /// query word pair found as a phrase.
    pub fn passage_boost(&self, q: &Query, f: &Fields<'_>) -> f32 {
        let mut toks = Vec::new();
        let body = prefix_at_char(f.body, RERANK_SCAN_BYTES);
        let head = format!("{} {}", f.path, f.heading);
        let pre = Some(&q.prefixes);
        let n = self.tokenizer.tokenize_near(&head, 0, pre, &mut toks);
        self.tokenizer.tokenize_near(body, n + 1, pre, &mut toks);
        let primary: Vec<(u64, f32, u32)> = q
            .terms
            .iter()
            .filter(|(t, _)| t.primary)
            .map(|(t, idf)| (t.term, *idf, t.pos))
            .collect();
        let total: f32 = primary.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return 1.0;
        }
        // (position, index into primary) of every matching token.
        let hits: Vec<(u32, usize)> = toks
            .iter()
            .filter_map(|t| {
                primary
                    .iter()
                    .position(|p| p.0 == t.term)
                    .map(|k| (t.pos, k))
            })
            .collect();
        // Best window: the most query IDF among PASSAGE_WORDS positions.
        let mut best = 0f32;
        let mut counts = vec![0u32; primary.len()];
        let mut sum = 0f32;
        let mut lo = 0;
        for hi in 0..hits.len() {
            let (p, k) = hits[hi];
            if counts[k] == 0 {
                sum += primary[k].1;
            }
            counts[k] += 1;
            while hits[lo].0 + (PASSAGE_WORDS as u32) <= p {
                let k0 = hits[lo].1;
                counts[k0] -= 1;
                if counts[k0] == 0 {
                    sum -= primary[k0].1;
                }
                lo += 1;
            }
            best = best.max(sum);
        }
        // Phrases: query words adjacent in the query found adjacent (in
        // order, at most one word apart) in the section.
        // (Linear in the hits per pair; at most 3 pairs are counted.)
        let mut phrases = 0u32;
        let mut seen = std::collections::HashSet::new();
        for (ka, a) in primary.iter().enumerate() {
            if phrases >= 3 {
                break;
            }
            let Some(kb) = primary.iter().position(|b| b.2 == a.2.wrapping_add(1)) else {
                continue;
            };
            seen.clear();
            seen.extend(hits.iter().filter(|h| h.1 == ka).map(|h| h.0));
            let found = hits.iter().filter(|h| h.1 == kb).any(|h| {
                seen.contains(&(h.0.wrapping_sub(1))) || seen.contains(&(h.0.wrapping_sub(2)))
            });
            phrases += u32::from(found);
        }
        1.0 + 0.5 * best / total + 0.15 * phrases.min(3) as f32
    }

    /// The ranking: every section matching the query, BM25F-scored, the
    /// best `keep` (at least [`RERANK_DEPTH`]) sorted best first and the
    /// best [`RERANK_DEPTH`] of them re-ranked by `passage` (the
    /// [`Index::passage_boost`] of a section, `None` for one that is
    /// gone), by their document's coverage ([`DOCUMENT_BOOST`]) and by
    /// their own coverage ([`coverage_boost`]).
    /// Returns the sorted hits (the rest is dropped) and how many sections
    /// matched. Ties are broken by section id, so the order is stable.
    pub fn rank(
        &self,
        q: &Query,
        scratch: &mut Scratch,
        keep: usize,
        mut passage: impl FnMut(SectionId) -> Option<f32>,
    ) -> (Vec<Scored>, usize) {
        let mut hits = self.score(q, scratch);
        let total = hits.len();
        let by_score = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id));
        // The page and the re-rank depth, whichever reaches further; the
        // rest is never sorted.
        let rerank = RERANK_DEPTH.min(total);
        let keep = keep.max(rerank).min(total);
        if keep < hits.len() && keep > 0 {
            hits.select_nth_unstable_by(keep - 1, by_score);
            hits.truncate(keep);
        }
        hits.sort_unstable_by(by_score);
        // Re-rank the best candidates by their best passage. A boost is at
        // least 1, so they stay above every candidate not re-ranked.
        for h in hits.iter_mut().take(rerank) {
            if let Some(boost) = passage(h.id) {
                h.score *=
                    boost * (1.0 + DOCUMENT_BOOST * h.doc_coverage) * coverage_boost(h.coverage);
            }
        }
        hits[..rerank].sort_unstable_by(by_score);
        (hits, total)
    }

    /// Whether a word of a document matches one of the query's terms.
    pub fn word_matches(&self, word: &str, q: &Query) -> bool {
        let mut toks = Vec::new();
        self.tokenizer.tokenize(word, 0, &mut toks);
        toks.iter().any(|t| q.has(t.term))
    }
}

/// The words at edit distance 1 from the ASCII word `w`: deletions and
/// swaps of neighbours, and with `all` also substitutions and insertions
/// of a letter `a`–`z`; each passed to `f` (duplicates possible).
fn edits(w: &str, all: bool, buf: &mut String, mut f: impl FnMut(&str)) {
    let b = w.as_bytes();
    if !w.is_ascii() {
        return;
    }
    let mut emit = |buf: &mut String, bytes: &[&[u8]]| {
        buf.clear();
        for part in bytes {
            // Parts are slices of an ASCII word or a single ASCII letter.
            buf.extend(part.iter().map(|&c| char::from(c)));
        }
        f(buf);
    };
    for i in 0..b.len() {
        emit(buf, &[&b[..i], &b[i + 1..]]);
        if i + 1 < b.len() {
            emit(buf, &[&b[..i], &[b[i + 1], b[i]], &b[i + 2..]]);
        }
    }
    if !all {
        return;
    }
    for c in b'a'..=b'z' {
        for i in 0..=b.len() {
            emit(buf, &[&b[..i], &[c], &b[i..]]);
            if i < b.len() && b[i] != c {
                emit(buf, &[&b[..i], &[c], &b[i + 1..]]);
            }
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends at a
/// character boundary.
pub fn prefix_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// Tokens of every field, and each field's length in words (links: 0).
fn field_tokens(tk: &Tokenizer, f: &Fields<'_>, out: &mut Vec<(Field, Tok)>) -> [u32; NFIELDS] {
    let mut lens = [0u32; NFIELDS];
    let mut toks = Vec::new();
    let add = |field: Field,
               text: &str,
               lens: &mut [u32; NFIELDS],
               toks: &mut Vec<Tok>,
               out: &mut Vec<(Field, Tok)>| {
        toks.clear();
        let n = tk.tokenize(text, 0, toks);
        // URLs in the prose are links: not part of the body's length.
        let mut link_pos: Vec<u32> = toks.iter().filter(|t| t.link).map(|t| t.pos).collect();
        link_pos.dedup();
        lens[field as usize] += if field == Field::Body {
            n.saturating_sub(link_pos.len() as u32)
        } else {
            n
        };
        for t in toks.iter() {
            let fl = if t.link && field == Field::Body {
                Field::Link
            } else {
                field
            };
            out.push((fl, *t));
        }
    };
    add(Field::Title, f.title, &mut lens, &mut toks, out);
    add(Field::Heading, f.heading, &mut lens, &mut toks, out);
    add(Field::Path, f.path, &mut lens, &mut toks, out);
    // The body without its link targets; code blocks to the code field.
    let (code, links) = markup_ranges(f.body);
    let mut prose = String::with_capacity(f.body.len());
    let mut cut: Vec<(Range<usize>, bool)> = code
        .iter()
        .map(|r| (r.clone(), true))
        .chain(links.iter().map(|r| (r.clone(), false)))
        .collect();
    cut.sort_by_key(|r| r.0.start);
    let mut at = 0;
    for (r, is_code) in &cut {
        if r.start < at {
            continue;
        }
        prose.push_str(f.body.get(at..r.start).unwrap_or(""));
        prose.push(' ');
        let inner = f.body.get(r.clone()).unwrap_or("");
        if *is_code {
            add(Field::Code, inner, &mut lens, &mut toks, out);
            // Inline code is prose too (a fenced block is not).
            if !inner.contains('\n') {
                prose.push_str(inner);
                prose.push(' ');
            }
        } else {
            toks.clear();
            tk.tokenize(inner, 0, &mut toks);
            out.extend(toks.iter().map(|t| (Field::Link, *t)));
        }
        at = r.end;
    }
    prose.push_str(f.body.get(at..).unwrap_or(""));
    add(Field::Body, &prose, &mut lens, &mut toks, out);
    lens[Field::Link as usize] = 0;
    lens
}

fn field_lengths(
    tk: &Tokenizer,
    f: &Fields<'_>,
    scratch: &mut Vec<(Field, Tok)>,
) -> [u32; NFIELDS] {
    scratch.clear();
    field_tokens(tk, f, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(docs: &[Fields<'_>]) -> Index {
        let mut ix = Index::new(docs);
        for (i, d) in docs.iter().enumerate() {
            let t = ix.terms(d);
            let id = u32::try_from(i).unwrap_or(0);
            ix.insert(id, id, &t);
        }
        ix
    }

    fn body(b: &str) -> Fields<'_> {
        Fields {
            body: b,
            ..Fields::default()
        }
    }

    fn ranked(ix: &Index, q: &str) -> Vec<u32> {
        let q = ix.query(q);
        let mut hits = ix.score(&q, &mut Scratch::default());
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.iter().map(|h| h.id).collect()
    }

    #[test]
    fn ranks_by_bm25_and_removes() {
        let docs = [
            body("installing the server with cargo install"),
            body("configuration options for logging and tracing"),
            body("the server installs quickly; installation notes"),
        ];
        let mut ix = build(&docs);
        let ids = ranked(&ix, "install");
        assert_eq!(ids.len(), 2);
        assert!(!ids.contains(&1));
        ix.remove(0);
        assert_eq!(ranked(&ix, "install"), [2]);
        let q = ix.query("install");
        assert!(ix.word_matches("Installing", &q));
        assert!(!ix.word_matches("logging", &q));
        assert!(ix.word_matches("quill.toml", &ix.query("toml")));
    }

    // Issue 28: `notifications/initialized` must not rank sections that
    // merely say "notifications" above the one naming the method.
    #[test]
    fn identifiers_are_whole_and_parts() {
        let docs = [
            body(
                "Notifications are sent for many things. Notifications notifications, initialized state.",
            ),
            body("After the handshake the client sends `notifications/initialized` once."),
            body("notifications about notifications and more notifications"),
        ];
        let ix = build(&docs);
        assert_eq!(ranked(&ix, "notifications/initialized").first(), Some(&1));
        let mut toks = Vec::new();
        ix.tokenizer()
            .tokenize("max_file_size listChanged", 0, &mut toks);
        // whole + 3 parts, whole + 2 parts
        assert_eq!(toks.len(), 7);
    }

    // Issue 28: a section that is mostly link URLs keeps its body short.
    #[test]
    fn link_targets_do_not_count_in_length() {
        let links = "See the [spec](https://example.com/a/very/long/path/to/some/page/one) and \
                     [guide](https://example.com/another/very/long/path/to/a/page/two) and \
                     <https://example.org/yet/another/long/url/with/many/parts/three>.";
        let mut toks = Vec::new();
        let f = body(links);
        let lens = field_tokens(&Tokenizer::default(), &f, &mut toks);
        // "See the spec and guide and": six words, none of the URLs' parts.
        assert_eq!(lens[Field::Body as usize], 6, "{lens:?}");
        assert_eq!(lens[Field::Link as usize], 0);
        assert!(toks.iter().any(|(fl, _)| *fl == Field::Link));
    }

    // Issue 28: abort/cancel, timer/timeout are related.
    #[test]
    fn related_terms_expand_the_query() {
        let docs = [
            body("How to cancel a request in flight."),
            body("Unrelated text about logging."),
        ];
        let ix = build(&docs);
        assert_eq!(ranked(&ix, "abort"), [0]);
        let docs = [body("the request timeout"), body("a kitchen")];
        let ix = build(&docs);
        assert_eq!(ranked(&ix, "timer"), [0]);
    }

    // Issue 28 (tuning): a developer's word finds the specification's word:
    // check/validation, print/write, url/uri, characters/chars,
    // state/statelessness.
    #[test]
    fn developer_words_find_specification_words() {
        let docs = [
            body("The server validation order of a request."),
            body("Write only MCP messages to stdout."),
            body("Never dereference network URIs."),
            body("Names of 1 to 128 chars."),
            body("Statelessness rules of the modern protocol."),
            body("A kitchen with a table."),
        ];
        let ix = build(&docs);
        let first = |q: &str| ranked(&ix, q).first().copied();
        assert_eq!(first("check"), Some(0));
        assert_eq!(first("print"), Some(1));
        assert_eq!(first("url"), Some(2));
        assert_eq!(first("characters"), Some(3));
        assert_eq!(first("state"), Some(4));
    }

    #[test]
    fn heading_outweighs_body_and_phrase_boosts() {
        let docs = [
            Fields {
                heading: "Session Management",
                ..body("Text.")
            },
            body("A session is one thing; management is another, in a long body of words."),
        ];
        let ix = build(&docs);
        assert_eq!(ranked(&ix, "session management").first(), Some(&0));
        let q = ix.query("session management");
        let near = ix.passage_boost(&q, &body("the session management rules"));
        let far = ix.passage_boost(&q, &body("session is here and then much later management"));
        assert!(near > far, "{near} {far}");
    }

    #[test]
    fn coverage_and_relevance() {
        let docs = [body("pagination with a cursor"), body("cursor shapes")];
        let ix = build(&docs);
        let q = ix.query("pagination cursor");
        let hits = ix.score(&q, &mut Scratch::default());
        let full = hits.iter().find(|h| h.id == 0).map(|h| h.coverage);
        let half = hits.iter().find(|h| h.id == 1).map(|h| h.coverage);
        assert_eq!(full, Some(1.0));
        assert!(half.is_some_and(|c| c < 0.6));
        // A word no section holds lowers coverage.
        let q2 = ix.query("pagination kubernetes");
        let c = ix.score(&q2, &mut Scratch::default())[0].coverage;
        assert!(c < 0.6, "{c}");
        let none = Scored {
            id: 0,
            score: 0.0,
            coverage: 0.0,
            doc_coverage: 0.0,
        };
        assert!(relevance(&none, &q2) == 0.0);
    }

    // Issue 28 (the abstain decision): a section holding part of a query
    // is more relevant when its document holds the rest than when the
    // document holds no more of it than the section does.
    #[test]
    fn relevance_counts_the_documents_coverage() {
        let docs = [body("pagination with a cursor")];
        let ix = build(&docs);
        let q = ix.query("pagination cursor");
        let hit = |doc_coverage| Scored {
            id: 0,
            score: q.max_score() / 3.0,
            coverage: 0.5,
            doc_coverage,
        };
        let alone = relevance(&hit(0.5), &q);
        let backed = relevance(&hit(1.0), &q);
        assert!(backed > alone, "{backed} {alone}");
        assert!((backed - alone - 0.1).abs() < 1e-4, "{backed} {alone}");
        assert!((relevance(&hit(1.0), &q) - (0.55 * 0.5 + 0.2 + 0.25)).abs() < 1e-4);
    }

    // Issue 28 (sibling sections): between two sections of one document,
    // the one holding the whole query in its own heading and body beats a
    // sibling that scores higher on one word alone.
    #[test]
    fn a_section_holding_more_of_the_query_wins_the_rerank() {
        let docs = [
            Fields {
                heading: "Backoff",
                body: "the backoff doubles up to a cap",
                ..Fields::default()
            },
            Fields {
                heading: "Retries",
                body: "a failed call is sent again after a backoff",
                ..Fields::default()
            },
            body("retry logging"),
            body("retry budget"),
            body("configuration options"),
        ];
        let mut ix = Index::new(&docs);
        for (id, d) in (0u32..).zip(&docs) {
            // The first two are sections of one document.
            let t = ix.terms(d);
            ix.insert(id, if id < 2 { 0 } else { id }, &t);
        }
        let q = ix.query("retry backoff");
        let raw = ix.score(&q, &mut Scratch::default());
        let of = |id: u32| raw.iter().find(|h| h.id == id).copied();
        let (Some(one), Some(both)) = (of(0), of(1)) else {
            panic!("both sections match: {raw:?}");
        };
        // BM25F alone prefers the section that holds one word, often.
        assert!(one.score > both.score, "{one:?} {both:?}");
        assert!(
            one.coverage < 0.8 && both.coverage == 1.0,
            "{one:?} {both:?}"
        );
        // The passage re-rank is neutral here: coverage decides.
        let (hits, _) = ix.rank(&q, &mut Scratch::default(), 10, |_| Some(1.0));
        assert_eq!(hits.first().map(|h| h.id), Some(1), "{hits:?}");
        assert!((coverage_boost(1.0) - (1.0 + COVERAGE_BOOST)).abs() < 1e-6);
        assert!((coverage_boost(0.0) - 1.0).abs() < 1e-6);
    }

    // Issue 28 (a typo or two): a misspelt word of five letters or more
    // finds its neighbour at edit distance 1; a short unknown word and a
    // word far from every indexed one do not.
    #[test]
    fn typos_find_their_neighbour() {
        let docs = [
            body("sending progress notifications while a tool runs"),
            body("the session identifier header on every response"),
            body("logging levels and their severity"),
        ];
        let ix = build(&docs);
        // Deleted, swapped, replaced and inserted letters.
        for typo in [
            "notifcations",
            "progerss",
            "sesion",
            "identifeir",
            "sevverity",
            "loggging",
        ] {
            let want: u32 = match typo {
                "notifcations" | "progerss" => 0,
                "sesion" | "identifeir" => 1,
                _ => 2,
            };
            assert_eq!(ranked(&ix, typo), [want], "{typo}");
        }
        // Too short, or two edits away: no match.
        assert!(ranked(&ix, "tol").is_empty());
        assert!(ranked(&ix, "notfcatons").is_empty());
        // A correction counts less than the word itself.
        let exact = ix.query("severity");
        let typo = ix.query("sevverity");
        let s = |q: &Query| ix.score(q, &mut Scratch::default())[0];
        assert!(s(&typo).score < s(&exact).score);
        assert!(s(&typo).coverage < s(&exact).coverage);
        assert!(ix.word_matches("severity", &typo));
        assert!(!ix.word_matches("sevverity", &typo));
        // At most TYPO_MAX_WORDS unknown words are looked up: the fifth
        // typo finds nothing.
        let ids = ranked(&ix, "notifcations progerss sesion identifeir loggging");
        assert!(ids.contains(&0) && ids.contains(&1) && !ids.contains(&2));
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn markup_ranges_find_code_and_links() {
        let b =
            "Text `inline` and [a](http://x.y/z).\n```sh\ncargo run\n```\n[ref]: https://r.s/t\n";
        let (code, links) = markup_ranges(b);
        let code: Vec<&str> = code.iter().map(|r| &b[r.clone()]).collect();
        let links: Vec<&str> = links.iter().map(|r| b[r.clone()].trim()).collect();
        assert_eq!(code, ["inline", "```sh\ncargo run\n```\n"]);
        assert_eq!(links, ["http://x.y/z", "https://r.s/t"]);
    }
}
