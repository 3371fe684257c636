//! A limiter's declared dialects (`Dialects`: a list), read into the core's
//! [`DeclaredDialect`]s: the rules are the core's ([`DeclaredDialectBuilder::build`]), reported
//! at the key the user wrote, with the value as written.

use crate::error::ProblemKind;
use crate::reader::{At, Collector};
use pacer_core::{DeclaredDialect, DeclaredDialectBuilder, FieldGrammar, QuotaUnit, TimeUnit};
use std::collections::HashMap;

/// Every key of a dialect, in the docs' order.
pub(crate) const DIALECT_KEYS: &[&str] = &[
    "Name",
    "Unit",
    "Limit",
    "Remaining",
    "Used",
    "Reset",
    "ResetUnit",
    "RetryAfter",
    "RetryAfterUnit",
    "Window",
    "WindowHeader",
    "WindowUnit",
    "Field",
    "Grammar",
    "Separator",
    "LimitKey",
    "RemainingKey",
    "ResetKey",
    "UsedKey",
];

/// The header-name and key settings, each with the builder's setter.
type Setter = fn(DeclaredDialectBuilder, String) -> DeclaredDialectBuilder;
const TEXT_KEYS: [(&str, Setter); 11] = [
    ("Limit", |b, v| b.limit(v)),
    ("Remaining", |b, v| b.remaining(v)),
    ("Used", |b, v| b.used(v)),
    ("Reset", |b, v| b.reset(v)),
    ("RetryAfter", |b, v| b.retry_after(v)),
    ("WindowHeader", |b, v| b.window_header(v)),
    ("Field", |b, v| b.field(v)),
    ("LimitKey", |b, v| b.limit_key(v)),
    ("RemainingKey", |b, v| b.remaining_key(v)),
    ("ResetKey", |b, v| b.reset_key(v)),
    ("UsedKey", |b, v| b.used_key(v)),
];

/// The time-unit settings, each with the builder's setter.
type UnitSetter = fn(DeclaredDialectBuilder, TimeUnit) -> DeclaredDialectBuilder;
const UNIT_KEYS: [(&str, UnitSetter); 3] = [
    ("ResetUnit", |b, u| b.reset_unit(u)),
    ("RetryAfterUnit", |b, u| b.retry_after_unit(u)),
    ("WindowUnit", |b, u| b.window_unit(u)),
];

/// Reads `Dialects`: a list of tables (or, from environment variables, a table indexed 0, 1, …).
pub(crate) fn read(p: &mut Collector, at: &At<'_>) -> Vec<DeclaredDialect> {
    let Some(items) = at.list(p) else {
        return Vec::new();
    };
    let mut dialects: Vec<DeclaredDialect> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(d) = read_one(p, item, i) else {
            continue;
        };
        if dialects.iter().any(|o| o.name() == d.name()) {
            p.push(
                format!("{}.Name", item.path),
                Some(format!("{:?}", d.name())),
                "a dialect of this name is already declared for the limiter",
                ProblemKind::Duplicate,
            );
            continue;
        }
        dialects.push(d);
    }
    dialects
}

fn read_one(p: &mut Collector, at: &At<'_>, index: usize) -> Option<DeclaredDialect> {
    let before = p.count();
    let mut t = at.table(p)?;
    // The core's option name → where the user wrote it, and the value as written.
    let mut given: HashMap<&'static str, (String, String)> = HashMap::new();
    let mut note = |key: &'static str, f: &At<'_>| {
        given.insert(key, (f.path.clone(), f.shown()));
    };
    let name = match t.get(p, "Name") {
        Some(f) => {
            note("Name", &f);
            f.text(p).unwrap_or_default()
        }
        None => format!("dialect-{index}"),
    };
    let mut b = DeclaredDialect::builder(name);
    if let Some(f) = t.get(p, "Unit")
        && let Some(unit) = f.text(p)
    {
        note("Unit", &f);
        b = b.unit(QuotaUnit::from_name(unit.trim()));
    }
    for (key, set) in TEXT_KEYS {
        if let Some(f) = t.get(p, key)
            && let Some(v) = f.text(p)
        {
            note(key, &f);
            b = set(b, v);
        }
    }
    let mut names: Vec<&str> = TimeUnit::ALL.iter().map(|u| u.as_str()).collect();
    names.push("Iso8601");
    for (key, set) in UNIT_KEYS {
        if let Some(f) = t.get(p, key)
            && let Some(i) = f.choice(p, "time unit", &names)
        {
            note(key, &f);
            b = set(
                b,
                TimeUnit::ALL.get(i).copied().unwrap_or(TimeUnit::Rfc3339),
            );
        }
    }
    if let Some(f) = t.get(p, "Window")
        && let Some(w) = f.duration(p)
    {
        note("Window", &f);
        b = b.window(w);
    }
    if let Some(f) = t.get(p, "Grammar") {
        let names = FieldGrammar::ALL.map(FieldGrammar::as_str);
        if let Some(i) = f.choice(p, "field grammar", &names) {
            note("Grammar", &f);
            b = b.grammar(FieldGrammar::ALL[i]);
        }
    }
    if let Some(f) = t.get(p, "Separator")
        && let Some(s) = f.text(p)
    {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => {
                note("Separator", &f);
                b = b.separator(c);
            }
            _ => p.push(
                f.path.clone(),
                Some(f.shown()),
                "must be one character",
                ProblemKind::WrongType,
            ),
        }
    }
    t.finish(p, DIALECT_KEYS);
    if p.count() != before {
        return None;
    }
    match b.build() {
        Ok(d) => Some(d),
        Err(e) => {
            for error in e.into_errors() {
                match given.get(error.option.as_str()) {
                    Some((path, shown)) => p.push(
                        path.clone(),
                        Some(shown.clone()),
                        error.rule,
                        ProblemKind::OutOfRange,
                    ),
                    // A rule about what was not given (a dialect that reads nothing).
                    None => p.push(at.path.clone(), None, error.rule, ProblemKind::Missing),
                }
            }
            None
        }
    }
}
