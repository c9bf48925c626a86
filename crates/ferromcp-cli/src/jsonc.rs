//! JSON with comments (JSONC), read tolerantly and edited in place.
//!
//! Host configuration files are edited by splicing their text: only the
//! bytes of the entry that changes are rewritten, so key order, formatting
//! and comments elsewhere in the file survive. Reading blanks comments and
//! trailing commas out with spaces (byte offsets and line numbers are kept),
//! then parses the result as JSON.

use serde::Serialize as _;
use serde_json::Value;

/// The text with comments and trailing commas replaced by spaces (newlines
/// kept), so that it is plain JSON at the same byte offsets.
pub fn blank(text: &str) -> String {
    let mut out = blank_comments(text);
    // Trailing commas: a comma whose next non-space byte closes a container.
    let mut in_string = false;
    let mut last_comma: Option<usize> = None;
    let mut i = 0;
    while i < out.len() {
        let c = out[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                last_comma = None;
            }
            b',' => last_comma = Some(i),
            b'}' | b']' => {
                if let Some(p) = last_comma.take() {
                    out[p] = b' ';
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => last_comma = None,
        }
        i += 1;
    }
    // Only ASCII bytes outside strings were replaced by ASCII spaces, so the
    // result is still UTF-8; fall back to the original text otherwise.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The text's bytes with comments replaced by spaces (newlines kept).
fn blank_comments(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, b.get(i + 1)) {
            (b'"', _) => in_string = true,
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let start = i;
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                let end = (i + 2).min(b.len());
                for o in &mut out[start..end] {
                    if *o != b'\n' {
                        *o = b' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses JSONC text; an error says where (line and column).
pub fn parse(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(&blank(text))
        .map_err(|e| format!("line {} column {}: {e}", e.line(), e.column()))
}

/// One member of an object: byte offsets into the text.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

/// An object's span and members.
#[derive(Debug)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string starting at `i` (a `"`).
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end (exclusive) of the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// The object starting at `open` (a `{`) in blanked, valid JSON text.
fn object_at(text: &str, open: usize) -> Option<Object> {
    let b = text.as_bytes();
    if b.get(open) != Some(&b'{') {
        return None;
    }
    let mut members = Vec::new();
    let mut i = skip_ws(b, open + 1);
    loop {
        match b.get(i)? {
            b'}' => {
                return Some(Object {
                    open,
                    close: i,
                    members,
                });
            }
            b',' => i = skip_ws(b, i + 1),
            b'"' => {
                let key_end = string_end(b, i);
                let key: String = serde_json::from_str(text.get(i..key_end)?).ok()?;
                let colon = skip_ws(b, key_end);
                if b.get(colon) != Some(&b':') {
                    return None;
                }
                let value_start = skip_ws(b, colon + 1);
                let value_end = value_end(b, value_start);
                members.push(Member {
                    key,
                    key_start: i,
                    value_start,
                    value_end,
                });
                i = skip_ws(b, value_end);
            }
            _ => return None,
        }
    }
}

/// The byte offset where the value at `path` (object keys from the root)
/// starts, or where the deepest existing ancestor starts.
pub fn locate(text: &str, path: &[String]) -> usize {
    let blanked = blank(text);
    let b = blanked.as_bytes();
    let mut at = skip_ws(b, 0);
    for seg in path {
        match b.get(at) {
            Some(b'{') => {
                let Some(obj) = object_at(&blanked, at) else {
                    return at;
                };
                match obj.members.iter().find(|m| &m.key == seg) {
                    Some(m) => at = m.value_start,
                    None => return at,
                }
            }
            Some(b'[') => {
                let Ok(n) = seg.parse::<usize>() else {
                    return at;
                };
                let mut j = skip_ws(b, at + 1);
                let mut k = 0;
                while k < n {
                    j = skip_ws(b, value_end(b, j));
                    if b.get(j) != Some(&b',') {
                        return at;
                    }
                    j = skip_ws(b, j + 1);
                    k += 1;
                }
                at = j;
            }
            _ => return at,
        }
    }
    at
}

/// 1-based line and column of byte offset `at`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The whitespace at the start of the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = text
        .get(..at)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |p| p + 1);
    let line = text.get(start..).unwrap_or_default();
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// The file's indentation unit: that of its first indented line, else two
/// spaces.
fn indent_unit(text: &str) -> String {
    text.lines()
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|w| !w.is_empty())
        .unwrap_or("  ")
        .to_owned()
}

/// `value` pretty-printed with `unit` per level, every line after the first
/// indented by `base`.
fn render(value: &Value, unit: &str, base: &str) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if value.serialize(&mut ser).is_err() {
        return "null".to_owned();
    }
    let s = String::from_utf8(buf).unwrap_or_default();
    s.replace('\n', &format!("\n{base}"))
}

/// An object value whose members keep the given order.
fn render_entry(entry: &[(String, Value)], unit: &str, base: &str) -> String {
    if entry.is_empty() {
        return "{}".to_owned();
    }
    let inner = format!("{base}{unit}");
    let mut s = String::from("{");
    for (i, (k, v)) in entry.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push('\n');
        s.push_str(&inner);
        s.push_str(&Value::String(k.clone()).to_string());
        s.push_str(": ");
        s.push_str(&render(v, unit, &inner));
    }
    s.push('\n');
    s.push_str(base);
    s.push('}');
    s
}

/// `{"names[0]": {"names[1]": … entry}}` at indentation `base`.
fn nest(names: &[&str], entry: &[(String, Value)], unit: &str, base: &str) -> String {
    match names.split_first() {
        None => render_entry(entry, unit, base),
        Some((first, rest)) => {
            let inner = format!("{base}{unit}");
            format!(
                "{{\n{inner}{}: {}\n{base}}}",
                Value::String((*first).to_owned()),
                nest(rest, entry, unit, &inner)
            )
        }
    }
}

/// `value` pretty-printed (two spaces) with object keys in `order` first,
/// the others after them in their own order.
pub fn pretty_ordered(value: &Value, order: &[&str]) -> String {
    fn go(v: &Value, order: &[&str], base: &str, out: &mut String) {
        let inner = format!("{base}  ");
        match v {
            Value::Object(m) if !m.is_empty() => {
                let rank = |k: &str| order.iter().position(|o| *o == k).unwrap_or(order.len());
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by_key(|k| rank(k));
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&inner);
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push_str(": ");
                    go(&m[k.as_str()], order, &inner, out);
                }
                out.push('\n');
                out.push_str(base);
                out.push('}');
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&inner);
                    go(x, order, &inner, out);
                }
                out.push('\n');
                out.push_str(base);
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    go(value, order, "", &mut out);
    out.push('\n');
    out
}

/// A text edit: replace `start..end` with `with`.
struct Splice {
    start: usize,
    end: usize,
    with: String,
}

fn apply(text: &str, s: Splice) -> String {
    let mut out = String::with_capacity(text.len() + s.with.len());
    out.push_str(text.get(..s.start).unwrap_or(text));
    out.push_str(&s.with);
    out.push_str(text.get(s.end..).unwrap_or_default());
    out
}

/// The object at `path` from the root, in blanked text.
fn object_path(blanked: &str, path: &[&str]) -> Result<Option<Object>, String> {
    let b = blanked.as_bytes();
    let root = skip_ws(b, 0);
    let mut obj = object_at(blanked, root).ok_or("the file's top level is not a JSON object")?;
    for seg in path {
        let Some(m) = obj.members.iter().find(|m| m.key == *seg) else {
            return Ok(None);
        };
        obj = object_at(blanked, m.value_start)
            .ok_or_else(|| format!("\"{seg}\" is not a JSON object"))?;
    }
    Ok(Some(obj))
}

/// Whether member `name` exists in the object at `path`.
pub fn has_member(text: &str, path: &[&str], name: &str) -> Result<bool, String> {
    parse(text)?;
    if text.trim().is_empty() {
        return Ok(false);
    }
    let blanked = blank(text);
    Ok(object_path(&blanked, path)?.is_some_and(|o| o.members.iter().any(|m| m.key == name)))
}

/// Inserts or replaces member `name` (an object with ordered keys) in the
/// object at `path`, creating the missing objects on the way.
pub fn set_member(
    text: &str,
    path: &[&str],
    name: &str,
    entry: &[(String, Value)],
) -> Result<String, String> {
    parse(text)?;
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let blanked = blank(text);
    let unit = indent_unit(text);
    // The deepest existing object on the path, and what is missing below it.
    let mut depth = path.len();
    let obj = loop {
        if let Some(o) = object_path(&blanked, &path[..depth])? {
            break o;
        }
        depth -= 1;
    };
    let missing = &path[depth..];
    // The member to insert or replace: the first missing object, or the
    // entry itself.
    let (key, below): (&str, Vec<&str>) = match missing.split_first() {
        None => (name, Vec::new()),
        Some((first, rest)) => (*first, rest.iter().copied().chain([name]).collect()),
    };
    let member_indent = match obj.members.first() {
        Some(m) => line_indent(text, m.key_start).to_owned(),
        None => format!("{}{unit}", line_indent(text, obj.open)),
    };
    let value = nest(&below, entry, &unit, &member_indent);
    if let Some(m) = obj.members.iter().find(|m| m.key == key) {
        return Ok(apply(
            text,
            Splice {
                start: m.value_start,
                end: m.value_end,
                with: value,
            },
        ));
    }
    let member = format!("{}: {value}", Value::String(key.to_owned()));
    let close_indent = line_indent(text, obj.open).to_owned();
    let b = blanked.as_bytes();
    let line_start = text
        .get(..obj.close)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |p| p + 1);
    let brace_alone = b[line_start..obj.close].iter().all(u8::is_ascii_whitespace);
    let mut edits = Vec::new();
    if let Some(last) = obj.members.last() {
        // A comma after the last member unless it has one (JSONC).
        let with_commas = blank_comments(text);
        let after = skip_ws(&with_commas, last.value_end);
        if with_commas.get(after) != Some(&b',') {
            edits.push(Splice {
                start: last.value_end,
                end: last.value_end,
                with: ",".to_owned(),
            });
        }
    }
    if brace_alone && line_start > obj.open {
        edits.push(Splice {
            start: line_start,
            end: line_start,
            with: format!("{member_indent}{member}\n"),
        });
    } else if obj.members.is_empty() {
        edits.push(Splice {
            start: obj.open + 1,
            end: obj.close,
            with: format!("\n{member_indent}{member}\n{close_indent}"),
        });
    } else {
        edits.push(Splice {
            start: obj.close,
            end: obj.close,
            with: format!("\n{member_indent}{member}\n{close_indent}"),
        });
    }
    // Later offsets first, so earlier ones stay valid.
    edits.sort_by_key(|s| std::cmp::Reverse(s.start));
    let mut out = text.to_owned();
    for e in edits {
        out = apply(&out, e);
    }
    Ok(out)
}

/// Removes member `name` from the object at `path`; `None` when absent.
pub fn remove_member(text: &str, path: &[&str], name: &str) -> Result<Option<String>, String> {
    parse(text)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let blanked = blank(text);
    let b = blanked.as_bytes();
    let Some(obj) = object_path(&blanked, path)? else {
        return Ok(None);
    };
    let Some(idx) = obj.members.iter().position(|m| m.key == name) else {
        return Ok(None);
    };
    let m = &obj.members[idx];
    // From the start of the member's line (when only blanks precede it).
    let line_start = text
        .get(..m.key_start)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |p| p + 1);
    let only_blanks = b[line_start..m.key_start]
        .iter()
        .all(u8::is_ascii_whitespace);
    let after = skip_ws(b, m.value_end);
    let (start, end) = if b.get(after) == Some(&b',') {
        let start = if only_blanks && line_start > 0 {
            line_start - 1
        } else {
            m.key_start
        };
        (start, after + 1)
    } else if idx > 0 {
        // The last member: take the comma after the previous one.
        let prev = &obj.members[idx - 1];
        (prev.value_end, m.value_end)
    } else {
        (m.key_start, m.value_end)
    };
    let mut out = apply(
        text,
        Splice {
            start,
            end,
            with: String::new(),
        },
    );
    if idx == 0 && obj.members.len() == 1 {
        // The object is now empty: make it `{}` when only blanks remain.
        let blanked = blank(&out);
        let ob = blanked.as_bytes();
        let close = skip_ws(ob, obj.open + 1);
        if ob.get(close) == Some(&b'}')
            && text
                .get(obj.open + 1..start)
                .is_some_and(|s| s.trim().is_empty())
        {
            out = apply(
                &out,
                Splice {
                    start: obj.open + 1,
                    end: close,
                    with: String::new(),
                },
            );
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn e(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn comments_and_trailing_commas_are_blanked() {
        let t = "{\n  // a \"comment\"\n  \"a\": \"//not\", /* b */\n  \"b\": [1,2,],\n}\n";
        let v = parse(t).unwrap_or_default();
        assert_eq!(v, json!({"a": "//not", "b": [1, 2]}));
        assert_eq!(blank(t).len(), t.len());
    }

    #[test]
    fn insert_keeps_everything_else() {
        let t = "{\n  // keep me\n  \"z\": 1,\n  \"mcpServers\": {\n    \"old\": {\"command\": \"x\"} // old one\n  },\n  \"a\": true\n}\n";
        let out = set_member(t, &["mcpServers"], "new", &e(&[("command", json!("y"))]))
            .unwrap_or_default();
        assert!(out.contains("// keep me"), "{out}");
        assert!(out.contains("// old one"), "{out}");
        let v = parse(&out).unwrap_or_default();
        assert_eq!(v["mcpServers"]["new"], json!({"command": "y"}));
        assert_eq!(v["mcpServers"]["old"], json!({"command": "x"}));
        assert!(out.find("\"z\"") < out.find("\"mcpServers\""));
        assert!(out.find("\"mcpServers\"") < out.find("\"a\""));
    }

    #[test]
    fn insert_after_a_trailing_comma_adds_no_second_comma() {
        let t = "{\n  \"s\": {\n    \"a\": 1, // one\n  },\n}\n";
        let out = set_member(t, &["s"], "b", &e(&[])).unwrap_or_default();
        assert!(!out.contains(",,"), "{out}");
        assert_eq!(
            parse(&out).unwrap_or_default(),
            json!({"s": {"a": 1, "b": {}}})
        );
        assert!(out.contains("// one"), "{out}");
    }

    #[test]
    fn insert_creates_the_container_and_replace_works() {
        let out = set_member(
            "{\n    \"theme\": \"x\"\n}\n",
            &["context_servers"],
            "s",
            &e(&[("command", json!("c")), ("args", json!(["1"]))]),
        )
        .unwrap_or_default();
        let v = parse(&out).unwrap_or_default();
        assert_eq!(v["context_servers"]["s"]["args"], json!(["1"]));
        assert!(
            out.contains("\n    \"context_servers\": {\n        \"s\": {"),
            "{out}"
        );
        let again = set_member(
            &out,
            &["context_servers"],
            "s",
            &e(&[("command", json!("d"))]),
        )
        .unwrap_or_default();
        assert_eq!(
            parse(&again).unwrap_or_default()["context_servers"]["s"],
            json!({"command": "d"})
        );
        let empty = set_member("", &["servers"], "s", &e(&[])).unwrap_or_default();
        assert_eq!(
            parse(&empty).unwrap_or_default(),
            json!({"servers": {"s": {}}})
        );
        let inline =
            set_member("{\"servers\": {}}", &["servers"], "s", &e(&[])).unwrap_or_default();
        assert_eq!(
            parse(&inline).unwrap_or_default(),
            json!({"servers": {"s": {}}})
        );
    }

    #[test]
    fn remove_each_position() {
        let t = "{\n  \"s\": {\n    \"a\": 1,\n    \"b\": 2, // bee\n    \"c\": 3\n  }\n}\n";
        for (name, rest) in [
            ("a", json!({"b":2,"c":3})),
            ("b", json!({"a":1,"c":3})),
            ("c", json!({"a":1,"b":2})),
        ] {
            let out = remove_member(t, &["s"], name)
                .unwrap_or_default()
                .unwrap_or_default();
            assert_eq!(parse(&out).unwrap_or_default()["s"], rest, "{out}");
        }
        let one = remove_member("{\"s\": {\"a\": 1}}", &["s"], "a")
            .unwrap_or_default()
            .unwrap_or_default();
        assert_eq!(one, "{\"s\": {}}");
        assert!(remove_member(t, &["s"], "zz").unwrap_or_default().is_none());
        assert!(
            remove_member(t, &["nope"], "a")
                .unwrap_or_default()
                .is_none()
        );
    }

    #[test]
    fn bad_files_are_errors_with_a_position() {
        let e = parse("{\n  \"a\": 1\n  \"b\": 2\n}")
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("line 3"), "{e}");
        assert!(set_member("[1]", &["x"], "n", &[]).is_err());
        assert!(set_member("{\"x\": 3}", &["x"], "n", &[]).is_err());
    }

    #[test]
    fn pretty_ordered_puts_known_keys_first() {
        let v = json!({"b": 1, "a": {"z": [], "y": [1]}, "c": {}});
        assert_eq!(
            pretty_ordered(&v, &["c", "a", "y"]),
            "{\n  \"c\": {},\n  \"a\": {\n    \"y\": [\n      1\n    ],\n    \"z\": []\n  },\n  \"b\": 1\n}\n"
        );
    }

    #[test]
    fn locate_maps_pointers_to_lines() {
        let t = "{\n  \"a\": {\n    \"b\": [\n      1,\n      2\n    ]\n  }\n}";
        let path: Vec<String> = ["a", "b", "1"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(line_col(t, locate(t, &path)), (5, 7));
    }
}
