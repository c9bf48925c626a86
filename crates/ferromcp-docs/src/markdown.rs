//! Splitting a Markdown (or plain-text) document into sections.
//!
//! Only what the index needs: ATX headings (`#` … `######`) and setext
//! headings (`===` / `---` under a paragraph line), ignoring anything inside
//! fenced code blocks. Headings become GitHub-style slugs, made unique
//! within a file by a `-1`, `-2`, … suffix.

use std::collections::HashMap;
use std::ops::Range;

/// One section: a heading and the text up to the next heading (of any
/// level), or the preamble before the first heading (empty slug).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Heading slug, unique within the document; empty for the preamble.
    pub slug: String,
    /// Heading text (empty for the preamble).
    pub heading: String,
    /// Heading level, 1–6 (0 for the preamble).
    pub level: u8,
    /// Byte range in the document: the heading line to the next heading.
    pub range: Range<usize>,
    /// Byte range of the section and its subsections (up to the next
    /// heading of the same or a higher level): what `docs://file#slug`
    /// returns.
    pub full: Range<usize>,
}

/// A parsed document outline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outline {
    /// The first heading's text, if any.
    pub title: Option<String>,
    /// The first paragraph that is not a heading or code, on one line.
    pub description: Option<String>,
    /// Sections in document order; never empty for a non-empty document.
    pub sections: Vec<Section>,
}

/// GitHub-style heading slug: lowercase, letters/digits/`-`/`_` kept,
/// spaces to `-`, everything else dropped.
pub fn slugify(heading: &str) -> String {
    let mut s = String::with_capacity(heading.len());
    for c in heading.trim().chars() {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            s.extend(c.to_lowercase());
        } else if c == ' ' {
            s.push('-');
        }
    }
    s
}

/// The heading text of an ATX heading line, with its level.
fn atx_heading(line: &str) -> Option<(u8, &str)> {
    let t = line
        .strip_prefix("   ")
        .or_else(|| line.strip_prefix("  "))
        .or_else(|| line.strip_prefix(' '))
        .unwrap_or(line);
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &t[hashes..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let rest = rest.trim();
    // Optional closing sequence of `#`s.
    let rest = rest.trim_end_matches('#');
    let text = if rest.is_empty() || rest.ends_with(' ') || rest.ends_with('\t') {
        rest.trim_end()
    } else {
        t[hashes..].trim()
    };
    u8::try_from(hashes).ok().map(|l| (l, text))
}

fn fence_of(line: &str) -> Option<(u8, usize)> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let b = t.as_bytes().first().copied()?;
    if b != b'`' && b != b'~' {
        return None;
    }
    let n = t.bytes().take_while(|c| *c == b).count();
    (n >= 3).then_some((b, n))
}

/// Splits `text` into an outline. Plain text (`markdown == false`) is one
/// section whose title is the first non-blank line.
pub fn outline(text: &str, markdown: bool) -> Outline {
    if !markdown {
        let mut lines = text.lines().map(str::trim).skip_while(|l| l.is_empty());
        let title = lines.next().map(str::to_owned);
        let description = first_paragraph(lines);
        return Outline {
            title,
            description,
            sections: vec![Section {
                slug: String::new(),
                heading: String::new(),
                level: 0,
                range: 0..text.len(),
                full: 0..text.len(),
            }],
        };
    }
    // (level, heading, start of heading line)
    let mut heads: Vec<(u8, String, usize)> = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut pos;
    // Start offset and text of the previous line when it could be a setext
    // heading's content.
    let mut prev_para: Option<(usize, &str)> = None;
    let mut para_lines: Vec<&str> = Vec::new();
    let mut description: Option<String> = None;
    let (front_len, front_title) = front_matter(text);
    pos = front_len;
    for raw in text[front_len..].split_inclusive('\n') {
        let start = pos;
        pos += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some((ch, n)) = fence {
            if let Some((c2, n2)) = fence_of(line)
                && c2 == ch
                && n2 >= n
                && line.trim().bytes().all(|b| b == ch)
            {
                fence = None;
            }
            continue;
        }
        if let Some(f) = fence_of(line) {
            fence = Some(f);
            prev_para = None;
            flush_para(&mut para_lines, &mut description);
            continue;
        }
        if let Some((level, h)) = atx_heading(line) {
            heads.push((level, h.to_owned(), start));
            prev_para = None;
            flush_para(&mut para_lines, &mut description);
            continue;
        }
        let trimmed = line.trim();
        if let Some((pstart, ptext)) = prev_para {
            let level = if !trimmed.is_empty() && trimmed.bytes().all(|b| b == b'=') {
                Some(1)
            } else if trimmed.len() >= 2 && trimmed.bytes().all(|b| b == b'-') {
                Some(2)
            } else {
                None
            };
            if let Some(level) = level {
                heads.push((level, ptext.trim().to_owned(), pstart));
                prev_para = None;
                para_lines.pop();
                flush_para(&mut para_lines, &mut description);
                continue;
            }
        }
        if trimmed.is_empty() {
            prev_para = None;
            flush_para(&mut para_lines, &mut description);
        } else {
            prev_para = Some((start, line));
            let skip = trimmed.starts_with('<')
                || trimmed.starts_with('|')
                || trimmed.starts_with('>') && trimmed.len() == 1;
            if !skip {
                para_lines.push(trimmed);
            }
        }
    }
    flush_para(&mut para_lines, &mut description);
    // A title declared in front matter wins over the first heading.
    let title = front_title.or_else(|| heads.first().map(|h| h.1.clone()));
    let mut sections = Vec::with_capacity(heads.len() + 1);
    let first = heads.first().map_or(text.len(), |h| h.2);
    if heads.is_empty() || !text[..first].trim().is_empty() {
        sections.push(Section {
            slug: String::new(),
            heading: String::new(),
            level: 0,
            range: 0..first,
            full: 0..text.len(),
        });
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, (level, heading, start)) in heads.iter().enumerate() {
        let end = heads.get(i + 1).map_or(text.len(), |h| h.2);
        let full_end = heads[i + 1..]
            .iter()
            .find(|h| h.0 <= *level)
            .map_or(text.len(), |h| h.2);
        let base = slugify(heading);
        let n = seen.entry(base.clone()).or_insert(0);
        let slug = if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        *n += 1;
        sections.push(Section {
            slug,
            heading: heading.clone(),
            level: *level,
            range: *start..end,
            full: *start..full_end,
        });
    }
    Outline {
        title,
        description,
        sections,
    }
}

/// The length of a YAML front matter block (`---` … `---` or `...` at the
/// very start), and its `title:` value if any.
fn front_matter(text: &str) -> (usize, Option<String>) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (0, None);
    };
    let mut pos = text.len() - rest.len();
    let mut title = None;
    for line in rest.split_inclusive('\n') {
        pos += line.len();
        let l = line.trim_end();
        if l == "---" || l == "..." {
            return (pos, title);
        }
        if let Some(t) = l.strip_prefix("title:") {
            let t = t.trim().trim_matches(|c| c == '"' || c == '\'');
            if !t.is_empty() {
                title = Some(t.to_owned());
            }
        }
    }
    // No closing line: not front matter.
    (0, None)
}

/// The most characters of a description.
const MAX_DESCRIPTION_CHARS: usize = 300;

fn flush_para(lines: &mut Vec<&str>, out: &mut Option<String>) {
    if out.is_none() && !lines.is_empty() {
        let joined = lines.join(" ");
        *out = Some(truncate_chars(&joined, MAX_DESCRIPTION_CHARS));
    }
    lines.clear();
}

fn first_paragraph<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    let para: Vec<&str> = lines
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    (!para.is_empty()).then(|| truncate_chars(&para.join(" "), MAX_DESCRIPTION_CHARS))
}

/// `s` cut to at most `max` characters, with `…` when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", s[..i].trim_end()),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_sections_and_slugs() {
        let doc = "Intro line.\n\n# Guide\n\nFirst para\nstill first.\n\n## Install it!\n\n```sh\n# not a heading\n```\n\n## Install it!\n\nAgain\n\nSetext\n------\n\ntext\n# Next\n";
        let o = outline(doc, true);
        assert_eq!(o.title.as_deref(), Some("Guide"));
        assert_eq!(o.description.as_deref(), Some("Intro line."));
        let slugs: Vec<&str> = o.sections.iter().map(|s| s.slug.as_str()).collect();
        assert_eq!(
            slugs,
            ["", "guide", "install-it", "install-it-1", "setext", "next"]
        );
        let install = &o.sections[2];
        assert!(doc[install.range.clone()].contains("# not a heading"));
        let guide = &o.sections[1];
        assert_eq!(guide.full.end, o.sections[5].range.start);
    }

    #[test]
    fn description_skips_headings() {
        let o = outline("# T\n\nThe first paragraph.\n\nSecond.\n", true);
        assert_eq!(o.description.as_deref(), Some("The first paragraph."));
        assert_eq!(o.sections.len(), 1);
        let t = outline("\nTitle line\n\nBody here\nmore\n\nlater", false);
        assert_eq!(t.title.as_deref(), Some("Title line"));
        assert_eq!(t.description.as_deref(), Some("Body here more"));
    }

    #[test]
    fn front_matter_is_skipped() {
        let o = outline(
            "---\ntitle: \"Guide\"\ntags: [a]\n---\n\nIntro text.\n\n## Part\n",
            true,
        );
        assert_eq!(o.title.as_deref(), Some("Guide"));
        assert_eq!(o.description.as_deref(), Some("Intro text."));
        let slugs: Vec<&str> = o.sections.iter().map(|s| s.slug.as_str()).collect();
        assert_eq!(slugs, ["", "part"]);
        let unclosed = outline("---\nfoo\n", true);
        assert_eq!(unclosed.title, None);
    }

    #[test]
    fn slugs() {
        assert_eq!(slugify("Hello, World! (v2)"), "hello-world-v2");
        assert_eq!(slugify("`mcp serve` --docs"), "mcp-serve---docs");
    }
}
