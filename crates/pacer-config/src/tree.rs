//! The configuration tree as Pacer reads it: the `config` crate's values, in the file's order,
//! merged across sources by a key match that ignores case, `_` and `-`.
//!
//! Why our own tree: the `config` crate matches keys exactly (a file's `MaxWait` and an
//! environment variable's `maxwait` are different keys to it), while a team moving from .NET
//! writes `MaxUnitsPerMinute`, a Rust user `max_units_per_minute`, and the environment gives
//! `maxunitsperminute`. Each source is read on its own and merged here, so the later source wins
//! whatever its spelling, and the first spelling seen (the file's) is the one errors report.

use config::{Value, ValueKind};

/// One value of the tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// `null` in JSON: treated as not given.
    Nil,
    Bool(bool),
    /// Any integer the sources can hold.
    Int(i128),
    Float(f64),
    Str(String),
    /// Keys in the order the source gave them; the spelling is the user's.
    Table(Vec<(String, Node)>),
    List(Vec<Node>),
}

/// The form in which two keys are the same key: lowercase, without `_` and `-`.
/// `MaxUnitsPerMinute`, `max_units_per_minute`, `max-units-per-minute` and
/// `MAXUNITSPERMINUTE` all become `maxunitsperminute`.
pub(crate) fn normalize(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether two keys are the same key.
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    normalize(a) == normalize(b)
}

impl Node {
    /// The tree of one source, as the `config` crate collected it.
    pub(crate) fn from_value(value: Value) -> Node {
        match value.kind {
            ValueKind::Nil => Node::Nil,
            ValueKind::Boolean(b) => Node::Bool(b),
            ValueKind::I64(i) => Node::Int(i.into()),
            ValueKind::I128(i) => Node::Int(i),
            ValueKind::U64(u) => Node::Int(u.into()),
            ValueKind::U128(u) => i128::try_from(u).map_or(Node::Float(u as f64), Node::Int),
            ValueKind::Float(f) => Node::Float(f),
            ValueKind::String(s) => Node::Str(s),
            ValueKind::Table(t) => Node::Table(
                t.into_iter()
                    .map(|(k, v)| (k, Node::from_value(v)))
                    .collect(),
            ),
            ValueKind::Array(a) => Node::List(a.into_iter().map(Node::from_value).collect()),
        }
    }

    /// The child of a table whose key matches `key`, if any (the first one).
    pub(crate) fn child(&self, key: &str) -> Option<(&str, &Node)> {
        let wanted = normalize(key);
        match self {
            Node::Table(entries) => entries
                .iter()
                .find(|(k, _)| normalize(k) == wanted)
                .map(|(k, v)| (k.as_str(), v)),
            _ => None,
        }
    }

    /// Puts `over` on top of `self`: tables merge key by key (a key matches whatever its case or
    /// separators, and keeps the spelling it had in `self`); anything else in `over` replaces what
    /// `self` had. A table whose keys are all indexes (`0`, `1`, as environment variables write a
    /// list) overlays a list item by item, as .NET configuration does.
    pub(crate) fn merge(&mut self, over: Node) {
        match (self, over) {
            (Node::Table(base), Node::Table(over)) => {
                for (key, value) in over {
                    let wanted = normalize(&key);
                    match base.iter_mut().find(|(k, _)| normalize(k) == wanted) {
                        Some((_, existing)) => existing.merge(value),
                        None => base.push((key, value)),
                    }
                }
            }
            (Node::List(base), Node::Table(over)) if is_indexed(&over) => {
                for (key, value) in over {
                    let Ok(i) = key.parse::<usize>() else {
                        continue;
                    };
                    if i < base.len() {
                        base[i].merge(value);
                    } else if i == base.len() {
                        base.push(value);
                    }
                    // An index past the end leaves a gap; .NET binds nothing there either.
                }
            }
            (_, Node::Nil) => {}
            (this, over) => *this = over,
        }
    }

    /// The value as the user wrote it: strings quoted, numbers and booleans bare, tables and
    /// lists summarised.
    pub(crate) fn shown(&self) -> String {
        match self {
            Node::Nil => "null".to_owned(),
            Node::Bool(b) => b.to_string(),
            Node::Int(i) => i.to_string(),
            Node::Float(f) => f.to_string(),
            Node::Str(s) => format!("{s:?}"),
            Node::Table(_) => "a table".to_owned(),
            Node::List(items) => format!("a list of {}", items.len()),
        }
    }
}

/// Whether every key of a table is a list index.
pub(crate) fn is_indexed(entries: &[(String, Node)]) -> bool {
    !entries.is_empty() && entries.iter().all(|(k, _)| k.parse::<usize>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(entries: &[(&str, Node)]) -> Node {
        Node::Table(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn keys_match_without_regard_to_case_or_separators() {
        for key in [
            "MaxUnitsPerMinute",
            "max_units_per_minute",
            "max-units-per-minute",
            "MAXUNITSPERMINUTE",
            "maxunitsperminute",
        ] {
            assert_eq!(normalize(key), "maxunitsperminute", "{key}");
        }
        assert!(!same_key("MaxWait", "MaxWaits"));
    }

    #[test]
    fn a_later_source_wins_and_keeps_the_first_spelling() {
        let mut base = t(&[(
            "AdaptiveRateLimiting",
            t(&[("MaxWait", Node::Str("00:00:05".into()))]),
        )]);
        base.merge(t(&[(
            "adaptive_rate_limiting",
            t(&[("maxwait", Node::Str("7s".into())), ("Burst", Node::Int(2))]),
        )]));
        assert_eq!(
            base,
            t(&[(
                "AdaptiveRateLimiting",
                t(&[("MaxWait", Node::Str("7s".into())), ("Burst", Node::Int(2))])
            )])
        );
    }

    #[test]
    fn indexed_tables_overlay_lists_and_nulls_change_nothing() {
        let mut base = Node::List(vec![Node::Int(429), Node::Int(503)]);
        base.merge(t(&[("1", Node::Int(504)), ("2", Node::Int(420))]));
        assert_eq!(
            base,
            Node::List(vec![Node::Int(429), Node::Int(504), Node::Int(420)])
        );
        base.merge(Node::Nil);
        assert!(matches!(base, Node::List(_)));
        let mut scalar = Node::Int(1);
        scalar.merge(Node::Str("2".into()));
        assert_eq!(scalar, Node::Str("2".into()));
    }

    #[test]
    fn values_show_as_written() {
        assert_eq!(Node::Str("fast".into()).shown(), "\"fast\"");
        assert_eq!(Node::Int(0).shown(), "0");
        assert_eq!(Node::Float(0.5).shown(), "0.5");
        assert_eq!(Node::List(vec![Node::Nil]).shown(), "a list of 1");
    }
}
