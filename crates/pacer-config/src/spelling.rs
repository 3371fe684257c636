//! How keys are spelt: the style of a table (`MaxWait`, `max_wait`, `max-wait`), full paths, and
//! the nearest known key to a misspelt one.

use crate::tree::{Node, normalize};

/// How a table spells its keys, so that a suggestion or the path of an option that was not given
/// reads like the rest of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `MaxUnitsPerMinute`, as in the .NET adaptive limiter's `appsettings.json`.
    Pascal,
    /// `max_units_per_minute`, as in a Rust-style TOML file (and lowercase environment keys).
    Snake,
    /// `max-units-per-minute`.
    Kebab,
}

impl Style {
    /// The style of a table's keys, if they tell.
    pub(crate) fn of(entries: &[(String, Node)]) -> Option<Style> {
        let keys = || entries.iter().map(|(k, _)| k.as_str());
        if keys().any(|k| k.chars().any(char::is_uppercase)) {
            Some(Style::Pascal)
        } else if keys().any(|k| k.contains('_')) {
            Some(Style::Snake)
        } else if keys().any(|k| k.contains('-')) {
            Some(Style::Kebab)
        } else if entries.is_empty() {
            None
        } else {
            Some(Style::Snake)
        }
    }

    /// A PascalCase key in this style.
    pub(crate) fn render(self, pascal: &str) -> String {
        let sep = match self {
            Style::Pascal => return pascal.to_owned(),
            Style::Snake => '_',
            Style::Kebab => '-',
        };
        let mut out = String::with_capacity(pascal.len() + 4);
        for (i, c) in pascal.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push(sep);
            }
            out.extend(c.to_lowercase());
        }
        out
    }
}

/// `parent.key`, or `key` at the root.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The nearest of `known` to `key` by edit distance over the normalised forms, if it is near
/// enough to be a likely typo (at most a third of the letters, and at least 2, differ) or one is
/// the start of the other (`Default` for `DefaultLimiter`).
pub(crate) fn nearest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = normalize(key);
    known
        .iter()
        .filter_map(|k| {
            let k_norm = normalize(k);
            let d = strsim::damerau_levenshtein(&key, &k_norm);
            let typo = d <= (k_norm.chars().count() / 3).max(2);
            let (short, long) = if key.len() < k_norm.len() {
                (&key, &k_norm)
            } else {
                (&k_norm, &key)
            };
            let truncated = short.chars().count() >= 4 && long.starts_with(short.as_str());
            (typo || truncated).then_some((d, *k))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_render_and_are_detected() {
        assert_eq!(
            Style::Snake.render("InitialUnitsPerMinute"),
            "initial_units_per_minute"
        );
        assert_eq!(Style::Kebab.render("MaxWait"), "max-wait");
        assert_eq!(Style::Pascal.render("MaxWait"), "MaxWait");
        let of = |keys: &[&str]| {
            let e: Vec<_> = keys.iter().map(|k| ((*k).to_owned(), Node::Nil)).collect();
            Style::of(&e)
        };
        assert_eq!(of(&["MaxWait", "burst"]), Some(Style::Pascal));
        assert_eq!(of(&["max_wait"]), Some(Style::Snake));
        assert_eq!(of(&["max-wait"]), Some(Style::Kebab));
        assert_eq!(of(&["burst"]), Some(Style::Snake));
        assert_eq!(of(&[]), None);
    }

    #[test]
    fn suggestions_are_near_misses_only() {
        let known = ["MaxUnitsPerMinute", "MinUnitsPerMinute", "MaxWait", "Burst"];
        assert_eq!(
            nearest("MaxUnitPerMinute", &known),
            Some("MaxUnitsPerMinute")
        );
        assert_eq!(
            nearest("max_units_per_minuet", &known),
            Some("MaxUnitsPerMinute")
        );
        assert_eq!(nearest("Brust", &known), Some("Burst"));
        assert_eq!(nearest("Colour", &known), None);
        assert_eq!(
            nearest("Default", &["Limiters", "DefaultLimiter"]),
            Some("DefaultLimiter")
        );
    }
}
