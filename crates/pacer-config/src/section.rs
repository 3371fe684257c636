//! Walking the section (`AdaptiveRateLimiting`): finding it, its `Limiters` by name, and
//! `DefaultLimiter`.

use crate::error::ProblemKind;
use crate::limiter;
use crate::reader::{Collector, TableReader};
use crate::settings::{LimiterSettings, PacerSettings};
use crate::spelling::{Style, join, nearest};
use crate::tree::{Node, normalize};
use std::collections::HashMap;

/// The section's keys.
const SECTION_KEYS: &[&str] = &["Limiters", "DefaultLimiter"];

/// Walks the section into settings; `None` if there were problems.
pub(crate) fn read_settings(
    p: &mut Collector,
    root: &Node,
    section: &[String],
) -> Option<PacerSettings> {
    // Find the section, level by level, in the user's spelling.
    let mut node = root;
    let mut path = String::new();
    for level in section {
        match node.child(level) {
            Some((key, child)) => {
                path = join(&path, key);
                if let Node::Table(entries) = node
                    && let Some((again, _)) = entries
                        .iter()
                        .filter(|(k, _)| normalize(k) == normalize(level))
                        .nth(1)
                {
                    let message = if again == key {
                        "appears twice in the same table".to_owned()
                    } else {
                        format!("given twice, as {key} and as {again}")
                    };
                    p.push(path.clone(), None, message, ProblemKind::Duplicate);
                }
                node = child;
            }
            None => {
                let siblings: Vec<&str> = match node {
                    Node::Table(e) => e.iter().map(|(k, _)| k.as_str()).collect(),
                    _ => Vec::new(),
                };
                match nearest(level, &siblings) {
                    Some(near) => p.push(
                        join(&path, near),
                        None,
                        format!("unknown section; did you mean {level}?"),
                        ProblemKind::UnknownKey {
                            suggestion: Some(level.clone()),
                        },
                    ),
                    None => p.push(
                        join(&path, level),
                        None,
                        format!(
                            "section not found: no limiter is configured; add one as {}.Limiters.<name>",
                            join(&path, level)
                        ),
                        ProblemKind::Missing,
                    ),
                }
                return None;
            }
        }
    }
    if !matches!(node, Node::Table(_)) {
        p.push(
            path,
            Some(node.shown()),
            "expected a table with Limiters",
            ProblemKind::WrongType,
        );
        return None;
    }
    let mut t = TableReader::new(path.clone(), node, Style::Pascal);
    let before = p.count();

    let mut limiters: Vec<(String, LimiterSettings)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    // Each name's normal form → its index in `seen`: one lookup per name, not a scan.
    let mut normal: HashMap<String, usize> = HashMap::new();
    let limiters_path = t.path_of("Limiters");
    if let Some(f) = t.get(p, "Limiters")
        && let Some(table) = f.table(p)
    {
        // The keys of `Limiters` are names: they say nothing of the file's style.
        let mut table = table.with_style(t.style());
        for (name, at) in table.entries() {
            if name.trim().is_empty() {
                p.push(
                    at.path,
                    None,
                    "a limiter needs a name",
                    ProblemKind::Missing,
                );
                continue;
            }
            if let Some(&i) = normal.get(&normalize(name)) {
                let first = &seen[i];
                let message = if first == name {
                    "appears twice: a limiter of this name is already configured".to_owned()
                } else {
                    format!(
                        "the same limiter as {first}: names match without regard to case, _ or -"
                    )
                };
                p.push(at.path, None, message, ProblemKind::Duplicate);
                continue;
            }
            normal.insert(normalize(name), seen.len());
            seen.push(name.to_owned());
            if let Some(s) = limiter::read(p, &at) {
                limiters.push((name.to_owned(), s));
            }
        }
    }
    if seen.is_empty() && p.count() == before {
        p.push(
            limiters_path.clone(),
            None,
            format!("no limiter is configured; add one as {limiters_path}.<name>"),
            ProblemKind::Missing,
        );
    }
    let mut default = None;
    if let Some(f) = t.get(p, "DefaultLimiter") {
        match f.node() {
            Node::Str(name) => {
                let found = seen
                    .iter()
                    .find(|s| *s == name)
                    .or_else(|| seen.iter().find(|s| normalize(s) == normalize(name)));
                match found {
                    Some(s) => default = Some(s.clone()),
                    None if seen.is_empty() => {}
                    None => {
                        let names: Vec<&str> = seen.iter().map(String::as_str).collect();
                        let message = match nearest(name, &names) {
                            Some(near) => {
                                format!("names no limiter; did you mean {near:?}?")
                            }
                            None => {
                                format!("names no limiter; the limiters are {}", names.join(", "))
                            }
                        };
                        p.push(
                            f.path.clone(),
                            Some(f.shown()),
                            message,
                            ProblemKind::Missing,
                        );
                    }
                }
            }
            _ => p.push(
                f.path.clone(),
                Some(f.shown()),
                "expected the name of a limiter",
                ProblemKind::WrongType,
            ),
        }
    }
    t.finish(p, SECTION_KEYS);
    if p.count() != 0 {
        return None;
    }
    let default_limiter = default.unwrap_or_else(|| limiters[0].0.clone());
    Some(PacerSettings {
        limiters,
        default_limiter,
    })
}
