//! The YAML front matter of a `SKILL.md`: a small parser for the subset
//! skills use, and the Agent Skills field rules.
//!
//! Supported: `key: value` pairs whose value is a plain, single- or
//! double-quoted scalar, a JSON-compatible flow value (`{…}`, `[…]`) on
//! one line, a literal (`|`) or folded (`>`) block scalar (with `-`/`+`
//! chomping), or, one level down, a block mapping (`metadata:` then
//! indented `key: value` lines) or a block sequence (`- item` lines).
//! Plain scalars `true`/`false`, `null`/`~` and numbers are typed as YAML
//! does; everything else is a string. Anything else (anchors, tags,
//! multi-line flow values, deeper nesting, tabs in indentation, duplicate
//! keys) is refused with the line it is on, so a front matter is never
//! read differently from what its author meant.
// SEP-2640 "Frontmatter": the entry's frontmatter is the SKILL.md's,
// verbatim, rendered as JSON.

use ferromcp_protocol::types::{
    JsonObject, MAX_SKILL_COMPATIBILITY_CHARS, MAX_SKILL_DESCRIPTION_CHARS, skill_name_problem,
};
use serde_json::Value;

/// A `SKILL.md` split: the front matter as JSON and the body after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) frontmatter: JsonObject,
}

/// Parses the front matter at the start of `text` (at most `max_bytes`
/// bytes of it). Errors say what and on which line (1-based, counting
/// the opening `---` as line 1).
pub(crate) fn parse(text: &str, max_bytes: usize) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next() != Some("---") {
        return Err("does not begin with YAML front matter (a first line `---`)".into());
    }
    let mut body: Vec<&str> = Vec::new();
    let mut closed = false;
    let mut bytes = 0usize;
    for l in lines {
        if l == "---" || l == "..." {
            closed = true;
            break;
        }
        bytes = bytes.saturating_add(l.len() + 1);
        if bytes > max_bytes {
            return Err(format!(
                "front matter is longer than {max_bytes} bytes (max_frontmatter_bytes)"
            ));
        }
        body.push(l);
    }
    if !closed {
        return Err("front matter is not closed by a `---` line".into());
    }
    let frontmatter = parse_mapping(&body)?;
    Ok(Parsed { frontmatter })
}

fn at(line: usize, msg: impl std::fmt::Display) -> String {
    // +2: line 1 is the opening `---`, and `line` counts from 0.
    format!("front matter line {}: {msg}", line + 2)
}

fn indent_of(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

fn is_blank_or_comment(l: &str) -> bool {
    let t = l.trim();
    t.is_empty() || t.starts_with('#')
}

fn parse_mapping(lines: &[&str]) -> Result<JsonObject, String> {
    let mut out = JsonObject::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if is_blank_or_comment(l) {
            i += 1;
            continue;
        }
        if l.starts_with('\t') || l.starts_with(' ') {
            return Err(at(
                i,
                "unexpected indentation (top-level keys start in column 1)",
            ));
        }
        let (key, rest) = split_key(l).ok_or_else(|| at(i, "expected `key: value`"))?;
        if out.contains_key(key) {
            return Err(at(i, format_args!("duplicate key {key:?}")));
        }
        let rest = rest.trim();
        // The indented lines that belong to this key.
        let start = i + 1;
        let mut end = start;
        while end < lines.len()
            && (lines[end].trim().is_empty()
                || lines[end].starts_with(' ')
                || lines[end].starts_with('\t'))
        {
            if lines[end].starts_with('\t') {
                return Err(at(end, "tabs are not allowed in indentation"));
            }
            end += 1;
        }
        let block = &lines[start..end];
        let value = if let Some(header) = rest.strip_prefix('|').or_else(|| rest.strip_prefix('>'))
        {
            block_scalar(rest.starts_with('>'), header, block, start)?
        } else if rest.is_empty() || rest.starts_with('#') {
            nested(block, start)?
        } else {
            if block.iter().any(|l| !is_blank_or_comment(l)) {
                return Err(at(
                    start,
                    "multi-line values are supported only as `|` or `>` block scalars",
                ));
            }
            scalar(rest).map_err(|e| at(i, e))?
        };
        out.insert(key.to_owned(), value);
        i = end;
    }
    Ok(out)
}

/// `key: rest` (the key plain, without quotes); `None` when not of that form.
fn split_key(l: &str) -> Option<(&str, &str)> {
    let colon = l
        .find(": ")
        .or_else(|| l.strip_suffix(':').map(|k| k.len()))?;
    let key = l[..colon].trim_end();
    if key.is_empty()
        || key.starts_with(['"', '\'', '-', '?', '{', '[', '&', '*', '!', '|', '>', '#'])
    {
        return None;
    }
    Some((key, l.get(colon + 1..).unwrap_or("")))
}

/// A block mapping or sequence one level down (or null when empty).
fn nested(block: &[&str], first: usize) -> Result<Value, String> {
    let items: Vec<(usize, &str)> = block
        .iter()
        .enumerate()
        .filter(|(_, l)| !is_blank_or_comment(l))
        .map(|(n, l)| (first + n, *l))
        .collect();
    let Some((_, head)) = items.first() else {
        return Ok(Value::Null);
    };
    let indent = indent_of(head);
    if items.iter().any(|(_, l)| indent_of(l) != indent) {
        let (n, _) = items
            .iter()
            .find(|(_, l)| indent_of(l) != indent)
            .copied()
            .unwrap_or((first, ""));
        return Err(at(n, "only one level of nesting is supported"));
    }
    if head.trim_start().starts_with("- ") || head.trim() == "-" {
        let mut seq = Vec::new();
        for (n, l) in items {
            let t = l.trim_start();
            let v = t
                .strip_prefix("- ")
                .or_else(|| (t == "-").then_some(""))
                .ok_or_else(|| at(n, "expected `- item`"))?;
            seq.push(if v.trim().is_empty() {
                Value::Null
            } else {
                scalar(v.trim()).map_err(|e| at(n, e))?
            });
        }
        return Ok(Value::Array(seq));
    }
    let mut map = JsonObject::new();
    for (n, l) in items {
        let (k, v) = split_key(l.trim_start()).ok_or_else(|| at(n, "expected `key: value`"))?;
        if map.contains_key(k) {
            return Err(at(n, format_args!("duplicate key {k:?}")));
        }
        let v = v.trim();
        let value = if v.is_empty() || v.starts_with('#') {
            Value::Null
        } else if v.starts_with('|') || v.starts_with('>') {
            return Err(at(n, "block scalars are supported only at the top level"));
        } else {
            scalar(v).map_err(|e| at(n, e))?
        };
        map.insert(k.to_owned(), value);
    }
    Ok(Value::Object(map))
}

/// A `|` (literal) or `>` (folded) block scalar; `header` is what follows
/// the indicator (chomping `-`/`+`, an optional comment).
fn block_scalar(folded: bool, header: &str, block: &[&str], first: usize) -> Result<Value, String> {
    let header = header.split('#').next().unwrap_or("").trim();
    let chomp = match header {
        "" => Chomp::Clip,
        "-" => Chomp::Strip,
        "+" => Chomp::Keep,
        _ => return Err(at(first - 1, "unsupported block scalar header")),
    };
    let indent = block
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
        .unwrap_or(0);
    let mut lines: Vec<&str> = Vec::new();
    for (n, l) in block.iter().enumerate() {
        if l.trim().is_empty() {
            lines.push("");
        } else if indent_of(l) < indent {
            return Err(at(first + n, "less indented than the block's first line"));
        } else {
            lines.push(&l[indent..]);
        }
    }
    let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
    let content = &lines[..lines.len() - trailing];
    let mut s = String::new();
    if folded {
        let mut prev_blank = true;
        for l in content {
            if l.is_empty() {
                s.push('\n');
                prev_blank = true;
            } else {
                // More-indented lines keep their line breaks.
                if !prev_blank && !l.starts_with(' ') && !s.ends_with('\n') {
                    s.push(' ');
                } else if !prev_blank && l.starts_with(' ') {
                    s.push('\n');
                }
                s.push_str(l);
                prev_blank = false;
            }
        }
    } else {
        s = content.join("\n");
    }
    if !content.is_empty() {
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => s.push('\n'),
            Chomp::Keep => {
                s.push('\n');
                for _ in 0..trailing {
                    s.push('\n');
                }
            }
        }
    }
    Ok(Value::String(s))
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// One scalar on one line.
fn scalar(v: &str) -> Result<Value, String> {
    match v.as_bytes().first() {
        Some(b'"' | b'{' | b'[') => serde_json::from_str::<Value>(v).map_err(|_| {
            "unsupported value: quoted strings and flow values must be JSON-compatible and on one line"
                .to_owned()
        }),
        Some(b'\'') => {
            let inner = v
                .strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .filter(|_| v.len() >= 2)
                .ok_or("unterminated single-quoted string")?;
            if inner.replace("''", "").contains('\'') {
                return Err("a single quote inside a single-quoted string must be doubled".into());
            }
            Ok(Value::String(inner.replace("''", "'")))
        }
        Some(b'&' | b'*' | b'!' | b'%' | b'@' | b'`') => {
            Err("anchors, aliases, tags and reserved indicators are not supported".into())
        }
        _ => {
            // A comment starts at ` #`.
            let v = v.split(" #").next().unwrap_or(v).trim_end();
            Ok(plain(v))
        }
    }
}

/// A plain scalar typed as YAML's core schema types it.
fn plain(v: &str) -> Value {
    match v {
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        "null" | "Null" | "NULL" | "~" => return Value::Null,
        _ => {}
    }
    let numeric = v
        .trim_start_matches(['-', '+'])
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.');
    if numeric {
        if let Ok(i) = v.parse::<i64>() {
            return Value::from(i);
        }
        if v.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        {
            if let Some(n) = v.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                return Value::Number(n);
            }
        }
    }
    Value::String(v.to_owned())
}

// SEP-2640 "Skill Format" (delegated to the Agent Skills specification):
// name and description required, their rules, and the name equal to the
// last segment of the skill path.
/// Checks the fields the Agent Skills specification constrains; `dir` is
/// the skill path's last segment (the name must equal it).
pub(crate) fn validate(fm: &JsonObject, dir: &str) -> Result<(), String> {
    let name = match fm.get("name") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("`name` must be a string".into()),
        None => return Err("`name` is missing from the front matter".into()),
    };
    if let Some(p) = skill_name_problem(name) {
        return Err(format!("`name` {name:?} {p}"));
    }
    if name != dir {
        return Err(format!(
            "`name` {name:?} differs from its directory {dir:?} (they must be equal)"
        ));
    }
    match fm.get("description") {
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err("`description` is empty".into());
        }
        Some(Value::String(s)) if s.chars().count() > MAX_SKILL_DESCRIPTION_CHARS => {
            return Err(format!(
                "`description` is longer than {MAX_SKILL_DESCRIPTION_CHARS} characters"
            ));
        }
        Some(Value::String(_)) => {}
        Some(_) => return Err("`description` must be a string".into()),
        None => return Err("`description` is missing from the front matter".into()),
    }
    match fm.get("compatibility") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.chars().count() <= MAX_SKILL_COMPATIBILITY_CHARS => {}
        Some(Value::String(_)) => {
            return Err(format!(
                "`compatibility` is longer than {MAX_SKILL_COMPATIBILITY_CHARS} characters"
            ));
        }
        Some(_) => return Err("`compatibility` must be a string".into()),
    }
    if let Some(m) = fm.get("metadata") {
        if !matches!(m, Value::Object(_) | Value::Null) {
            return Err("`metadata` must be a mapping".into());
        }
    }
    for key in ["license", "allowed-tools"] {
        if let Some(v) = fm.get(key) {
            if !matches!(v, Value::String(_) | Value::Null) {
                return Err(format!("`{key}` must be a string"));
            }
        }
    }
    Ok(())
}

/// Front matter text whose [`parse`] gives back exactly `fm`: every value
/// written as JSON (a JSON value on one line is valid YAML).
pub(crate) fn render(fm: &JsonObject) -> String {
    let mut s = String::from("---\n");
    for (k, v) in fm {
        s.push_str(k);
        s.push_str(": ");
        s.push_str(&v.to_string());
        s.push('\n');
    }
    s.push_str("---\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(text: &str) -> Result<Value, String> {
        parse(text, 64 * 1024).map(|p| Value::Object(p.frontmatter))
    }

    #[test]
    fn the_fields_skills_use_parse_as_yaml_reads_them() {
        let text = "---\nname: pdf-processing\ndescription: >\n  Extract text and tables\n  from PDFs.\nlicense: 'Apache-2.0'\ncompatibility: \"Requires Python 3.11+\"\nmetadata:\n  author: example-org\n  version: \"1.0\"\n  beta: true\nallowed-tools: Bash(python3:*) Read  # a comment\ncount: 3\nratio: 1.5\nnothing: ~\ntags: [a, \"b\"]\n---\n# Body\n";
        // `[a, "b"]` is not JSON: refused rather than guessed.
        assert!(fm(text).is_err());
        let text = text.replace("[a, \"b\"]", "[\"a\", \"b\"]");
        assert_eq!(
            fm(&text).expect("parses"),
            json!({
                "name": "pdf-processing",
                "description": "Extract text and tables from PDFs.\n",
                "license": "Apache-2.0",
                "compatibility": "Requires Python 3.11+",
                "metadata": {"author": "example-org", "version": "1.0", "beta": true},
                "allowed-tools": "Bash(python3:*) Read",
                "count": 3,
                "ratio": 1.5,
                "nothing": null,
                "tags": ["a", "b"]
            })
        );
    }

    #[test]
    fn block_scalars_and_sequences() {
        let text = "---\na: |\n  one\n  two\n\nb: >-\n  x\n  y\n\n  z\nc:\n  - p\n  - 'q'\n---\n";
        assert_eq!(
            fm(text).expect("parses"),
            json!({"a": "one\ntwo\n", "b": "x y\nz", "c": ["p", "q"]})
        );
    }

    #[test]
    fn what_is_not_supported_is_refused_with_its_line() {
        for (text, line) in [
            ("---\nname: a\nname: b\n---\n", 3),
            ("---\nname: a\n  stray: x\n---\n", 3),
            ("---\nmeta:\n  a:\n    b: c\n---\n", 4),
            ("---\nname: &x a\n---\n", 2),
            ("---\nname: 'it's'\n---\n", 2),
        ] {
            let e = fm(text).expect_err(text);
            assert!(e.contains(&format!("line {line}")), "{text:?}: {e}");
        }
        assert!(fm("# no front matter\n").is_err());
        assert!(fm("---\nname: a\n").is_err());
        // Bounded.
        let long = format!("---\ndescription: {}\n---\n", "x".repeat(100));
        assert!(parse(&long, 50).is_err());
    }

    #[test]
    fn rendering_parses_back_to_the_same_object() {
        let obj = json!({"name": "a", "description": "Quotes \" and: colons # not comments\nnewline",
                         "metadata": {"k": "v"}, "n": 1});
        let Value::Object(o) = obj else { return };
        let text = render(&o) + "body";
        assert_eq!(parse(&text, 1 << 16).map(|p| p.frontmatter), Ok(o));
    }

    #[test]
    fn validation_names_the_rule() {
        let ok = json!({"name": "git-flow", "description": "d"});
        let Value::Object(ok) = ok else { return };
        assert_eq!(validate(&ok, "git-flow"), Ok(()));
        assert!(validate(&ok, "other").is_err_and(|e| e.contains("differs")));
        for (bad, word) in [
            (json!({"description": "d"}), "missing"),
            (json!({"name": "Git", "description": "d"}), "lowercase"),
            (json!({"name": "git-flow"}), "description"),
            (json!({"name": "git-flow", "description": " "}), "empty"),
            (
                json!({"name": "git-flow", "description": "x".repeat(1025)}),
                "1024",
            ),
            (
                json!({"name": "git-flow", "description": "d", "compatibility": "x".repeat(501)}),
                "500",
            ),
            (
                json!({"name": "git-flow", "description": "d", "metadata": "x"}),
                "mapping",
            ),
        ] {
            let Value::Object(o) = bad else { return };
            let e = validate(&o, "git-flow").expect_err(word);
            assert!(e.contains(word), "{e}");
        }
    }
}
