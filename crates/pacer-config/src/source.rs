//! Parsing a JSON or TOML text into the tree.
//!
//! Why our own parsing rather than the `config` crate's: JSON objects are read into a list of
//! pairs, so a key written twice stays twice and is reported (serde_json's `Value`, and so the
//! `config` crate, keeps only the last one, silently); and a TOML parse error keeps the line and
//! the key it happened at (a number too large for an integer otherwise names neither).

use crate::error::ConfigError;
use crate::tree::Node;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON text as a tree, keeping every key of an object in order, duplicates included.
pub(crate) fn json(text: &str, name: &str) -> Result<Node, ConfigError> {
    // A UTF-8 byte order mark (Visual Studio writes one; .NET reads past it).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut de = serde_json::Deserializer::from_str(text);
    let node = de
        .deserialize_any(NodeVisitor)
        .and_then(|node| de.end().map(|()| node))
        .map_err(|e| {
            let at = json_path_at(text, e.line(), e.column());
            let hint = json_hint(text, e.line(), e.column());
            ConfigError::source_error(format!("{name}: {e}{at}{hint}"), e)
        })?;
    match node {
        Node::Table(_) => Ok(node),
        other => Err(ConfigError::Source {
            message: format!(
                "{name}: expected an object at the top level, found {}",
                other.shown()
            ),
            source: None,
        }),
    }
}

/// Where a JSON text's parse failed, as the key path of the value being read there
/// (` (at AdaptiveRateLimiting.Limiters.orders.MaxUnitsPerMinute)`), or nothing at the top.
fn json_path_at(text: &str, line: usize, column: usize) -> String {
    let end = offset_of(text, line, column);
    // What each open object or list is at: an object's last key, a list's index.
    let mut path: Vec<(bool, String, usize)> = Vec::new();
    let mut key: Option<String> = None;
    let mut chars = text[..end].char_indices();
    while let Some((_, c)) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                let mut closed_at = None;
                while let Some((j, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => {
                            closed_at = Some(j);
                            break;
                        }
                        c => s.push(c),
                    }
                }
                // A string followed by `:` is a key.
                if let Some(j) = closed_at
                    && text[j + 1..end].trim_start().starts_with(':')
                {
                    key = Some(s);
                }
            }
            '{' => path.push((true, key.take().unwrap_or_default(), 0)),
            '[' => path.push((false, key.take().unwrap_or_default(), 0)),
            '}' | ']' => {
                path.pop();
                key = None;
            }
            ',' => {
                key = None;
                if let Some(top) = path.last_mut()
                    && !top.0
                {
                    top.2 += 1;
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for (depth, (object, name, index)) in path.iter().enumerate() {
        if depth > 0 && !name.is_empty() {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
        }
        if !object {
            out.push_str(&format!("[{index}]"));
        }
    }
    if let Some(k) = key.filter(|_| path.last().is_some_and(|t| t.0)) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&k);
    }
    if out.is_empty() {
        String::new()
    } else {
        format!(" (at {out})")
    }
}

/// What to write instead, for the values JSON has no way to write: `NaN`, `Infinity`, and a
/// number past the largest float.
fn json_hint(text: &str, line: usize, column: usize) -> &'static str {
    let at = offset_of(text, line, column);
    let from = text[..at].rfind([':', ',', '[']).map_or(0, |i| i + 1);
    let value = text[from..].trim_start();
    let word: String = value
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
        .collect();
    let lower = word.trim_start_matches(['-', '+']).to_ascii_lowercase();
    if lower == "nan" || lower.starts_with("inf") {
        ": JSON has no NaN or Infinity; write a number"
    } else if word.parse::<f64>().is_ok_and(f64::is_infinite) {
        ": the number is past the largest a float holds (about 1.8e308)"
    } else {
        ""
    }
}

/// The byte offset of a 1-based `line` and `column` (serde_json's), at most the text's end.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = text.len();
    let mut start = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n + 1 == line {
            offset = (start + column.saturating_sub(1)).min(text.len());
            break;
        }
        start += l.len();
    }
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Any self-describing value (a JSON text here; a config-rs value or any other deserializer for
/// the settings' `Deserialize`) as our tree.
pub(crate) struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        i128::try_from(v)
            .map(Node::Int)
            .map_err(|_| E::custom("the number is too large"))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Nil)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Nil)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed)? {
            items.push(item);
        }
        Ok(Node::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        // Pairs, not a map: a key given twice is kept twice, for the reader to report.
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value_seed(Seed)?));
        }
        Ok(Node::Table(entries))
    }
}

struct Seed;

impl<'de> de::DeserializeSeed<'de> for Seed {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A TOML text as a tree, in the file's order. A parse error names the line, the column and,
/// when it can be told, the key path (`adaptive_rate_limiting.limiters.a.queue_limit`).
pub(crate) fn toml(text: &str, name: &str) -> Result<Node, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match text.parse::<toml::Table>() {
        Ok(table) => Ok(from_toml(toml::Value::Table(table))),
        Err(e) => {
            let place = e
                .span()
                .map(|span| locate(text, span.start))
                .unwrap_or_default();
            Err(ConfigError::source_error(
                format!("{name}: {place}{}", e.message().trim_end()),
                e,
            ))
        }
    }
}

fn from_toml(value: toml::Value) -> Node {
    match value {
        toml::Value::String(s) => Node::Str(s),
        toml::Value::Integer(i) => Node::Int(i.into()),
        toml::Value::Float(f) => Node::Float(f),
        toml::Value::Boolean(b) => Node::Bool(b),
        toml::Value::Datetime(d) => Node::Str(d.to_string()),
        toml::Value::Array(items) => Node::List(items.into_iter().map(from_toml).collect()),
        toml::Value::Table(t) => {
            Node::Table(t.into_iter().map(|(k, v)| (k, from_toml(v))).collect())
        }
    }
}

/// `key.path at line L, column C: ` for a byte offset of a TOML text: the key is the one written
/// before the offset on its line, under the last table header above it (`[[…]]` headers get
/// their index).
fn locate(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let column = text[line_start..offset].chars().count() + 1;
    let before = &text[line_start..offset];
    let key = before.rfind('=').map(|eq| {
        let head = &before[..eq];
        let from = head.rfind(['{', ',']).map_or(0, |i| i + 1);
        head[from..].trim().to_owned()
    });
    let mut header = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in text[..line_start].lines() {
        let line = line.trim();
        if let Some(h) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let h = h.trim().to_owned();
            let n = match counts.iter_mut().find(|(k, _)| *k == h) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    counts.push((h.clone(), 0));
                    0
                }
            };
            header = format!("{h}[{n}]");
        } else if let Some(h) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            header = h.trim().to_owned();
        }
    }
    match key {
        Some(key) if !key.is_empty() => {
            let path = if header.is_empty() {
                key
            } else {
                format!("{header}.{key}")
            };
            format!("{path} at line {line_no}, column {column}: ")
        }
        _ => format!("line {line_no}, column {column}: "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_duplicate_keys_in_order() {
        let node = json(r#"{ "a": 1, "b": [true, null, 0.5, "x"], "a": 2 }"#, "t").unwrap();
        assert_eq!(
            node,
            Node::Table(vec![
                ("a".into(), Node::Int(1)),
                (
                    "b".into(),
                    Node::List(vec![
                        Node::Bool(true),
                        Node::Nil,
                        Node::Float(0.5),
                        Node::Str("x".into())
                    ])
                ),
                ("a".into(), Node::Int(2)),
            ])
        );
        let e = json("[1]", "t").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t: expected an object at the top level, found a list of 1"
        );
        let e = json("{ \"a\": }", "t").unwrap_err();
        assert!(
            e.to_string().starts_with("t: expected value at line 1"),
            "{e}"
        );
    }

    #[test]
    fn a_toml_error_names_the_key_and_the_line() {
        let text =
            "[a.b]\nx = 1\n\n[[a.w]]\nn = 1\n[[a.w]]\nlimit = { per = 99999999999999999999 }\n";
        let e = toml(text, "t").unwrap_err().to_string();
        assert!(e.starts_with("t: a.w[1].per at line 7, column 17: "), "{e}");
        let e = toml("x = 99999999999999999999\n", "t")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t: x at line 1, column 5: "), "{e}");
        let e = toml("[a\n", "t").unwrap_err().to_string();
        assert!(e.starts_with("t: line 1, column "), "{e}");
    }
}
