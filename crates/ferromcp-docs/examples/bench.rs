//! Index and query benchmark on a synthetic corpus.
//!
//! `cargo run --release -p ferromcp-docs --example bench [FILES] [MB]`
//! (default 10,000 files, 50 MB). The corpus is generated into a temporary
//! folder, removed at the end. Prints the index time, the query latency
//! distribution and the resident memory.

use std::io::Write;
use std::time::{Duration, Instant};

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
    /// Roughly Zipf-distributed index below `n`.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

const SYLLABLES: &[&str] = &[
    "con", "fig", "ser", "ver", "in", "stall", "log", "ging", "cache", "time", "out", "re", "try",
    "head", "er", "net", "work", "sto", "rage", "au", "th", "to", "ken", "que", "ry", "in", "dex",
    "pro", "to", "col", "ses", "sion", "stream", "tran", "sport", "li", "mit", "de", "bug", "er",
    "ror", "han", "dle", "mod", "ule", "pack", "age", "build", "test", "run", "deploy", "scale",
];

const COMMON: &[&str] = &[
    "the", "a", "to", "of", "and", "in", "is", "for", "with", "on", "that", "this", "by", "it",
    "server", "client", "request", "response", "file", "option", "value", "default", "you", "can",
];

fn vocabulary(rng: &mut Rng, n: usize) -> Vec<String> {
    let mut v: Vec<String> = COMMON.iter().map(|s| (*s).to_owned()).collect();
    while v.len() < n {
        let k = 2 + rng.below(3);
        let w: String = (0..k)
            .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
            .collect();
        v.push(w);
    }
    v
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
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mb: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let per_file = mb * 1_000_000 / files.max(1);
    let dir = std::env::temp_dir().join(format!("mcp-docs-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let vocab = vocabulary(&mut rng, 30_000);
    let t = Instant::now();
    let mut total = 0usize;
    for i in 0..files {
        let sub = dir.join(format!("part{:02}", i % 50));
        std::fs::create_dir_all(&sub)?;
        let mut text = String::with_capacity(per_file + 256);
        text.push_str(&format!("# Topic {i} {}\n\n", vocab[rng.zipf(vocab.len())]));
        let mut section = 0;
        while text.len() < per_file {
            if text.len() > section * 800 {
                section += 1;
                text.push_str(&format!(
                    "\n## {} {} {section}\n\n",
                    vocab[rng.zipf(vocab.len())],
                    vocab[rng.zipf(vocab.len())]
                ));
            }
            let words = 20 + rng.below(60);
            for j in 0..words {
                if j > 0 {
                    text.push(' ');
                }
                text.push_str(&vocab[rng.zipf(vocab.len())]);
            }
            text.push_str(".\n\n");
        }
        total += text.len();
        std::fs::File::create(sub.join(format!("doc{i}.md")))?.write_all(text.as_bytes())?;
    }
    println!(
        "corpus: {files} files, {:.1} MB, generated in {:.1?} into {}",
        total as f64 / 1e6,
        t.elapsed(),
        dir.display()
    );
    let rss_before = rss_kb("VmRSS:");
    let t = Instant::now();
    let opened = ferromcp_docs::Library::open(&dir, ferromcp_docs::Options::default());
    let index_time = t.elapsed();
    let (lib, _) = match opened {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.into());
        }
    };
    let (nfiles, sections) = lib.counts();
    println!(
        "index: {nfiles} files, {sections} sections in {:.2} s ({:.1} MB/s)",
        index_time.as_secs_f64(),
        total as f64 / 1e6 / index_time.as_secs_f64()
    );
    let rss_after = rss_kb("VmRSS:");
    println!(
        "memory: RSS {:.0} MB after indexing ({:+.0} MB for the library), peak {:.0} MB",
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0,
        rss_kb("VmHWM:") as f64 / 1024.0
    );
    let queries: Vec<String> = (0..2_000)
        .map(|_| {
            let n = 1 + rng.below(3);
            (0..n)
                .map(|_| vocab[COMMON.len() + rng.zipf(vocab.len() - COMMON.len())].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // Warm up.
    for q in queries.iter().take(100) {
        let _ = lib.search(q, 0, 10);
    }
    let mut lat: Vec<Duration> = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    for q in &queries {
        let t = Instant::now();
        let page = lib.search(q, 0, 10);
        lat.push(t.elapsed());
        hits += page.total;
    }
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 - 1.0) * p) as usize];
    println!(
        "query (10 hits + snippets, {} queries of 1-3 words, {:.0} matching sections on average): p50 {:.2?}, p90 {:.2?}, p99 {:.2?}, max {:.2?}",
        lat.len(),
        hits as f64 / lat.len() as f64,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        lat[lat.len() - 1]
    );
    // The same queries asking for one hit: the difference is mostly the
    // snippets of the other nine.
    let t = Instant::now();
    for q in &queries {
        let _ = lib.search(q, 0, 1);
    }
    println!(
        "query with 1 hit: mean {:.2?} (10 hits: mean {:.2?})",
        t.elapsed() / queries.len() as u32,
        lat.iter().sum::<Duration>() / lat.len() as u32
    );
    // A live update: one file changed, the whole tree rescanned.
    let changed = dir.join("part00").join("doc0.md");
    std::fs::write(&changed, "# Changed\n\nA brand new zyzzyva paragraph.\n")?;
    let t = Instant::now();
    let changes = lib.refresh(std::slice::from_ref(&changed));
    println!(
        "refresh after one changed file (walk of {nfiles} files + reindex): {:.1?}, {} changed",
        t.elapsed(),
        changes.changed.len()
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
