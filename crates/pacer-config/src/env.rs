//! Environment overrides as a tree: `PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXWAIT`
//! splits at `__` into levels, lowercased, each value a string.
//!
//! Read here rather than by the `config` crate so that every problem can name the variable that
//! caused it: an empty level (`…__LIMITERS____MAXWAIT`), one setting given by two variables, a
//! list index past the end (reported by the loader with [`EnvTree::variables_under`]).

use crate::error::ProblemKind;
use crate::reader::Collector;
use crate::tree::{Node, normalize};

/// The overrides, and which variable set which levels.
#[derive(Debug, Default)]
pub(crate) struct EnvTree {
    pub(crate) tree: Node,
    /// Each variable's levels (normalised) and its name as written.
    origins: Vec<(Vec<String>, String)>,
}

impl EnvTree {
    /// The variables that set something at or under `path` (levels as in the tree).
    pub(crate) fn variables_under(&self, path: &[String]) -> Vec<&str> {
        let path: Vec<String> = path.iter().map(|s| normalize(s)).collect();
        self.origins
            .iter()
            .filter(|(levels, _)| levels.starts_with(&path))
            .map(|(_, name)| name.as_str())
            .collect()
    }
}

/// Reads the variables under `prefix` (all of them when it is empty, keeping only those whose
/// first level is one of `first_levels`, the section's: the rest of the environment is not
/// Pacer's).
/// `vars` replaces the process environment.
pub(crate) fn read(
    p: &mut Collector,
    prefix: &str,
    vars: Option<&[(String, String)]>,
    first_levels: &[&str],
) -> EnvTree {
    let mut all: Vec<(String, String)> = match vars {
        Some(vars) => vars.to_vec(),
        None => process_vars(p, prefix),
    };
    // The environment has no order; sorting makes the tree (and the errors) the same each run.
    all.sort();
    let wanted = (!prefix.is_empty()).then(|| format!("{}__", prefix.to_lowercase()));
    let mut env = EnvTree::default();
    for (name, value) in all {
        let lower = name.to_lowercase();
        let rest = match &wanted {
            Some(w) => match lower.strip_prefix(w.as_str()) {
                Some(rest) => rest,
                None => continue,
            },
            None => lower.as_str(),
        };
        let levels: Vec<&str> = rest.split("__").collect();
        if wanted.is_none()
            && !first_levels
                .iter()
                .any(|f| normalize(levels[0]) == normalize(f))
        {
            continue;
        }
        if let Some(i) = levels.iter().position(|l| l.is_empty()) {
            let written: Vec<&str> = name.split("__").collect();
            let skipped = written.len() - levels.len();
            let place = match i {
                _ if i + 1 == levels.len() => "at the end".to_owned(),
                0 if skipped == 0 => "at the start".to_owned(),
                _ => format!("after {}", written[..skipped + i].join("__")),
            };
            p.push(
                name.clone(),
                None,
                format!(
                    "an empty level {place} (two `__` in a row): levels are separated by exactly two underscores"
                ),
                ProblemKind::UnknownKey { suggestion: None },
            );
            continue;
        }
        insert(p, &mut env, &levels, value, &name);
    }
    env
}

fn process_vars(p: &mut Collector, prefix: &str) -> Vec<(String, String)> {
    let wanted = format!("{}__", prefix.to_lowercase());
    let mut out = Vec::new();
    for (k, v) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        match v.into_string() {
            Ok(v) => out.push((k.to_owned(), v)),
            Err(_) if k.to_lowercase().starts_with(&wanted) => p.push(
                k.to_owned(),
                None,
                "the value is not valid UTF-8",
                ProblemKind::WrongType,
            ),
            Err(_) => {}
        }
    }
    out
}

fn insert(p: &mut Collector, env: &mut EnvTree, levels: &[&str], value: String, name: &str) {
    let normalized: Vec<String> = levels.iter().map(|l| normalize(l)).collect();
    let same = env.origins.iter().find(|(o, _)| *o == normalized);
    let clash = env
        .origins
        .iter()
        .find(|(o, _)| o.starts_with(&normalized) || normalized.starts_with(o));
    let message = match (same, clash) {
        (Some((_, other)), _) => format!("sets the same key as {other}"),
        (None, Some((_, other))) => {
            format!("conflicts with {other}: one sets a value where the other needs a table")
        }
        (None, None) => String::new(),
    };
    if !message.is_empty() {
        p.push(name.to_owned(), None, message, ProblemKind::Duplicate);
        return;
    }
    let mut node = &mut env.tree;
    for (i, level) in levels.iter().enumerate() {
        let Node::Table(entries) = node else {
            unreachable!("no variable set a value on this path")
        };
        let at = match entries
            .iter()
            .position(|(k, _)| normalize(k) == normalized[i])
        {
            Some(at) => at,
            None => {
                let child = if i + 1 == levels.len() {
                    Node::Str(String::new())
                } else {
                    Node::Table(Vec::new())
                };
                entries.push(((*level).to_owned(), child));
                entries.len() - 1
            }
        };
        node = &mut entries[at].1;
    }
    *node = Node::Str(value);
    env.origins.push((normalized, name.to_owned()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn variables_become_a_lowercase_tree() {
        let mut p = Collector::default();
        let v = vars(&[
            ("PACER__A__LIMITERS__X__MAXWAIT", "5s"),
            ("PACER__A__LIMITERS__X__BURST", "2s"),
            ("OTHER__A", "1"),
        ]);
        let env = read(&mut p, "PACER", Some(&v), &["A"]);
        assert!(p.list.is_empty(), "{:?}", p.list);
        let x = Node::Table(vec![
            ("burst".into(), Node::Str("2s".into())),
            ("maxwait".into(), Node::Str("5s".into())),
        ]);
        let limiters = Node::Table(vec![("x".into(), x)]);
        let a = Node::Table(vec![("limiters".into(), limiters)]);
        assert_eq!(env.tree, Node::Table(vec![("a".into(), a)]));
        assert_eq!(
            env.variables_under(&["A".into(), "Limiters".into(), "X".into()]),
            [
                "PACER__A__LIMITERS__X__BURST",
                "PACER__A__LIMITERS__X__MAXWAIT"
            ]
        );
    }

    #[test]
    fn empty_levels_and_twice_set_keys_name_the_variable() {
        let mut p = Collector::default();
        let v = vars(&[
            ("PACER__A__LIMITERS____MAXWAIT", "5s"),
            ("PACER__A__", "1"),
            ("PACER__A__L__MAX_WAIT", "1s"),
            ("PACER__A__L__MAXWAIT", "2s"),
        ]);
        read(&mut p, "PACER", Some(&v), &["A"]);
        let lines: Vec<String> = p.list.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "PACER__A__: an empty level at the end (two `__` in a row): levels are separated by exactly two underscores",
                "PACER__A__LIMITERS____MAXWAIT: an empty level after PACER__A__LIMITERS (two `__` in a row): levels are separated by exactly two underscores",
                "PACER__A__L__MAX_WAIT: sets the same key as PACER__A__L__MAXWAIT",
            ]
        );
    }
}
