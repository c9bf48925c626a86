//! Ranking evaluation: does `search_docs` put the answering section first?
//!
//! `cargo run -p ferromcp-docs --release --example eval [-- --quick] [--split tune|held|fresh|fresh2|fresh3|all] [--verbose] [--show-fresh] [--show-fresh2] [--show-fresh3] [--sections]`
//!
//! The corpus, read at run time (nothing is kept in the repository): this
//! repository's own texts (`docs/*.md`, `README.md`, `CHANGELOG.md`,
//! `bench/RESULTS.md`, `deploy/README.md`, `crates/*/README.md`, as
//! `repo/<path>`), the project's shared specification texts kept beside
//! the checkout, never in it (as `shared/<file>`; when they are missing the run says so loudly and skips
//! the questions they answer, and with `CI=true` it fails) and, as
//! distractors, the `README.md` and `CHANGELOG.md` files of the crates in
//! this workspace's `Cargo.lock` found in the local cargo registry (sorted
//! by name and version; `--quick` takes the first 60 crates). The
//! questions are `eval/questions.tsv`: answerable ones name the section(s)
//! that answer them, unanswerable ones expect the search to abstain. The
//! `tune`, `held` and `fresh` splits are tuning data (`held` and `fresh`
//! were held out once and have been looked at since); the `fresh2` and
//! `fresh3` splits are held out: they are measured, and their per-question
//! results print only with `--show-fresh2` and `--show-fresh3` (`fresh`'s
//! only with `--show-fresh`).
//!
//! Prints, for this crate's ranking and for a plain Okapi BM25 over the
//! same sections (no stemming, no stop words, no fields): top-1 and top-3
//! section hits, the file of the first hit, and the abstain decisions;
//! then index build time, resident memory and `search` latency at limits 1
//! and 10. Exits with an error when the ranking does worse than the
//! baseline (top-1 or top-3) on a split, so CI catches a regression.

use ferromcp_docs::{Library, Options, markdown};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Question {
    split: String,
    expected: Vec<String>,
    text: String,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn questions() -> Result<Vec<Question>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(manifest_dir().join("eval/questions.tsv"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, '\t');
        let (Some(split), Some(exp), Some(q)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("malformed question line: {line:?}").into());
        };
        let expected = if exp == "-" {
            Vec::new()
        } else {
            exp.split('|').map(|e| format!("docs://{e}")).collect()
        };
        out.push(Question {
            split: split.to_owned(),
            expected,
            text: q.to_owned(),
        });
    }
    Ok(out)
}

/// `(name, version)` of every registry package in the workspace's lock file.
fn locked_packages() -> Vec<(String, String)> {
    let lock = manifest_dir().join("../../Cargo.lock");
    let Ok(text) = std::fs::read_to_string(lock) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for block in text.split("[[package]]") {
        let field = |k: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(k)
                    .and_then(|r| r.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_owned())
            })
        };
        if let (Some(n), Some(v), Some(s)) = (field("name "), field("version "), field("source "))
            && s.starts_with("registry+")
        {
            out.push((n, v));
        }
    }
    out.sort();
    out.dedup();
    out
}

fn registry_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry/src")) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(src)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

// Where the project's shared spec texts are: `../shared/spec` beside the
// checkout (CI always lays it there; it is never copied into the repo).
fn shared_spec_dir() -> PathBuf {
    repo_root().join("../shared/spec")
}

fn repo_root() -> PathBuf {
    manifest_dir().join("../..")
}

/// (path in the eval corpus, file to read).
type Documents = Vec<(String, PathBuf)>;

/// The answerable documents, as (path in the eval corpus, file to read):
/// this repository's own texts and, when present, the shared spec texts.
/// The second value says whether the shared spec texts were found.
fn own_documents() -> Result<(Documents, bool), Box<dyn std::error::Error>> {
    let root = repo_root();
    let mut out: Documents = Vec::new();
    let mut add = |rel: String| {
        let p = root.join(&rel);
        if p.is_file() {
            out.push((format!("repo/{rel}"), p));
        }
    };
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| n.ends_with(".md"))
                // Generated from the code (one line per source file, by
                // scripts/module-map.py): a file index, not prose the
                // questions are about; kept out so the corpus the held-out
                // splits were frozen against stays documentation.
                .filter(|n| n != "MODULES.md")
                .collect()
        })
        .unwrap_or_default();
    docs.sort();
    for d in docs {
        add(format!("docs/{d}"));
    }
    for f in [
        "README.md",
        "CHANGELOG.md",
        "bench/RESULTS.md",
        "deploy/README.md",
    ] {
        add(f.to_owned());
    }
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    crates.sort();
    for c in crates {
        add(format!("crates/{c}/README.md"));
    }
    let shared = shared_spec_dir();
    let mut found = true;
    for f in ["REQUIREMENTS.md", "CONFORMANCE.md"] {
        let p = shared.join(f);
        if p.is_file() {
            out.push((format!("shared/{f}"), p));
        } else {
            found = false;
        }
    }
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let msg = format!(
            "the shared spec texts ({}/REQUIREMENTS.md, CONFORMANCE.md) are missing",
            shared.display()
        );
        if ci {
            return Err(format!("{msg}; CI must have ../shared beside the checkout").into());
        }
        eprintln!("\n*** NOTICE: {msg}.");
        eprintln!("*** The evaluation runs on the repository's own documents only;");
        eprintln!("*** questions answered by shared/ are skipped. Figures are NOT comparable.\n");
    }
    Ok((out, found))
}

/// Lays the corpus out in the temporary folder `dir`, read from the
/// checkout and the shared texts beside it at run time; returns (own
/// files, distractor files).
fn build_corpus(
    dir: &Path,
    own: &[(String, PathBuf)],
    quick: bool,
) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    for (rel, from) in own {
        let to = dir.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, &to)?;
    }
    let regs = registry_dirs();
    let mut distractors = 0;
    let mut crates = 0;
    for (name, version) in locked_packages() {
        if quick && crates >= 60 {
            break;
        }
        let Some(src) = regs
            .iter()
            .map(|r| r.join(format!("{name}-{version}")))
            .find(|p| p.is_dir())
        else {
            continue;
        };
        let mut any = false;
        for f in ["README.md", "CHANGELOG.md"] {
            let from = src.join(f);
            if from.is_file() {
                let to = dir.join("crates").join(format!("{name}-{version}"));
                std::fs::create_dir_all(&to)?;
                std::fs::copy(&from, to.join(f))?;
                distractors += 1;
                any = true;
            }
        }
        crates += usize::from(any);
    }
    Ok((own.len(), distractors))
}

/// A plain Okapi BM25 over the same sections: lowercase alphanumeric runs,
/// no stemming, no stop words, heading and body as one field.
struct Baseline {
    uris: Vec<String>,
    postings: HashMap<String, Vec<(usize, u32)>>,
    lens: Vec<f32>,
    avgdl: f32,
}

fn plain_tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

impl Baseline {
    fn new(root: &Path) -> Self {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "md") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut b = Self {
            uris: Vec::new(),
            postings: HashMap::new(),
            lens: Vec::new(),
            avgdl: 1.0,
        };
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let rel = f
                .strip_prefix(root)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let file_uri = format!("docs://{}", ferromcp_docs::uri_path(&rel));
            for s in markdown::outline(&text, true).sections {
                let id = b.uris.len();
                b.uris.push(if s.slug.is_empty() {
                    file_uri.clone()
                } else {
                    format!("{file_uri}#{}", ferromcp_docs::uri_path(&s.slug))
                });
                let mut tf: HashMap<String, u32> = HashMap::new();
                let mut len = 0u32;
                for t in plain_tokens(text.get(s.range.clone()).unwrap_or("")) {
                    *tf.entry(t).or_default() += 1;
                    len += 1;
                }
                for (t, n) in tf {
                    b.postings.entry(t).or_default().push((id, n));
                }
                b.lens.push(len as f32);
            }
        }
        b.avgdl = (b.lens.iter().sum::<f32>() / b.lens.len().max(1) as f32).max(1.0);
        b
    }

    fn search(&self, q: &str, k: usize) -> Vec<String> {
        let n = self.lens.len() as f32;
        let mut scores: HashMap<usize, f32> = HashMap::new();
        let mut terms: Vec<String> = plain_tokens(q).collect();
        terms.sort();
        terms.dedup();
        for t in terms {
            let Some(list) = self.postings.get(&t) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (id, tf) in list {
                let tf = *tf as f32;
                let norm = 1.2 * (1.0 - 0.75 + 0.75 * self.lens[*id] / self.avgdl);
                *scores.entry(*id).or_default() += idf * tf * 2.2 / (tf + norm);
            }
        }
        let mut v: Vec<(usize, f32)> = scores.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter()
            .take(k)
            .map(|(id, _)| self.uris[id].clone())
            .collect()
    }
}

#[derive(Default)]
struct Tally {
    answerable: usize,
    top1: usize,
    top3: usize,
    file1: usize,
    unanswerable: usize,
    /// Unanswerable questions abstained on.
    abstained: usize,
    /// Answerable questions wrongly abstained on.
    false_abstain: usize,
    has_signal: bool,
}

impl Tally {
    fn add(&mut self, q: &Question, ranked: &[String], abstain: Option<bool>) {
        self.has_signal |= abstain.is_some();
        if q.expected.is_empty() {
            self.unanswerable += 1;
            self.abstained += usize::from(abstain == Some(true));
            return;
        }
        self.answerable += 1;
        self.false_abstain += usize::from(abstain == Some(true));
        let is = |u: &String| q.expected.contains(u);
        self.top1 += usize::from(ranked.first().is_some_and(is));
        self.top3 += usize::from(ranked.iter().take(3).any(is));
        let file = |u: &str| u.split('#').next().unwrap_or("").to_owned();
        self.file1 += usize::from(
            ranked
                .first()
                .is_some_and(|u| q.expected.iter().any(|e| file(e) == file(u))),
        );
    }

    fn line(&self, name: &str) -> String {
        let abstain = if self.has_signal {
            format!(
                "abstained {}/{} unanswerable, {} answerable wrongly",
                self.abstained, self.unanswerable, self.false_abstain
            )
        } else {
            format!("abstain n/a ({} unanswerable)", self.unanswerable)
        };
        format!(
            "{name:<10} top-1 {}/{}  top-3 {}/{}  file@1 {}/{}  {abstain}",
            self.top1, self.answerable, self.top3, self.answerable, self.file1, self.answerable
        )
    }
}

fn rss_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    // The held-out split's per-question results stay hidden unless asked
    // for: tuning on them would defeat the split.
    let show_fresh = args.iter().any(|a| a == "--show-fresh");
    let show_fresh2 = args.iter().any(|a| a == "--show-fresh2");
    let show_fresh3 = args.iter().any(|a| a == "--show-fresh3");
    let verbose = args.iter().any(|a| a == "--verbose");
    // `--sections`: list the answerable documents' section URIs (for
    // writing questions) and stop.
    if args.iter().any(|a| a == "--sections") {
        for (rel, path) in own_documents()?.0 {
            let text = std::fs::read_to_string(&path)?;
            for s in markdown::outline(&text, true).sections {
                println!(
                    "docs://{}#{}\t{}",
                    ferromcp_docs::uri_path(&rel),
                    ferromcp_docs::uri_path(&s.slug),
                    s.heading
                );
            }
        }
        return Ok(());
    }
    let split = args
        .iter()
        .position(|a| a == "--split")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "all".into());
    let (own, shared_found) = own_documents()?;
    let mut qs = questions()?;
    if !shared_found {
        qs.retain(|q| !q.expected.iter().any(|e| e.starts_with("docs://shared/")));
    }
    let dir = std::env::temp_dir().join(format!("ferromcp-docs-eval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (own_files, distractors) = build_corpus(&dir, &own, quick)?;
    let t = Instant::now();
    let opened = Library::open(&dir, Options::default());
    let build = t.elapsed();
    let (lib, _) = match opened {
        Ok(l) => l,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.to_string().into());
        }
    };
    // Memory of the library alone, before the baseline's index exists.
    let (rss, peak) = (rss_kb("VmRSS:") / 1024, rss_kb("VmHWM:") / 1024);
    let base = Baseline::new(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let (files, sections) = lib.counts();
    println!(
        "corpus: {own_files} project documents + {distractors} crate READMEs/CHANGELOGs = {files} files, {sections} sections{}",
        if quick { " (quick)" } else { "" }
    );
    println!(
        "index build {:.0} ms; RSS {rss} MB (peak {peak} MB)",
        build.as_secs_f64() * 1e3,
    );
    for q in &qs {
        for e in &q.expected {
            if lib.section_text(e).is_none() {
                return Err(
                    format!("question {:?} expects {e}, which does not exist", q.text).into(),
                );
            }
        }
    }
    let mut by_split: BTreeMap<String, (Tally, Tally)> = BTreeMap::new();
    // (unanswerable, relevance of the first hit), for the threshold.
    let mut rel_seen: Vec<(bool, f32)> = Vec::new();
    for q in qs.iter().filter(|q| split == "all" || q.split == split) {
        let page = lib.search(&q.text, 0, 10);
        let ranked: Vec<String> = page.results.iter().map(|h| h.uri.clone()).collect();
        let (ours, theirs) = by_split.entry(q.split.clone()).or_default();
        ours.add(q, &ranked, Some(!page.covered));
        let top_rel = page.results.first().map_or(0.0, |h| h.relevance);
        let visible = match q.split.as_str() {
            "fresh" => show_fresh,
            "fresh2" => show_fresh2,
            "fresh3" => show_fresh3,
            _ => true,
        };
        if visible {
            rel_seen.push((q.expected.is_empty(), top_rel));
        }
        let b = base.search(&q.text, 10);
        theirs.add(q, &b, None);
        let ok = q.expected.is_empty() || ranked.first().is_some_and(|u| q.expected.contains(u));
        if visible && (verbose || !ok) {
            let pos = q
                .expected
                .iter()
                .filter_map(|e| ranked.iter().position(|u| u == e))
                .min()
                .map_or("-".into(), |p| (p + 1).to_string());
            println!(
                "  [{}] {} rank {pos}: {:?}\n      got {} (relevance {top_rel:.2})",
                q.split,
                if ok { "ok  " } else { "MISS" },
                q.text,
                ranked.first().map_or("nothing", String::as_str),
            );
            if verbose && !ok {
                for (i, h) in page.results.iter().enumerate().take(5).skip(1) {
                    println!("      #{} {} (relevance {:.2})", i + 1, h.uri, h.relevance);
                }
            }
        }
    }
    if verbose || split == "tune" {
        let list = |u: bool| {
            let mut v: Vec<f32> = rel_seen.iter().filter(|r| r.0 == u).map(|r| r.1).collect();
            v.sort_by(f32::total_cmp);
            v.iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("first-hit relevance, answerable:   {}", list(false));
        println!("first-hit relevance, unanswerable: {}", list(true));
    }
    // The costliest query a client may send: max_query_bytes of distinct
    // words drawn from the questions.
    let mut words: Vec<&str> = qs.iter().flat_map(|q| q.text.split_whitespace()).collect();
    words.sort_unstable();
    words.dedup();
    let mut long = String::new();
    for w in words.iter().cycle() {
        if long.len() + w.len() + 1 > Options::DEFAULT_MAX_QUERY_BYTES {
            break;
        }
        long.push_str(w);
        long.push(' ');
    }
    let t = Instant::now();
    let page = lib.search(&long, 0, 10);
    println!(
        "longest allowed query ({} bytes, {} sections matched): {:.1} ms",
        long.len(),
        page.total,
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut worse = Vec::new();
    for (name, (ours, theirs)) in &by_split {
        println!("split {name}:");
        println!("  {}", ours.line("ranking"));
        println!("  {}", theirs.line("bm25-plain"));
        if ours.top1 < theirs.top1 || ours.top3 < theirs.top3 {
            worse.push(name.clone());
        }
    }
    // Latency of `search` at limits 1 and 10 (snippets included), every
    // question repeated.
    // (Quick: 3 rounds keep CI's run within its time as the question set
    // grows; the full run gives the latency figures.)
    let rounds = if quick { 3 } else { 50 };
    for limit in [1, 10] {
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..rounds {
            for q in &qs {
                let t = Instant::now();
                let page = lib.search(&q.text, 0, limit);
                times.push(t.elapsed());
                std::hint::black_box(page);
            }
        }
        times.sort();
        let at = |p: f64| {
            let i = ((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1));
            times.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
        };
        println!(
            "search at limit {limit} ({} queries): p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            times.len(),
            at(0.5),
            at(0.9),
            at(0.99),
            at(1.0)
        );
    }
    if !worse.is_empty() {
        return Err(format!("the ranking is below the plain BM25 baseline on {worse:?}").into());
    }
    Ok(())
}
