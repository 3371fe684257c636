//! The configuration tree as Pacer reads it: each source's values (`source.rs`, `env.rs`), in the
//! file's order, merged across sources by a key match that ignores case, `_` and `-`.
//!
//! Why our own tree: a generic configuration crate (`config`) matches keys exactly (a file's `MaxWait` and an
//! environment variable's `maxwait` are different keys to it), while a team moving from .NET
//! writes `MaxUnitsPerMinute`, a Rust user `max_units_per_minute`, and the environment gives
//! `maxunitsperminute`. Each source is read on its own and merged here, so the later source wins
//! whatever its spelling, and the first spelling seen (the file's) is the one errors report.

use std::collections::HashMap;

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
    /// Keys in the order the source gave them; the spelling is the user's. A key a JSON file
    /// gives twice is here twice, for the reader to report.
    Table(Vec<(String, Node)>),
    List(Vec<Node>),
}

impl Default for Node {
    /// An empty table.
    fn default() -> Self {
        Node::Table(Vec::new())
    }
}

/// A list index that an override could not apply: past the end of the list, or leaving a gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    /// The levels down to the list (keys as the override spells them).
    pub(crate) path: Vec<String>,
    /// The index given.
    pub(crate) index: usize,
    /// The items the list has before it (the next index that would append).
    pub(crate) len: usize,
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

/// Whether two keys are the same key ([`normalize`]d alike), without building either: this runs
/// for every key of a table at every option looked up in it.
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        let skip = |c: &&u8| **c != b'_' && **c != b'-';
        let (mut a, mut b) = (
            a.as_bytes().iter().filter(skip),
            b.as_bytes().iter().filter(skip),
        );
        return loop {
            match (a.next(), b.next()) {
                (None, None) => break true,
                (Some(x), Some(y)) if x.eq_ignore_ascii_case(y) => {}
                _ => break false,
            }
        };
    }
    let mut a = a
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase);
    let mut b = b
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase);
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (x, y) if x == y => {}
            _ => return false,
        }
    }
}

impl Node {
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
    /// list) overlays a list item by item, as .NET configuration does: an index within the list
    /// replaces that item, the next index appends one. An index past that would leave a gap: it
    /// is not applied, and returned, for the caller to report.
    #[must_use]
    pub(crate) fn merge(&mut self, over: Node) -> Vec<Gap> {
        let mut gaps = Vec::new();
        self.merge_at(over, &mut Vec::new(), &mut gaps);
        gaps
    }

    fn merge_at(&mut self, over: Node, path: &mut Vec<String>, gaps: &mut Vec<Gap>) {
        match (self, over) {
            // Put in as it is, keeping a key given twice for the reader to report.
            (Node::Table(base), Node::Table(over)) if base.is_empty() => {
                table_gaps(&over, path, gaps);
                *base = over;
            }
            (Node::Table(base), Node::Table(over)) => {
                // One pass to index the base: merging stays linear in the size of both.
                let mut index: HashMap<String, usize> = HashMap::with_capacity(base.len());
                for (i, (k, _)) in base.iter().enumerate() {
                    index.entry(normalize(k)).or_insert(i);
                }
                for (key, value) in over {
                    path.push(key.clone());
                    match index.get(&normalize(&key)) {
                        Some(&i) => base[i].1.merge_at(value, path, gaps),
                        None => {
                            value.find_gaps(path, gaps);
                            index.insert(normalize(&key), base.len());
                            base.push((key, value));
                        }
                    }
                    path.pop();
                }
            }
            (Node::List(base), Node::Table(over)) if is_indexed(&over) => {
                let mut items: Vec<(usize, Node)> = over
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.parse().ok()?, v)))
                    .collect();
                items.sort_by_key(|(i, _)| *i);
                for (i, value) in items {
                    path.push(i.to_string());
                    if i < base.len() {
                        base[i].merge_at(value, path, gaps);
                    } else if i == base.len() {
                        value.find_gaps(path, gaps);
                        base.push(value);
                    } else {
                        gaps.push(Gap {
                            path: path[..path.len() - 1].to_vec(),
                            index: i,
                            len: base.len(),
                        });
                    }
                    path.pop();
                }
            }
            (_, Node::Nil) => {}
            (this, over) => {
                over.find_gaps(path, gaps);
                *this = over;
            }
        }
    }

    /// The gaps in the indexed tables of a value that is put in as it is.
    fn find_gaps(&self, path: &mut Vec<String>, gaps: &mut Vec<Gap>) {
        match self {
            Node::Table(entries) => table_gaps(entries, path, gaps),
            Node::List(items) => {
                for (i, v) in items.iter().enumerate() {
                    path.push(i.to_string());
                    v.find_gaps(path, gaps);
                    path.pop();
                }
            }
            _ => {}
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

/// The gaps in the indexed tables of a table's entries (itself included).
fn table_gaps(entries: &[(String, Node)], path: &mut Vec<String>, gaps: &mut Vec<Gap>) {
    if is_indexed(entries) {
        let mut indexes: Vec<usize> = entries.iter().filter_map(|(k, _)| k.parse().ok()).collect();
        indexes.sort_unstable();
        if let Some((len, &index)) = indexes.iter().enumerate().find(|(at, i)| **i != *at) {
            gaps.push(Gap {
                path: path.clone(),
                index,
                len,
            });
        }
    }
    for (k, v) in entries {
        path.push(k.clone());
        v.find_gaps(path, gaps);
        path.pop();
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
        let _ = base.merge(t(&[(
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
        let gaps = base.merge(t(&[("2", Node::Int(420)), ("1", Node::Int(504))]));
        assert!(gaps.is_empty(), "{gaps:?}");
        assert_eq!(
            base,
            Node::List(vec![Node::Int(429), Node::Int(504), Node::Int(420)])
        );
        assert!(base.merge(Node::Nil).is_empty());
        assert!(matches!(base, Node::List(_)));
        let mut scalar = Node::Int(1);
        let _ = scalar.merge(Node::Str("2".into()));
        assert_eq!(scalar, Node::Str("2".into()));
    }

    #[test]
    fn an_index_past_the_end_is_a_gap_and_changes_nothing() {
        let mut base = t(&[("C", Node::List(vec![Node::Int(429)]))]);
        let gaps = base.merge(t(&[("c", t(&[("3", Node::Int(420))]))]));
        assert_eq!(
            gaps,
            [Gap {
                path: vec!["c".into()],
                index: 3,
                len: 1
            }]
        );
        assert_eq!(base, t(&[("C", Node::List(vec![Node::Int(429)]))]));
        // A list that only the override writes starts at 0, without a gap.
        let gaps = base.merge(t(&[("d", t(&[("0", Node::Int(1)), ("2", Node::Int(3))]))]));
        assert_eq!(
            gaps,
            [Gap {
                path: vec!["d".into()],
                index: 2,
                len: 1
            }]
        );
    }

    #[test]
    fn values_show_as_written() {
        assert_eq!(Node::Str("fast".into()).shown(), "\"fast\"");
        assert_eq!(Node::Int(0).shown(), "0");
        assert_eq!(Node::Float(0.5).shown(), "0.5");
        assert_eq!(Node::List(vec![Node::Nil]).shown(), "a list of 1");
    }
}
