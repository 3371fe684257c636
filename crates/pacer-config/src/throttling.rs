//! Reading `Throttling`: the proactive algorithm and its parameters.
//!
//! Two shapes: a name alone (`"Throttling": "Pacing"`, the algorithm with its defaults), or a
//! table with `Algorithm` (default `Percentage`) and that algorithm's parameters beside it.
//! `Composite` lists its algorithms under `Algorithms`, each in either shape. The algorithms'
//! own constructors check the parameters; their errors get the full path and the value as
//! written.

use crate::error::ProblemKind;
use crate::reader::{At, Collector, TableReader};
use crate::settings::ThrottlingSettings;
use crate::spelling::{Style, join};
use crate::tree::Node;
use pacer_core::{
    AdaptiveDelay, Composite, FixedThreshold, Global, Pacing, Percentage, ThrottlingConfigError,
};
use std::time::Duration;

/// Every parameter of any algorithm, by its configuration key.
const ALL_PARAMETERS: &[&str] = &[
    "Threshold",
    "Factor",
    "MaxDelay",
    "MinRemaining",
    "Delay",
    "MinDelay",
    "Reserve",
    "MinSpacing",
    "Algorithms",
];

/// Composites inside composites deeper than this are refused (a guard for generated trees).
const MAX_DEPTH: usize = 8;

/// The parameters an algorithm takes, by its name in [`ThrottlingSettings::NAMES`].
fn parameters(algorithm: &str) -> &'static [&'static str] {
    match algorithm {
        "Percentage" => &["Threshold", "Factor", "MaxDelay"],
        "FixedThreshold" => &["MinRemaining", "Delay"],
        "AdaptiveDelay" => &["Threshold", "MinDelay", "MaxDelay"],
        "Pacing" => &["Reserve", "MinSpacing"],
        "Global" => &["Threshold", "MaxDelay"],
        "Composite" => &["Algorithms"],
        _ => &[],
    }
}

/// The configuration key of a constructor's parameter name (`max_delay` → `MaxDelay`).
fn key_of(parameter: &str) -> String {
    parameter
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The parameters given, each with where it was written.
#[derive(Debug, Default)]
struct Params {
    threshold: Option<f64>,
    factor: Option<f64>,
    max_delay: Option<Duration>,
    min_delay: Option<Duration>,
    delay: Option<Duration>,
    min_remaining: Option<u64>,
    reserve: Option<u64>,
    min_spacing: Option<Duration>,
    /// Key (PascalCase) → (path, value as written).
    written: Vec<(&'static str, String, String)>,
}

impl Params {
    /// Forgets a parameter, so the next build uses its default; false if it was not given.
    fn forget(&mut self, key: &str) -> bool {
        match key {
            "Threshold" => self.threshold.take().is_some(),
            "Factor" => self.factor.take().is_some(),
            "MaxDelay" => self.max_delay.take().is_some(),
            "MinDelay" => self.min_delay.take().is_some(),
            "Delay" => self.delay.take().is_some(),
            _ => false,
        }
    }

    fn build(&self, algorithm: &str) -> Result<ThrottlingSettings, ThrottlingConfigError> {
        Ok(match algorithm {
            "Percentage" => {
                let mut b = Percentage::builder();
                if let Some(v) = self.threshold {
                    b = b.threshold(v);
                }
                if let Some(v) = self.factor {
                    b = b.factor(v);
                }
                if let Some(v) = self.max_delay {
                    b = b.max_delay(v);
                }
                ThrottlingSettings::Percentage(b.build()?)
            }
            "FixedThreshold" => ThrottlingSettings::FixedThreshold(FixedThreshold::new(
                self.min_remaining
                    .unwrap_or(FixedThreshold::DEFAULT_MIN_REMAINING),
                self.delay.unwrap_or(FixedThreshold::DEFAULT_DELAY),
            )?),
            "AdaptiveDelay" => {
                let mut b = AdaptiveDelay::builder();
                if let Some(v) = self.threshold {
                    b = b.threshold(v);
                }
                if let Some(v) = self.min_delay {
                    b = b.min_delay(v);
                }
                if let Some(v) = self.max_delay {
                    b = b.max_delay(v);
                }
                ThrottlingSettings::AdaptiveDelay(b.build()?)
            }
            "Pacing" => ThrottlingSettings::Pacing(
                Pacing::new(self.reserve.unwrap_or(Pacing::DEFAULT_RESERVE))
                    .with_min_spacing(self.min_spacing.unwrap_or(Pacing::DEFAULT_MIN_SPACING)),
            ),
            "Global" => {
                let mut b = Global::builder();
                if let Some(v) = self.threshold {
                    b = b.threshold(v);
                }
                if let Some(v) = self.max_delay {
                    b = b.max_delay(v);
                }
                ThrottlingSettings::Global(b.build()?)
            }
            _ => ThrottlingSettings::None,
        })
    }
}

/// Reports a constructor's error at `path` (the key of the parameter), with the value as written.
pub(crate) fn report(p: &mut Collector, path: &str, shown: &str, e: &ThrottlingConfigError) {
    let message = match e {
        ThrottlingConfigError::Invalid { expected, .. } => format!("expected {expected}"),
        other => other.to_string(),
    };
    p.push(
        path,
        Some(shown.to_owned()),
        message,
        ProblemKind::OutOfRange,
    );
}

/// Reads `Throttling` at `at`; `None` (with problems recorded) if anything is wrong.
pub(crate) fn read(p: &mut Collector, at: &At<'_>) -> Option<ThrottlingSettings> {
    read_at_depth(p, at, 0)
}

fn read_at_depth(p: &mut Collector, at: &At<'_>, depth: usize) -> Option<ThrottlingSettings> {
    if depth > MAX_DEPTH {
        p.push(
            at.path.clone(),
            None,
            format!("composites are nested more than {MAX_DEPTH} deep"),
            ProblemKind::OutOfRange,
        );
        return None;
    }
    let names = ThrottlingSettings::NAMES;
    // A name alone: the algorithm with its defaults.
    if let Node::Str(_) = at.node() {
        let i = at.choice(p, "throttling algorithm", &names)?;
        if names[i] == "Composite" {
            p.push(
                at.path.clone(),
                Some(at.shown()),
                "a Composite needs its Algorithms: write a table with Algorithm and Algorithms",
                ProblemKind::Missing,
            );
            return None;
        }
        return Params::default().build(names[i]).ok();
    }
    let Node::Table(_) = at.node() else {
        p.push(
            at.path.clone(),
            Some(at.shown()),
            format!(
                "expected an algorithm's name or a table with Algorithm and its parameters; algorithms: {}",
                names.join(", ")
            ),
            ProblemKind::WrongType,
        );
        return None;
    };
    let before = p.count();
    let mut t = TableReader::new(at.path.clone(), at.node(), at.style());
    let algorithm = match t.get(p, "Algorithm") {
        Some(f) => names[f.choice(p, "throttling algorithm", &names)?],
        None => "Percentage",
    };
    let allowed = parameters(algorithm);
    let mut params = Params::default();
    let mut composite = None;
    for key in allowed {
        let Some(f) = t.get(p, key) else { continue };
        let mut written = true;
        match *key {
            "Threshold" => params.threshold = f.f64(p),
            "Factor" => params.factor = f.f64(p),
            "MaxDelay" => params.max_delay = f.duration(p),
            "MinDelay" => params.min_delay = f.duration(p),
            "Delay" => params.delay = f.duration(p),
            "MinRemaining" => params.min_remaining = f.uint(p, u64::MAX),
            "Reserve" => params.reserve = f.uint(p, u64::MAX),
            "MinSpacing" => params.min_spacing = f.duration(p),
            "Algorithms" => {
                written = false;
                composite = Some(read_composite(p, &f, depth)?);
            }
            _ => written = false,
        }
        if written {
            params.written.push((key, f.path.clone(), f.shown()));
        }
    }
    let style = t.style();
    t.finish_with(p, &["Algorithm"], |key| {
        let known = ALL_PARAMETERS
            .iter()
            .find(|k| crate::tree::same_key(k, key))?;
        let list: Vec<String> = allowed.iter().map(|k| style.render(k)).collect();
        Some(if list.is_empty() {
            format!("{algorithm} takes no parameters, so {known} does not apply")
        } else {
            format!(
                "not a parameter of {algorithm}; its parameters are {}",
                list.join(", ")
            )
        })
    });
    if algorithm == "Composite" {
        return match composite {
            Some(c) => (p.count() == before).then_some(c),
            None => {
                p.push(
                    at.path.clone(),
                    None,
                    format!(
                        "a Composite needs {}: a list of algorithms",
                        style.render("Algorithms")
                    ),
                    ProblemKind::Missing,
                );
                None
            }
        };
    }
    if p.count() != before {
        return None;
    }
    build_collecting(p, &mut params, algorithm, &at.path, style)
}

/// Builds the algorithm; on an error, reports it at the parameter's key, forgets that parameter
/// and tries again, so every bad parameter is reported, not only the first.
fn build_collecting(
    p: &mut Collector,
    params: &mut Params,
    algorithm: &str,
    table: &str,
    style: Style,
) -> Option<ThrottlingSettings> {
    let mut failed = false;
    for _ in 0..ALL_PARAMETERS.len() {
        match params.build(algorithm) {
            Ok(built) => return (!failed).then_some(built),
            Err(e) => {
                failed = true;
                let key = match &e {
                    ThrottlingConfigError::Invalid { parameter, .. } => key_of(parameter),
                    _ => String::new(),
                };
                let (path, shown) = match params.written.iter().find(|(k, _, _)| *k == key) {
                    Some((_, path, shown)) => (path.clone(), shown.clone()),
                    None => {
                        let value = match &e {
                            ThrottlingConfigError::Invalid { value, .. } => value.clone(),
                            _ => String::new(),
                        };
                        (
                            join(table, &style.render(&key)),
                            format!("{value} (the default)"),
                        )
                    }
                };
                report(p, &path, &shown, &e);
                if !params.forget(&key) {
                    return None;
                }
            }
        }
    }
    None
}

/// `Algorithms` of a composite: each item a name or a table; at least one.
fn read_composite(p: &mut Collector, at: &At<'_>, depth: usize) -> Option<ThrottlingSettings> {
    let items = at.list(p)?;
    let before = p.count();
    let mut parts = Vec::new();
    for item in &items {
        match read_at_depth(p, item, depth + 1) {
            Some(ThrottlingSettings::None) => p.push(
                item.path.clone(),
                Some(item.shown()),
                "None cannot be part of a Composite",
                ProblemKind::OutOfRange,
            ),
            Some(part) => parts.push(part),
            None => {}
        }
    }
    if p.count() != before {
        return None;
    }
    // The constructor's rule: at least one algorithm.
    let boxed: Vec<_> = parts
        .iter()
        .filter_map(ThrottlingSettings::algorithm)
        .collect();
    if let Err(e) = Composite::new(boxed) {
        p.push(
            at.path.clone(),
            Some(at.shown()),
            format!("{e}: list at least one"),
            ProblemKind::Missing,
        );
        return None;
    }
    Some(ThrottlingSettings::Composite(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructor_parameters_map_to_keys() {
        assert_eq!(key_of("max_delay"), "MaxDelay");
        assert_eq!(key_of("threshold"), "Threshold");
        assert_eq!(key_of("max_exhausted_delay"), "MaxExhaustedDelay");
    }

    #[test]
    fn every_algorithm_has_its_parameters() {
        for name in ThrottlingSettings::NAMES {
            for key in parameters(name) {
                assert!(ALL_PARAMETERS.contains(key), "{name}.{key}");
            }
        }
    }
}
