//! The document library: the files under the root, their outlines and the
//! section index, kept consistent under one lock.

use crate::index::{Fields, Index, Query, Scratch, SectionId, Terms, relevance};
use crate::markdown::{self, Outline};
use crate::{DocsError, Options};
use ferromcp_server::protocol::percent;
use ferromcp_server::safe_fs::{Kind, OpenError, list_dir, open_regular, read_bounded};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The URI scheme of served documents.
pub const SCHEME: &str = "docs://";

/// Files tokenized together at start-up before their terms are inserted.
const INDEX_BATCH: usize = 512;

/// One served file.
#[derive(Debug, Clone)]
pub struct DocFile {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    /// `docs://<rel>` (percent-encoded).
    pub uri: String,
    /// The first heading (Markdown) or first line (text); else the file name.
    pub title: String,
    /// The first paragraph.
    pub description: Option<String>,
    /// `text/markdown` or `text/plain`.
    pub mime: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// Modification time when read.
    pub modified: Option<SystemTime>,
    /// The whole text.
    pub text: Arc<str>,
    /// The outline.
    pub outline: Outline,
    /// Index ids of the outline's sections, in the same order.
    pub(crate) ids: Vec<SectionId>,
}

impl DocFile {
    /// The URI of section `i` (`docs://file#slug`, or the file URI for the
    /// preamble).
    pub fn section_uri(&self, i: usize) -> String {
        match self.outline.sections.get(i) {
            Some(s) if !s.slug.is_empty() => format!("{}#{}", self.uri, uri_path(&s.slug)),
            _ => self.uri.clone(),
        }
    }

    /// Every section URI with a fragment.
    pub fn section_uris(&self) -> impl Iterator<Item = String> + '_ {
        self.outline
            .sections
            .iter()
            .filter(|s| !s.slug.is_empty())
            .map(|s| format!("{}#{}", self.uri, uri_path(&s.slug)))
    }

    /// The headings above section `i`, outermost first, joined by ` › `.
    fn heading_path(&self, i: usize) -> String {
        let secs = &self.outline.sections;
        let Some(me) = secs.get(i) else {
            return String::new();
        };
        let mut level = me.level;
        let mut path: Vec<&str> = Vec::new();
        for s in secs[..i].iter().rev() {
            if level <= 1 {
                break;
            }
            if s.level > 0 && s.level < level {
                path.push(&s.heading);
                level = s.level;
            }
        }
        path.reverse();
        path.join(" › ")
    }

    /// What the index sees of section `i`: the document title (when the
    /// section's heading is not the title itself), its heading, its heading
    /// path and its body without the heading line. `path` holds the path.
    fn fields<'a>(&'a self, i: usize, path: &'a mut String) -> Fields<'a> {
        let Some(s) = self.outline.sections.get(i) else {
            return Fields::default();
        };
        *path = self.heading_path(i);
        let text = self.text.get(s.range.clone()).unwrap_or("");
        let body = if s.level > 0 {
            text.split_once('\n').map_or("", |(_, rest)| rest)
        } else {
            text
        };
        Fields {
            title: if s.heading == self.title {
                ""
            } else {
                &self.title
            },
            heading: &s.heading,
            path,
            body,
        }
    }

    /// The index terms of every section.
    fn section_terms(&self, index: &Index) -> Vec<Terms> {
        let mut path = String::new();
        (0..self.outline.sections.len())
            .map(|i| index.terms(&self.fields(i, &mut path)))
            .collect()
    }
}

/// Where a section lives.
#[derive(Debug, Clone)]
struct Slot {
    rel: Arc<str>,
    index: usize,
}

/// What changed in a refresh.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files now served that were not.
    pub added: Vec<String>,
    /// Files served before and after whose content changed.
    pub changed: Vec<String>,
    /// Files no longer served.
    pub removed: Vec<String>,
    /// Resource URIs whose content changed or went away (files and their
    /// sections, before and after), for `notifications/resources/updated`.
    pub updated_uris: Vec<String>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// What a scan skipped and why.
#[derive(Debug, Clone, Default)]
pub struct Skipped {
    /// `(relative path, reason)`.
    pub files: Vec<(String, String)>,
    /// Files not looked at because `max_files` was reached.
    pub over_limit: usize,
}

/// One ranked section.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// `docs://file#slug`: read it for the whole section.
    pub uri: String,
    /// The file's URI.
    pub file_uri: String,
    /// The file's title.
    pub title: String,
    /// The section heading (empty for text before the first heading).
    pub section: String,
    /// The file's MIME type.
    pub mime_type: String,
    /// Ranking score (BM25F with the passage re-rank; higher is better,
    /// comparable only within one query).
    pub score: f32,
    /// How well the section answers the query, from 0 to 1: the share of
    /// the query's words (weighted by rarity) the section holds, the same
    /// share for its whole file, and its score relative to the best the
    /// query could reach.
    /// Comparable across queries; below the server's threshold
    /// (`minRelevance` of the page) the section is a weak match.
    pub relevance: f32,
    /// A passage of the section with matching words in `**bold**`.
    pub snippet: String,
}

/// One page of results.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    /// The query as given.
    pub query: String,
    /// How many sections matched in all.
    pub total: usize,
    /// The offset of the first hit.
    pub offset: usize,
    /// The hits, best first.
    pub results: Vec<Hit>,
    /// The relevance a hit needs to count as answering the query.
    pub min_relevance: f32,
    /// Whether the best hit reaches `minRelevance` (and, when it is near
    /// that threshold, stands out from the second hit): when false, the
    /// documentation most likely does not cover the query, and the hits
    /// are only the closest sections.
    pub covered: bool,
    /// The offset of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOut {
    /// The URI read.
    pub uri: String,
    /// MIME type.
    pub mime: &'static str,
    /// The file or section text.
    pub text: String,
}

struct State {
    files: BTreeMap<String, Arc<DocFile>>,
    slots: Vec<Option<Slot>>,
    free: Vec<SectionId>,
    index: Index,
}

/// The documents under a root, indexed by section. Cheap to share
/// (`Arc<Library>`); every method takes `&self`.
pub struct Library {
    root: PathBuf,
    opts: Options,
    state: RwLock<State>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// A file found by a scan, before reading.
struct Found {
    rel: String,
    size: u64,
    modified: Option<SystemTime>,
}

/// Percent-encodes what a URI path may not hold verbatim.
pub fn uri_path(rel: &str) -> String {
    let mut s = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Checks a requested relative path: no `..`, no absolute path, no empty or
/// `.` segment, no backslash or NUL.
pub fn check_rel(rel: &str) -> Result<(), DocsError> {
    if rel.is_empty() {
        return Err(DocsError::Refused("empty path".into()));
    }
    if rel.starts_with('/') || Path::new(rel).is_absolute() {
        return Err(DocsError::Refused(format!(
            "{rel:?} is an absolute path; paths are relative to the docs folder"
        )));
    }
    if rel.contains('\\') || rel.contains('\0') {
        return Err(DocsError::Refused(format!(
            "{rel:?} holds a backslash or NUL"
        )));
    }
    for seg in rel.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(DocsError::Refused(format!(
                "{rel:?} leaves the docs folder or has an empty, `.` or `..` segment"
            )));
        }
    }
    Ok(())
}

/// How far above the threshold a first hit's relevance must be to count
/// as answering even when the second hit scores as well as it does.
const CLEAR_MARGIN: f32 = 0.10;

/// The second hit's score, as a share of the first's, from which the two
/// count as tied.
const TIE_RATIO: f32 = 0.95;

/// Whether a first hit of relevance `rel` answers the query: it reaches
/// `min`, and either clearly (by [`CLEAR_MARGIN`]) or by standing out
/// from the second hit (which scores under [`TIE_RATIO`] of `first`). A
/// weak first hit tied with the next one is how a query the documents do
/// not answer looks: several sections sharing its common words, none
/// about it.
fn covers(rel: f32, min: f32, first: f32, second: Option<f32>) -> bool {
    rel >= min && (rel >= min + CLEAR_MARGIN || second.is_none_or(|s| s < TIE_RATIO * first))
}

/// Whether bytes look binary: a NUL in the first 8 KiB, or not UTF-8.
fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|b| *b == 0) || std::str::from_utf8(bytes).is_err()
}

impl Library {
    /// Scans and indexes `root`. Files over the limits, binary files and
    /// symlinks are skipped (reported in the returned [`Skipped`]).
    pub fn open(root: &Path, opts: Options) -> Result<(Self, Skipped), DocsError> {
        let root = root
            .canonicalize()
            .map_err(|e| DocsError::Io(format!("cannot open {}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(DocsError::Io(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        let lib = Self {
            state: RwLock::new(State {
                files: BTreeMap::new(),
                slots: Vec::new(),
                free: Vec::new(),
                index: Index::new(&[]),
            }),
            root,
            opts,
        };
        let mut skipped = Skipped::default();
        let found = lib.walk(&mut skipped);
        let docs = lib.read_all(found, &mut skipped);
        // Fit the field lengths to the corpus, then index on every core.
        let index = {
            let total: usize = docs.iter().map(|d| d.outline.sections.len()).sum();
            let step = (total / crate::index::AVGDL_SAMPLE).max(1);
            let picked: Vec<(&DocFile, usize)> = docs
                .iter()
                .flat_map(|d| (0..d.outline.sections.len()).map(move |i| (d, i)))
                .step_by(step)
                .collect();
            let mut paths = vec![String::new(); picked.len()];
            let sample: Vec<Fields<'_>> = picked
                .iter()
                .zip(paths.iter_mut())
                .map(|((d, i), p)| d.fields(*i, p))
                .collect();
            Index::new(&sample)
        };
        {
            let mut st = lib.write();
            st.index = index;
            // In batches, so the terms waiting for insertion stay small.
            let mut docs = docs;
            while !docs.is_empty() {
                let n = docs.len().min(INDEX_BATCH);
                let batch: Vec<DocFile> = docs.drain(..n).collect();
                let terms = terms_parallel(&st.index, &batch, lib.opts.index_threads);
                for (mut d, t) in batch.into_iter().zip(terms) {
                    let rel: Arc<str> = Arc::from(d.rel.as_str());
                    st.insert_sections(&mut d, &rel, &t);
                    st.files.insert(d.rel.clone(), Arc::new(d));
                }
            }
        }
        Ok((lib, skipped))
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `name` has a served extension, and whether it is Markdown.
    fn kind_of(&self, name: &str) -> Option<bool> {
        let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
        if self.opts.markdown_extensions.contains(&ext) {
            Some(true)
        } else if self.opts.text_extensions.contains(&ext) {
            Some(false)
        } else {
            None
        }
    }

    /// Every candidate file under the root: no hidden entries, no symlinks.
    fn walk(&self, skipped: &mut Skipped) -> Vec<Found> {
        let mut out = Vec::new();
        let mut stack = vec![String::new()];
        while let Some(prefix) = stack.pop() {
            // Reached without following a link: a folder swapped for one
            // while the scan runs is not entered.
            let Ok(mut entries) = list_dir(&self.root, &prefix) else {
                continue;
            };
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, kind) in entries {
                if name.starts_with('.') {
                    continue;
                }
                let rel = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                if kind == Kind::Link {
                    if self.kind_of(&name).is_some() {
                        skipped.files.push((rel, "symbolic link".into()));
                    }
                    continue;
                }
                if kind == Kind::Dir {
                    stack.push(rel);
                    continue;
                }
                if kind != Kind::File || self.kind_of(&name).is_none() {
                    continue;
                }
                if out.len() >= self.opts.max_files {
                    skipped.over_limit += 1;
                    continue;
                }
                // Size and time for change detection only: the content is
                // read through `load`, which re-checks everything.
                let Ok(meta) = std::fs::symlink_metadata(self.root.join(&rel)) else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                if meta.len() > self.opts.max_file_size {
                    skipped.files.push((
                        rel,
                        format!(
                            "{} bytes, over max_file_size {}",
                            meta.len(),
                            self.opts.max_file_size
                        ),
                    ));
                    continue;
                }
                out.push(Found {
                    rel,
                    size: meta.len(),
                    modified: meta.modified().ok(),
                });
            }
        }
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        out
    }

    /// Reads and parses `f`, opened without following a symbolic link at
    /// any component and only if it is a regular file (the walk's view of
    /// it may be stale: it can have been swapped for a link since).
    fn load(&self, f: Found) -> Result<DocFile, String> {
        let (file, meta) = open_regular(&self.root, &f.rel).map_err(|e| e.reason())?;
        let over = || format!("over max_file_size {}", self.opts.max_file_size);
        let bytes = read_bounded(file, self.opts.max_file_size)
            .map_err(|e| e.to_string())?
            .ok_or_else(over)?;
        if is_binary(&bytes) {
            return Err("binary (NUL bytes or not UTF-8)".into());
        }
        let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        let markdown = self.kind_of(&f.rel).unwrap_or(false);
        let outline = markdown::outline(&text, markdown);
        let name = f.rel.rsplit('/').next().unwrap_or(&f.rel).to_owned();
        Ok(DocFile {
            uri: format!("{SCHEME}{}", uri_path(&f.rel)),
            title: outline.title.clone().unwrap_or(name),
            description: outline.description.clone(),
            mime: if markdown {
                "text/markdown"
            } else {
                "text/plain"
            },
            size: text.len() as u64,
            modified: meta.modified().ok().or(f.modified),
            text: Arc::from(text),
            ids: Vec::new(),
            outline,
            rel: f.rel,
        })
    }

    fn read_all(&self, found: Vec<Found>, skipped: &mut Skipped) -> Vec<DocFile> {
        let mut docs = Vec::with_capacity(found.len());
        for f in found {
            let rel = f.rel.clone();
            match self.load(f) {
                Ok(d) => docs.push(d),
                Err(why) => skipped.files.push((rel, why)),
            }
        }
        docs
    }

    /// Every served file, in path order.
    pub fn files(&self) -> Vec<Arc<DocFile>> {
        self.read().files.values().cloned().collect()
    }

    /// The served file at `rel`.
    pub fn file(&self, rel: &str) -> Option<Arc<DocFile>> {
        self.read().files.get(rel).cloned()
    }

    /// How many files and sections are indexed.
    pub fn counts(&self) -> (usize, usize) {
        let st = self.read();
        (st.files.len(), st.index.len())
    }

    /// Relative paths starting with `prefix` (completion), at most `max`,
    /// with the total count.
    pub fn complete_paths(&self, prefix: &str, max: usize) -> (Vec<String>, usize) {
        let st = self.read();
        let all = st
            .files
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix));
        let mut total = 0;
        let mut out = Vec::new();
        for (k, _) in all {
            total += 1;
            if out.len() < max {
                out.push(k.clone());
            }
        }
        (out, total)
    }

    /// Reads `docs://path` or `docs://path#slug`. Paths outside the root,
    /// symlinks, binary and oversized files are refused with the reason.
    pub fn read_uri(&self, uri: &str) -> Result<ReadOut, DocsError> {
        let rest = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| DocsError::NotFound(format!("{uri} is not a {SCHEME} URI")))?;
        let (path, fragment) = match rest.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (rest, None),
        };
        let rel = percent::decode(path).ok_or_else(|| {
            DocsError::Refused(format!("{path:?} is not a valid percent-encoded path"))
        })?;
        check_rel(&rel)?;
        let Some(doc) = self.file(&rel) else {
            return Err(self.why_not_served(&rel));
        };
        let slug = match fragment {
            Some(f) => Some(percent::decode(f).ok_or_else(|| {
                DocsError::Refused(format!("#{f} is not a valid percent-encoded fragment"))
            })?),
            None => None,
        };
        let text = match slug {
            None => doc.text.to_string(),
            Some(slug) if slug.is_empty() => doc.text.to_string(),
            Some(slug) => {
                let s = doc
                    .outline
                    .sections
                    .iter()
                    .find(|s| s.slug == slug)
                    .ok_or_else(|| DocsError::NotFound(format!("{rel} has no section #{slug}")))?;
                doc.text.get(s.full.clone()).unwrap_or("").to_owned()
            }
        };
        Ok(ReadOut {
            uri: uri.to_owned(),
            mime: doc.mime,
            text,
        })
    }

    /// The error for a path that is not served: explains symbolic links,
    /// binary and oversized files. The file is opened as the scan opens
    /// it (no symbolic link followed, regular files only), so the answer
    /// never depends on anything outside the folder.
    fn why_not_served(&self, rel: &str) -> DocsError {
        let max = self.opts.max_file_size;
        let (file, meta) = match open_regular(&self.root, rel) {
            Ok(x) => x,
            // RES-03: gone, or vanished while we looked, is "not found".
            Err(OpenError::NotFound) => return DocsError::NotFound(format!("no document {rel:?}")),
            // One answer whether or not the link's target exists, inside
            // the folder or outside it: nothing is learnt about outside.
            Err(OpenError::Link) => {
                return DocsError::Refused(format!(
                    "{rel:?} is or goes through a symbolic link; links are not served"
                ));
            }
            Err(OpenError::Directory) => {
                return DocsError::NotFound(format!("{rel:?} is a directory"));
            }
            Err(OpenError::NotRegular) => {
                return DocsError::Refused(format!(
                    "{rel:?} is not a regular file (a FIFO, socket or device)"
                ));
            }
            Err(OpenError::Io(e)) => return DocsError::Io(format!("cannot read {rel:?}: {e}")),
        };
        let over = || DocsError::Refused(format!("{rel:?} is over the {max} byte limit"));
        if meta.len() > max {
            return DocsError::Refused(format!(
                "{rel:?} is {} bytes, over the {max} byte limit",
                meta.len()
            ));
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if self.kind_of(name).is_none() || name.starts_with('.') {
            let head = read_bounded(std::io::Read::take(file, 8192), 8192)
                .ok()
                .flatten()
                .unwrap_or_default();
            if head.contains(&0) {
                return DocsError::Refused(format!("{rel:?} is a binary file"));
            }
            return DocsError::Refused(format!(
                "{rel:?} is not a served document (Markdown or plain text)"
            ));
        }
        match read_bounded(file, max) {
            Ok(Some(b)) if is_binary(&b) => DocsError::Refused(format!("{rel:?} is a binary file")),
            Ok(Some(_)) => DocsError::NotFound(format!("{rel:?} is not indexed yet")),
            Ok(None) => over(),
            Err(e) => DocsError::Io(format!("cannot read {rel:?}: {e}")),
        }
    }

    /// Ranked sections for `query`: `limit` hits from `offset`.
    pub fn search(&self, query: &str, offset: usize, limit: usize) -> SearchPage {
        let limit = limit.clamp(1, self.opts.max_page_size);
        thread_local! {
            static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
        }
        let st = self.read();
        let q = st.index.query(query);
        let mut path = String::new();
        let (hits, total) = SCRATCH.with(|s| {
            st.index.rank(
                &q,
                &mut s.borrow_mut(),
                offset.saturating_add(limit),
                |id| {
                    let (doc, i) = st.section(id)?;
                    Some(st.index.passage_boost(&q, &doc.fields(i, &mut path)))
                },
            )
        });
        let min_relevance = self.opts.min_relevance;
        let covered = hits.first().is_some_and(|h| {
            covers(
                relevance(h, &q),
                min_relevance,
                h.score,
                hits.get(1).map(|s| s.score),
            )
        });
        // Snippets only for the hits returned.
        let results = hits
            .iter()
            .skip(offset)
            .take(limit)
            .filter_map(|h| {
                let (doc, i) = st.section(h.id)?;
                let sec = doc.outline.sections.get(i)?;
                Some(Hit {
                    uri: doc.section_uri(i),
                    file_uri: doc.uri.clone(),
                    title: doc.title.clone(),
                    section: sec.heading.clone(),
                    mime_type: doc.mime.to_owned(),
                    score: h.score,
                    relevance: relevance(h, &q),
                    snippet: snippet(
                        &st.index,
                        &doc.text,
                        sec.range.clone(),
                        &q,
                        self.opts.snippet_words,
                        self.opts.snippet_scan_bytes,
                    ),
                })
            })
            .collect();
        let next = offset.saturating_add(limit);
        SearchPage {
            query: query.to_owned(),
            total,
            offset,
            results,
            min_relevance,
            covered,
            next_offset: (next < total).then_some(next),
        }
    }

    /// The text of section `uri` (as in a hit), for embedding in a prompt.
    pub fn section_text(&self, uri: &str) -> Option<ReadOut> {
        let rest = uri.strip_prefix(SCHEME)?;
        let (path, slug) = rest.split_once('#').unwrap_or((rest, ""));
        let rel = percent::decode(path)?;
        let slug = percent::decode(slug)?;
        let doc = self.file(&rel)?;
        let sec = doc.outline.sections.iter().find(|s| s.slug == slug)?;
        Some(ReadOut {
            uri: uri.to_owned(),
            mime: doc.mime,
            text: doc.text.get(sec.range.clone())?.trim().to_owned(),
        })
    }

    /// Like [`Library::section_text`], but at most `max` bytes of the
    /// section (cut at a character boundary), with the section's whole
    /// length in bytes: the rest is never copied.
    pub fn section_excerpt(&self, uri: &str, max: usize) -> Option<(ReadOut, usize)> {
        let rest = uri.strip_prefix(SCHEME)?;
        let (path, slug) = rest.split_once('#').unwrap_or((rest, ""));
        let rel = percent::decode(path)?;
        let slug = percent::decode(slug)?;
        let doc = self.file(&rel)?;
        let sec = doc.outline.sections.iter().find(|s| s.slug == slug)?;
        let whole = doc.text.get(sec.range.clone())?.trim();
        Some((
            ReadOut {
                uri: uri.to_owned(),
                mime: doc.mime,
                text: prefix_at_char(whole, max).to_owned(),
            },
            whole.len(),
        ))
    }

    /// Rescans the root and applies what changed (new, modified, removed
    /// files; `touched` are reloaded even when size and mtime look equal).
    pub fn refresh(&self, touched: &[PathBuf]) -> Changes {
        let mut skipped = Skipped::default();
        let found = self.walk(&mut skipped);
        let touched: Vec<String> = touched
            .iter()
            .filter_map(|p| p.strip_prefix(&self.root).ok())
            .filter_map(|p| {
                let parts: Option<Vec<&str>> = p
                    .components()
                    .map(|c| match c {
                        Component::Normal(s) => s.to_str(),
                        _ => None,
                    })
                    .collect();
                parts.map(|v| v.join("/"))
            })
            .collect();
        let current: HashMap<String, (u64, Option<SystemTime>)> = {
            let st = self.read();
            st.files
                .iter()
                .map(|(k, d)| (k.clone(), (d.size, d.modified)))
                .collect()
        };
        let mut seen = std::collections::HashSet::new();
        let mut reload = Vec::new();
        for f in found {
            seen.insert(f.rel.clone());
            let same = current.get(&f.rel).is_some_and(|(size, m)| {
                *size == f.size && *m == f.modified && f.modified.is_some()
            });
            if !same || touched.contains(&f.rel) {
                reload.push(f);
            }
        }
        let mut loaded = Vec::new();
        let mut gone: Vec<String> = current
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for f in reload {
            let rel = f.rel.clone();
            match self.load(f) {
                Ok(d) => loaded.push(d),
                Err(_) => {
                    if current.contains_key(&rel) {
                        gone.push(rel);
                    }
                }
            }
        }
        let mut changes = Changes::default();
        let index_terms: Vec<Vec<Terms>> = {
            let st = self.read();
            loaded.iter().map(|d| d.section_terms(&st.index)).collect()
        };
        let mut st = self.write();
        for rel in gone {
            if let Some(old) = st.remove_file(&rel) {
                changes.updated_uris.push(old.uri.clone());
                changes.updated_uris.extend(old.section_uris());
                changes.removed.push(rel);
            }
        }
        for (mut d, terms) in loaded.into_iter().zip(index_terms) {
            let rel = d.rel.clone();
            let old = st.remove_file(&rel);
            if let Some(old) = &old {
                if old.text == d.text {
                    // Touched but unchanged: put it back as it was.
                    let mut same = d;
                    let rel_arc: Arc<str> = Arc::from(rel.as_str());
                    st.insert_sections(&mut same, &rel_arc, &terms);
                    st.files.insert(rel, Arc::new(same));
                    continue;
                }
                changes.updated_uris.push(old.uri.clone());
                changes.updated_uris.extend(old.section_uris());
            }
            changes.updated_uris.extend(d.section_uris());
            let rel_arc: Arc<str> = Arc::from(rel.as_str());
            st.insert_sections(&mut d, &rel_arc, &terms);
            st.files.insert(rel.clone(), Arc::new(d));
            if old.is_some() {
                changes.changed.push(rel);
            } else {
                changes.added.push(rel);
            }
        }
        changes.updated_uris.sort();
        changes.updated_uris.dedup();
        changes
    }
}

impl State {
    /// The document and outline index of section `id`.
    fn section(&self, id: SectionId) -> Option<(&DocFile, usize)> {
        let slot = self.slots.get(id as usize)?.as_ref()?;
        let doc = self.files.get(&*slot.rel)?;
        Some((doc, slot.index))
    }

    fn insert_sections(&mut self, d: &mut DocFile, rel: &Arc<str>, terms: &[Terms]) {
        d.ids.clear();
        for (i, t) in terms.iter().enumerate() {
            let slot = Slot {
                rel: rel.clone(),
                index: i,
            };
            let id = match self.free.pop() {
                Some(id) => {
                    if let Some(s) = self.slots.get_mut(id as usize) {
                        *s = Some(slot);
                    }
                    id
                }
                None => {
                    self.slots.push(Some(slot));
                    SectionId::try_from(self.slots.len() - 1).unwrap_or(SectionId::MAX)
                }
            };
            // The document's key in the index: its first section's id.
            let doc = d.ids.first().copied().unwrap_or(id);
            self.index.insert(id, doc, t);
            d.ids.push(id);
        }
    }

    fn remove_file(&mut self, rel: &str) -> Option<Arc<DocFile>> {
        let old = self.files.remove(rel)?;
        for id in &old.ids {
            self.index.remove(*id);
            if let Some(s) = self.slots.get_mut(*id as usize) {
                *s = None;
            }
            self.free.push(*id);
        }
        Some(old)
    }
}

/// Section terms for every document, computed on `threads` threads.
fn terms_parallel(index: &Index, docs: &[DocFile], threads: usize) -> Vec<Vec<Terms>> {
    let threads = threads.max(1);
    let chunk = docs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = docs
            .chunks(chunk)
            .map(|part| {
                let h = s.spawn(move || {
                    part.iter()
                        .map(|d| d.section_terms(index))
                        .collect::<Vec<Vec<Terms>>>()
                });
                (part.len(), h)
            })
            .collect();
        // A panicked chunk leaves its documents unindexed (still served),
        // never the terms of one document paired with another.
        handles
            .into_iter()
            .flat_map(|(n, h)| h.join().unwrap_or_else(|_| vec![Vec::new(); n]))
            .collect()
    })
}

/// `s` without the source's own `**` emphasis, so the only bold in a
/// snippet marks matches.
fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains("**") {
        std::borrow::Cow::Owned(s.replace("**", ""))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

pub(crate) use crate::index::prefix_at_char;

/// A passage of `range` of about `words` words around the densest run of
/// matching words, matches in `**bold**`. Only the first `scan` bytes of
/// the section are looked at, so the cost is bounded whatever its size.
fn snippet(
    index: &Index,
    text: &str,
    range: Range<usize>,
    q: &Query,
    words: usize,
    scan: usize,
) -> String {
    let Some(body) = text.get(range) else {
        return String::new();
    };
    // Skip the heading line: the hit already names the section.
    let body = match body.split_once('\n') {
        Some((first, rest)) if first.trim_start().starts_with('#') => rest,
        _ => body,
    };
    let whole = body.len();
    let body = prefix_at_char(body, scan);
    let cut = body.len() < whole;
    let spans: Vec<(usize, &str)> = crate::index::chunks(body);
    if spans.is_empty() {
        return String::new();
    }
    // One pass of the tokenizer over the passage: the byte spans of the
    // chunks holding a query term, in order.
    let mut toks = Vec::new();
    index
        .tokenizer()
        .tokenize_near(body, 0, Some(q.prefixes()), &mut toks);
    let hot: Vec<(usize, usize)> = toks
        .iter()
        .filter(|t| q.has(t.term))
        .map(|t| (t.span.0 as usize, t.span.1 as usize))
        .collect();
    let matched: Vec<bool> = spans
        .iter()
        .map(|(p, _)| {
            let k = hot.partition_point(|h| h.1 <= *p);
            hot.get(k).is_some_and(|h| h.0 <= *p)
        })
        .collect();
    let words = words.max(1);
    // Best window: most matches among `words` consecutive words.
    let mut best = (0usize, 0usize);
    let mut count = 0;
    for i in 0..spans.len() {
        if matched[i] {
            count += 1;
        }
        if i >= words && matched[i - words] {
            count -= 1;
        }
        if count > best.1 {
            best = (i.saturating_sub(words - 1), count);
        }
    }
    let start_word = best.0;
    let end_word = (start_word + words).min(spans.len());
    let from = if start_word == 0 {
        0
    } else {
        spans[start_word].0
    };
    let to = if end_word >= spans.len() {
        body.len()
    } else {
        spans[end_word].0
    };
    let mut out = String::new();
    if start_word > 0 {
        out.push('…');
    }
    let mut at = from;
    for (i, (pos, w)) in spans.iter().enumerate().take(end_word).skip(start_word) {
        if matched[i] {
            out.push_str(&plain(body.get(at..*pos).unwrap_or("")));
            out.push_str("**");
            out.push_str(w);
            out.push_str("**");
            at = pos + w.len();
        }
    }
    out.push_str(&plain(body.get(at..to).unwrap_or("")));
    let mut s: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if end_word < spans.len() || cut {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 28 (knowing when the docs do not answer): a first hit just
    // over the threshold and tied with the second is not an answer; the
    // same hit standing out, or a clearly relevant one, is.
    #[test]
    fn a_weak_first_hit_tied_with_the_second_does_not_cover() {
        let min = 0.63;
        assert!(!covers(0.66, min, 10.0, Some(9.9)));
        assert!(!covers(0.70, min, 10.0, Some(10.0)));
        assert!(covers(0.66, min, 10.0, Some(8.0)));
        assert!(covers(0.66, min, 10.0, None));
        assert!(covers(0.80, min, 10.0, Some(10.0)));
        assert!(!covers(0.60, min, 10.0, None));
    }

    // Issue 28 (the abstain decision, refitted with the file's share in
    // the relevance): at the default threshold, a first hit tied with the
    // second counts from CLEAR_MARGIN (0.10) above it, not below.
    #[test]
    fn a_tied_first_hit_clearly_over_the_threshold_covers() {
        let min = crate::Options::DEFAULT_MIN_RELEVANCE;
        assert!(covers(min + 0.11, min, 10.0, Some(10.0)));
        assert!(!covers(min + 0.09, min, 10.0, Some(10.0)));
        assert!(covers(min + 0.01, min, 10.0, Some(9.0)));
        assert!(!covers(min - 0.01, min, 10.0, None));
    }
}
