//! The BM25 section index.
//!
//! Term weights come from the `bm25` crate: its [`DefaultTokenizer`]
//! (Unicode word splitting, ASCII folding, English stop words, Snowball
//! stemming) and its [`Embedder`], which turns a section into hashed term
//! indices each carrying BM25's saturated, length-normalised term frequency
//! (`k1` = 1.2, `b` = 0.75, `avgdl` fitted to a sample of the corpus).
//! This module keeps the inverted index itself: per term a posting list of
//! `(section, weight)`, so a query costs the length of its terms' posting
//! lists, not a scan of every candidate section. A query term's IDF is the
//! library's formula, `ln(1 + (N - df + 0.5) / (df + 0.5))`.

use bm25::{DefaultTokenizer, Embedder, EmbedderBuilder, Tokenizer};
use std::collections::HashMap;

/// A section's id in the index.
pub type SectionId = u32;

/// How many sections the `avgdl` fit reads (evenly spread over the corpus).
pub const AVGDL_SAMPLE: usize = 2_000;

#[derive(Debug, Clone, Copy)]
struct Posting {
    section: SectionId,
    weight: f32,
}

/// The inverted index over section texts.
pub struct Index {
    embedder: Embedder<u64, DefaultTokenizer>,
    tokenizer: DefaultTokenizer,
    postings: HashMap<u64, Vec<Posting>>,
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

/// A section's terms: deduplicated hashed indices with their weights.
#[derive(Debug, Clone, Default)]
pub struct Terms(Vec<(u64, f32)>);

impl Index {
    /// An empty index whose `avgdl` is fitted to `sample` (section texts).
    pub fn new(sample: &[&str]) -> Self {
        let step = (sample.len() / AVGDL_SAMPLE).max(1);
        let picked: Vec<&str> = sample.iter().step_by(step).copied().collect();
        let embedder = if picked.is_empty() {
            EmbedderBuilder::<u64, DefaultTokenizer>::with_avgdl(256.0).build()
        } else {
            EmbedderBuilder::<u64, DefaultTokenizer>::with_tokenizer_and_fit_to_corpus(
                DefaultTokenizer::default(),
                &picked,
            )
            .build()
        };
        Self {
            embedder,
            tokenizer: DefaultTokenizer::default(),
            postings: HashMap::new(),
            live: 0,
        }
    }

    /// The terms of `text` (pure: may run on any thread).
    pub fn terms(&self, text: &str) -> Terms {
        let e = self.embedder.embed(&split_identifiers(text));
        let mut v: Vec<(u64, f32)> = e.0.into_iter().map(|t| (t.index, t.value)).collect();
        v.sort_unstable_by_key(|t| t.0);
        v.dedup_by_key(|t| t.0);
        Terms(v)
    }

    /// Adds a section with precomputed terms.
    pub fn insert(&mut self, id: SectionId, terms: &Terms) {
        for (t, w) in &terms.0 {
            self.postings.entry(*t).or_default().push(Posting {
                section: id,
                weight: *w,
            });
        }
        self.live += 1;
    }

    /// Removes a section (its text gives the terms it was indexed under).
    pub fn remove(&mut self, id: SectionId, text: &str) {
        let terms = self.terms(text);
        for (t, _) in &terms.0 {
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

    /// The query's stemmed tokens (for highlighting).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut t = self.tokenizer.tokenize(&split_identifiers(text));
        t.sort_unstable();
        t.dedup();
        t
    }

    /// Every section matching at least one query term, with its BM25
    /// score; `scores` is scratch space at least as long as the highest
    /// section id + 1.
    pub fn score(&self, query: &str, scores: &mut Vec<f32>) -> Vec<(SectionId, f32)> {
        let q = self.terms(query);
        let n = self.live as f32;
        let mut touched: Vec<SectionId> = Vec::new();
        for (t, _) in &q.0 {
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for p in list {
                let i = p.section as usize;
                if i >= scores.len() {
                    scores.resize(i + 1, 0.0);
                }
                if scores[i] == 0.0 {
                    touched.push(p.section);
                }
                scores[i] += idf * p.weight;
            }
        }
        let out = touched
            .iter()
            .map(|s| (*s, scores[*s as usize]))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        for s in touched {
            scores[s as usize] = 0.0;
        }
        out
    }

    /// Whether `word` (one word of a document) stems to one of `tokens`.
    pub fn word_matches(&self, word: &str, tokens: &[String]) -> bool {
        // Cheap pre-check: a stem shares its first letters with the word.
        let lower = word.to_lowercase();
        let plausible = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .any(|part| {
                tokens.iter().any(|t| {
                    let k = t.chars().take(3).count();
                    part.chars().take(k).eq(t.chars().take(k))
                })
            });
        if !plausible {
            return false;
        }
        self.tokenizer
            .tokenize(&split_identifiers(word))
            .iter()
            .any(|w| tokens.binary_search(w).is_ok())
    }
}

/// `text` with the punctuation inside words (`.`, `:`, `_`, `'`, …) made
/// spaces, so `quill.toml`, `Server::builder` and `max_file_size` index as
/// separate words (Unicode word segmentation keeps them whole).
fn split_identifiers(text: &str) -> std::borrow::Cow<'_, str> {
    let split = |c: char| !c.is_alphanumeric() && !c.is_whitespace();
    if !text.contains(split) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if split(c) { ' ' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_bm25() {
        let docs = [
            "installing the server with cargo install",
            "configuration options for logging and tracing",
            "the server installs quickly; installation notes",
        ];
        let mut ix = Index::new(&docs);
        for (i, d) in docs.iter().enumerate() {
            let t = ix.terms(d);
            ix.insert(u32::try_from(i).unwrap_or(0), &t);
        }
        let mut scratch = Vec::new();
        let mut hits = ix.score("install", &mut scratch);
        hits.sort_by(|a, b| b.1.total_cmp(&a.1));
        let ids: Vec<u32> = hits.iter().map(|h| h.0).collect();
        assert_eq!(ids.len(), 2);
        assert!(!ids.contains(&1));
        ix.remove(0, docs[0]);
        let hits = ix.score("install", &mut scratch);
        assert_eq!(hits.len(), 1);
        assert!(ix.word_matches("Installing", &ix.tokens("install")));
        assert!(!ix.word_matches("logging", &ix.tokens("install")));
        assert!(ix.word_matches("quill.toml", &ix.tokens("toml")));
        assert_eq!(
            ix.tokens("Server::builder max_file_size"),
            ["builder", "file", "max", "server", "size"]
        );
    }
}
