//! [`ConfigError`]: why a configuration could not be loaded, with every problem at once.

use std::fmt;

/// A configuration could not be turned into limiters.
///
/// Either a source could not be read or parsed ([`ConfigError::Source`]: a missing file, a JSON
/// syntax error), or the settings it holds are invalid ([`ConfigError::Invalid`]), in which case
/// **every** problem is listed, not only the first. The error displays one problem per line,
/// each with the full path of the key, the value as written and what is wrong:
///
/// ```text
/// AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute = 0: must be greater than 0
/// AdaptiveRateLimiting.Limiters.orders-api.MaxUnitPerMinute: unknown key; did you mean MaxUnitsPerMinute?
/// ```
///
/// ```
/// use pacer_config::{ConfigError, ConfigLoader, Format};
///
/// let json = r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": {
///     "MinUnitsPerMinute": 0, "MaxUnitPerMinute": 1200 } } } }"#;
/// let err = ConfigLoader::new().string(json, Format::Json).load().unwrap_err();
/// assert_eq!(err.problems().len(), 2);
/// assert_eq!(
///     err.to_string(),
///     "AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute = 0: must be greater than 0\n\
///      AdaptiveRateLimiting.Limiters.orders-api.MaxUnitPerMinute: unknown key; did you mean MaxUnitsPerMinute?"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A source could not be read or parsed: the file is missing, unreadable, of an unknown
    /// format, or not valid JSON/TOML.
    #[error("{message}")]
    Source {
        /// What went wrong, naming the file.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The sources were read, and the settings in them are invalid.
    #[error("{0}")]
    Invalid(Problems),
}

impl ConfigError {
    /// The problems of invalid settings; empty for [`ConfigError::Source`].
    #[must_use]
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Invalid(p) => p.as_slice(),
            ConfigError::Source { .. } => &[],
        }
    }

    pub(crate) fn source_error(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ConfigError::Source {
            message: message.into(),
            source: Some(source.into()),
        }
    }
}

/// Every problem of an invalid configuration, in the order they were found (the file's order).
/// Never empty. Displays one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(Vec<Problem>);

impl Problems {
    pub(crate) fn new(problems: Vec<Problem>) -> Option<Self> {
        (!problems.is_empty()).then_some(Problems(problems))
    }

    /// The problems.
    #[must_use]
    pub fn as_slice(&self) -> &[Problem] {
        &self.0
    }

    /// Consumes the list, returning the problems.
    #[must_use]
    pub fn into_vec(self) -> Vec<Problem> {
        self.0
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// One thing wrong in a configuration: where (the full path of the key, in the user's spelling),
/// the value as written (when there is one), and what is wrong with it.
///
/// Displays as `path = value: message`, or `path: message` when there is no value (an unknown
/// key, a missing section).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// The full path of the key, dot-separated, list items as `[i]`:
    /// `AdaptiveRateLimiting.Limiters.orders-api.Classifier.Throttled[1]`.
    pub path: String,
    /// The value as written (strings quoted), or as it was in force when the option was not
    /// given (followed by `(the default)`).
    pub value: Option<String>,
    /// What is wrong, and what would be right: `must be greater than 0`.
    pub message: String,
    /// The kind of problem.
    pub kind: ProblemKind,
}

/// The kinds of [`Problem`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A key Pacer does not know; `suggestion` is the nearest known key, if one is near.
    UnknownKey {
        /// The nearest known key, in the spelling the file uses.
        suggestion: Option<String>,
    },
    /// A value of the wrong type, or text that does not parse (a duration, a name).
    WrongType,
    /// A value outside its allowed range, or breaking a rule between options (min > max).
    OutOfRange,
    /// Something required is missing: no limiter, a limiter that is not there.
    Missing,
    /// The same key given twice in one table, in two spellings (`MaxWait` and `max_wait`).
    Duplicate,
    /// A key Pacer knows but does not support yet (`Windows`).
    NotSupported,
    /// A key read and checked that has no effect (a controller's table beside another
    /// `Controller`): a warning ([`LimiterSettings::warnings`](crate::LimiterSettings::warnings)),
    /// not an error.
    Ignored,
}

impl Problem {
    pub(crate) fn new(
        path: impl Into<String>,
        value: Option<String>,
        message: impl Into<String>,
        kind: ProblemKind,
    ) -> Self {
        Problem {
            path: path.into(),
            value,
            message: message.into(),
            kind,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{} = {value}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_display_one_per_line() {
        let e = ConfigError::Invalid(
            Problems::new(vec![
                Problem::new(
                    "A.B",
                    Some("0".into()),
                    "must be greater than 0",
                    ProblemKind::OutOfRange,
                ),
                Problem::new(
                    "A.C",
                    None,
                    "unknown key",
                    ProblemKind::UnknownKey { suggestion: None },
                ),
            ])
            .unwrap(),
        );
        assert_eq!(
            e.to_string(),
            "A.B = 0: must be greater than 0\nA.C: unknown key"
        );
        assert_eq!(e.problems().len(), 2);
        assert!(Problems::new(Vec::new()).is_none());
    }
}
