//! Walking the tree into typed values, collecting every problem with its full path.
//!
//! A [`TableReader`] hands out the keys it is asked for and remembers them; whatever is left
//! when it is finished is an unknown key, reported with the nearest known key as a suggestion.
//! Every typed read ([`At::f64`], [`At::duration`], …) reports a value of the wrong type
//! and returns `None`, so reading goes on and all problems are found in one pass.

use crate::duration;
use crate::error::{Problem, ProblemKind};
use crate::spelling::{Style, join, nearest};
use crate::tree::{Node, is_indexed, normalize, same_key};
use std::time::Duration;

/// The problems found so far.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    pub(crate) list: Vec<Problem>,
}

impl Collector {
    pub(crate) fn push(
        &mut self,
        path: impl Into<String>,
        value: Option<String>,
        message: impl Into<String>,
        kind: ProblemKind,
    ) {
        self.list.push(Problem::new(path, value, message, kind));
    }

    /// How many problems there are; compare before and after a read to see if it failed.
    pub(crate) fn count(&self) -> usize {
        self.list.len()
    }
}

/// A value with its full path, and the style of the table it is in.
#[derive(Debug, Clone)]
pub(crate) struct At<'a> {
    pub(crate) path: String,
    node: &'a Node,
    style: Style,
}

impl<'a> At<'a> {
    pub(crate) fn new(path: String, node: &'a Node, style: Style) -> Self {
        At { path, node, style }
    }

    pub(crate) fn node(&self) -> &'a Node {
        self.node
    }

    pub(crate) fn style(&self) -> Style {
        self.style
    }

    /// The value as written, for messages.
    pub(crate) fn shown(&self) -> String {
        self.node().shown()
    }

    fn wrong(&self, p: &mut Collector, message: impl Into<String>) {
        p.push(
            self.path.clone(),
            Some(self.shown()),
            message,
            ProblemKind::WrongType,
        );
    }

    /// A number (an integer, a float, or a string of one).
    pub(crate) fn f64(&self, p: &mut Collector) -> Option<f64> {
        let v = match self.node() {
            Node::Int(i) => Some(*i as f64),
            Node::Float(f) => Some(*f),
            Node::Str(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        if v.is_none() {
            self.wrong(p, "expected a number");
        }
        v
    }

    /// `true` or `false` (also as a string, in any case).
    pub(crate) fn bool(&self, p: &mut Collector) -> Option<bool> {
        let v = match self.node() {
            Node::Bool(b) => Some(*b),
            Node::Str(s) if s.trim().eq_ignore_ascii_case("true") => Some(true),
            Node::Str(s) if s.trim().eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        };
        if v.is_none() {
            self.wrong(p, "expected true or false");
        }
        v
    }

    /// A whole number from 0 to `max`.
    pub(crate) fn uint(&self, p: &mut Collector, max: u64) -> Option<u64> {
        let v: Option<i128> = match self.node() {
            Node::Int(i) => Some(*i),
            Node::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => Some(*f as i128),
            Node::Str(s) => s.trim().parse::<i128>().ok(),
            _ => None,
        };
        match v {
            None => self.wrong(p, "expected a whole number"),
            Some(v) if v < 0 => p.push(
                self.path.clone(),
                Some(self.shown()),
                "must not be negative",
                ProblemKind::OutOfRange,
            ),
            Some(v) if v > i128::from(max) => p.push(
                self.path.clone(),
                Some(self.shown()),
                format!("must be at most {max}"),
                ProblemKind::OutOfRange,
            ),
            Some(v) => return u64::try_from(v).ok(),
        }
        None
    }

    /// A duration: a TimeSpan, a length like `5s`, or a number of seconds.
    pub(crate) fn duration(&self, p: &mut Collector) -> Option<Duration> {
        let v = match self.node() {
            Node::Str(s) => duration::parse(s),
            Node::Int(i) => duration::from_secs_f64(*i as f64),
            Node::Float(f) => duration::from_secs_f64(*f),
            _ => Err(duration::EXPECTED.to_owned()),
        };
        match v {
            Ok(d) => Some(d),
            Err(reason) => {
                let kind = if reason.starts_with("must") || reason.starts_with("is too") {
                    ProblemKind::OutOfRange
                } else {
                    ProblemKind::WrongType
                };
                p.push(self.path.clone(), Some(self.shown()), reason, kind);
                None
            }
        }
    }

    /// One of `names` (matched without regard to case, `_` or `-`); its index. An unknown name is
    /// reported with the nearest one and the list of all.
    pub(crate) fn choice(&self, p: &mut Collector, what: &str, names: &[&str]) -> Option<usize> {
        let all = names.join(", ");
        let Node::Str(s) = self.node() else {
            self.wrong(p, format!("expected {what}: one of {all}"));
            return None;
        };
        let wanted = normalize(s.trim());
        if let Some(i) = names.iter().position(|n| normalize(n) == wanted) {
            return Some(i);
        }
        let message = match nearest(s, names) {
            Some(near) => format!("unknown {what}; did you mean {near:?}? (expected one of {all})"),
            None => format!("unknown {what}; expected one of {all}"),
        };
        self.wrong(p, message);
        None
    }

    /// A string (a number is taken as its text); anything else is reported.
    pub(crate) fn text(&self, p: &mut Collector) -> Option<String> {
        match self.node() {
            Node::Str(s) => Some(s.clone()),
            Node::Int(i) => Some(i.to_string()),
            _ => {
                self.wrong(p, "expected a string");
                None
            }
        }
    }

    /// A table's reader; anything else is reported.
    pub(crate) fn table(&self, p: &mut Collector) -> Option<TableReader<'a>> {
        match self.node() {
            Node::Table(_) | Node::Nil => {
                Some(TableReader::new(self.path.clone(), self.node(), self.style))
            }
            _ => {
                self.wrong(p, "expected a table");
                None
            }
        }
    }

    /// The items of a list (or of a table indexed `0`, `1`, … as environment variables write a
    /// list), each with its path `path[i]`.
    pub(crate) fn list(&self, p: &mut Collector) -> Option<Vec<At<'a>>> {
        let style = self.style;
        match self.node() {
            Node::List(items) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, n)| At::new(format!("{}[{i}]", self.path), n, style))
                    .collect(),
            ),
            Node::Table(entries) if is_indexed(entries) => {
                let mut items: Vec<(usize, &Node)> = entries
                    .iter()
                    .filter_map(|(k, n)| Some((k.parse().ok()?, n)))
                    .collect();
                items.sort_by_key(|(i, _)| *i);
                Some(
                    items
                        .into_iter()
                        .map(|(i, n)| At::new(format!("{}[{i}]", self.path), n, style))
                        .collect(),
                )
            }
            _ => {
                self.wrong(p, "expected a list");
                None
            }
        }
    }
}

/// A table being read.
#[derive(Debug)]
pub(crate) struct TableReader<'a> {
    path: String,
    entries: &'a [(String, Node)],
    used: Vec<bool>,
    style: Style,
}

impl<'a> TableReader<'a> {
    /// A reader of `node` (a table; `null` reads as an empty table) at `path`. Its style is that
    /// of its keys, else `parent`.
    pub(crate) fn new(path: String, node: &'a Node, parent: Style) -> Self {
        let entries: &[(String, Node)] = match node {
            Node::Table(e) => e,
            _ => &[],
        };
        TableReader {
            path,
            entries,
            used: vec![false; entries.len()],
            style: Style::of(entries).unwrap_or(parent),
        }
    }

    /// The same reader, but spelling like `style` (for tables whose keys are names, not options).
    pub(crate) fn with_style(mut self, style: Style) -> Self {
        self.style = style;
        self
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    pub(crate) fn style(&self) -> Style {
        self.style
    }

    /// The path of option `pascal` in this table, as given or in the table's style.
    pub(crate) fn path_of(&self, pascal: &str) -> String {
        match self.entries.iter().find(|(k, _)| same_key(k, pascal)) {
            Some((k, _)) => join(&self.path, k),
            None => join(&self.path, &self.style.render(pascal)),
        }
    }

    /// The value of option `pascal`, matched without regard to case, `_` or `-`. `None` when it
    /// is not there or is `null`. The same key given twice (in one spelling or two) is a
    /// problem.
    pub(crate) fn get(&mut self, p: &mut Collector, pascal: &str) -> Option<At<'a>> {
        let mut found: Option<(usize, &'a str, &'a Node)> = None;
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if !same_key(k, pascal) {
                continue;
            }
            self.used[i] = true;
            if let Some((_, first, _)) = found {
                let message = if first == k {
                    "appears twice in the same table".to_owned()
                } else {
                    format!("given twice, as {first} and as {k}")
                };
                p.push(join(&self.path, k), None, message, ProblemKind::Duplicate);
            }
            found = Some((i, k, v));
        }
        let (_, key, node) = found?;
        if matches!(node, Node::Nil) {
            return None;
        }
        Some(At::new(join(&self.path, key), node, self.style))
    }

    /// Every entry, in order, marking all of them read (for tables whose keys are names).
    pub(crate) fn entries(&mut self) -> impl Iterator<Item = (&'a str, At<'a>)> + '_ {
        self.used.iter_mut().for_each(|u| *u = true);
        let (path, style) = (self.path.clone(), self.style);
        self.entries
            .iter()
            .map(move |(k, v)| (k.as_str(), At::new(join(&path, k), v, style)))
    }

    /// Reports every key that was not read as unknown, suggesting the nearest of `known`.
    /// `elsewhere` may give a better message for a key that belongs somewhere else.
    pub(crate) fn finish_with(
        self,
        p: &mut Collector,
        known: &[&str],
        elsewhere: impl Fn(&str) -> Option<String>,
    ) {
        for ((key, _), used) in self.entries.iter().zip(&self.used) {
            if *used {
                continue;
            }
            let path = join(&self.path, key);
            if let Some(message) = elsewhere(key) {
                p.push(
                    path,
                    None,
                    message,
                    ProblemKind::UnknownKey { suggestion: None },
                );
                continue;
            }
            let suggestion = nearest(key, known).map(|k| self.style.render(k));
            let message = match &suggestion {
                Some(s) => format!("unknown key; did you mean {s}?"),
                None if known.len() <= 8 => format!(
                    "unknown key; expected one of {}",
                    known
                        .iter()
                        .map(|k| self.style.render(k))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "unknown key".to_owned(),
            };
            p.push(path, None, message, ProblemKind::UnknownKey { suggestion });
        }
    }

    /// Reports every key that was not read as unknown, suggesting the nearest of `known`.
    pub(crate) fn finish(self, p: &mut Collector, known: &[&str]) {
        self.finish_with(p, known, |_| None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(entries: &[(&str, Node)]) -> Node {
        Node::Table(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn typed_reads_report_wrong_types_with_the_path_and_value() {
        let node = table(&[
            ("Rate", Node::Str("lots".into())),
            ("On", Node::Int(3)),
            ("Count", Node::Int(-1)),
            ("Big", Node::Int(1 << 40)),
            ("Wait", Node::Str("soon".into())),
            ("Kind", Node::Str("Cubc".into())),
        ]);
        let mut p = Collector::default();
        let mut t = TableReader::new("L".into(), &node, Style::Pascal);
        assert_eq!(t.get(&mut p, "Rate").unwrap().f64(&mut p), None);
        assert_eq!(t.get(&mut p, "On").unwrap().bool(&mut p), None);
        assert_eq!(t.get(&mut p, "Count").unwrap().uint(&mut p, 10), None);
        assert_eq!(
            t.get(&mut p, "Big")
                .unwrap()
                .uint(&mut p, u64::from(u32::MAX)),
            None
        );
        assert_eq!(t.get(&mut p, "Wait").unwrap().duration(&mut p), None);
        assert_eq!(
            t.get(&mut p, "Kind")
                .unwrap()
                .choice(&mut p, "controller", &["Aimd", "Cubic"]),
            None
        );
        t.finish(&mut p, &[]);
        let lines: Vec<String> = p.list.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "L.Rate = \"lots\": expected a number",
                "L.On = 3: expected true or false",
                "L.Count = -1: must not be negative",
                "L.Big = 1099511627776: must be at most 4294967295",
                &format!("L.Wait = \"soon\": {}", duration::EXPECTED),
                "L.Kind = \"Cubc\": unknown controller; did you mean \"Cubic\"? (expected one of Aimd, Cubic)",
            ]
        );
    }

    #[test]
    fn strings_are_read_as_numbers_booleans_and_durations() {
        let node = table(&[
            ("rate", Node::Str(" 900 ".into())),
            ("on", Node::Str("True".into())),
            ("count", Node::Float(3.0)),
            ("wait", Node::Float(0.5)),
        ]);
        let mut p = Collector::default();
        let mut t = TableReader::new(String::new(), &node, Style::Pascal);
        assert_eq!(t.get(&mut p, "Rate").unwrap().f64(&mut p), Some(900.0));
        assert_eq!(t.get(&mut p, "On").unwrap().bool(&mut p), Some(true));
        assert_eq!(t.get(&mut p, "Count").unwrap().uint(&mut p, 10), Some(3));
        assert_eq!(
            t.get(&mut p, "Wait").unwrap().duration(&mut p),
            Some(Duration::from_millis(500))
        );
        assert_eq!(t.path_of("MaxWait"), "max_wait");
        t.finish(&mut p, &[]);
        assert!(p.list.is_empty(), "{:?}", p.list);
    }

    #[test]
    fn unknown_and_duplicate_keys() {
        let node = table(&[
            ("MaxWait", Node::Int(1)),
            ("max_wait", Node::Int(2)),
            ("Brust", Node::Int(2)),
            ("Colour", Node::Str("red".into())),
        ]);
        let mut p = Collector::default();
        let mut t = TableReader::new("L".into(), &node, Style::Pascal);
        let wait = t.get(&mut p, "MaxWait").unwrap();
        assert_eq!(wait.path, "L.max_wait");
        t.finish(&mut p, &["MaxWait", "Burst"]);
        let lines: Vec<String> = p.list.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "L.max_wait: given twice, as MaxWait and as max_wait",
                "L.Brust: unknown key; did you mean Burst?",
                "L.Colour: unknown key; expected one of MaxWait, Burst",
            ]
        );
    }

    #[test]
    fn lists_and_indexed_tables() {
        let list = Node::List(vec![Node::Int(429), Node::Int(503)]);
        let indexed = table(&[("1", Node::Int(503)), ("0", Node::Int(429))]);
        let mut p = Collector::default();
        for node in [&list, &indexed] {
            let items = At::new("C".into(), node, Style::Pascal)
                .list(&mut p)
                .unwrap();
            let paths: Vec<_> = items.iter().map(|a| a.path.as_str()).collect();
            assert_eq!(paths, ["C[0]", "C[1]"]);
            assert_eq!(items[1].node(), &Node::Int(503));
        }
        assert!(
            At::new("C".into(), &Node::Int(1), Style::Pascal)
                .list(&mut p)
                .is_none()
        );
        assert_eq!(p.list[0].to_string(), "C = 1: expected a list");
    }
}
