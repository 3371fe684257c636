//! Errors for options that are out of range, naming the option, the value and the rule.
//!
//! Options are checked once, by the constructor that takes them, and every problem is reported at
//! once rather than only the first. Option names are those of the .NET adaptive limiter's configuration
//! (`MinUnitsPerMinute`, `Aimd.DecreaseFactor`), so a message points at the key to fix; the
//! configuration loader prefixes the full path of the section.

use std::fmt;
use std::time::Duration;

/// One option with a value outside its allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} = {value}: {rule}")]
#[non_exhaustive]
pub struct InvalidOption {
    /// The option's name, e.g. `MinUnitsPerMinute` or `Aimd.DecreaseFactor`.
    pub option: String,
    /// The value that was given, as text.
    pub value: String,
    /// The rule it breaks, e.g. `must be greater than 0`.
    pub rule: String,
}

impl InvalidOption {
    /// An invalid option.
    pub fn new(
        option: impl Into<String>,
        value: impl fmt::Display,
        rule: impl Into<String>,
    ) -> Self {
        InvalidOption {
            option: option.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }

    /// The same error with `prefix.` in front of the option name.
    #[must_use]
    pub fn prefixed(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() {
            self.option = format!("{prefix}.{}", self.option);
        }
        self
    }
}

/// Every invalid option of a set of options. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidOptions {
    errors: Vec<InvalidOption>,
}

impl InvalidOptions {
    /// The individual errors, in the order the options were checked.
    #[must_use]
    pub fn errors(&self) -> &[InvalidOption] {
        &self.errors
    }

    /// Consumes the error, returning the individual errors.
    #[must_use]
    pub fn into_errors(self) -> Vec<InvalidOption> {
        self.errors
    }

    /// The same errors with `prefix.` in front of every option name.
    #[must_use]
    pub fn prefixed(self, prefix: &str) -> Self {
        InvalidOptions {
            errors: self
                .errors
                .into_iter()
                .map(|e| e.prefixed(prefix))
                .collect(),
        }
    }
}

impl From<InvalidOption> for InvalidOptions {
    fn from(e: InvalidOption) -> Self {
        InvalidOptions { errors: vec![e] }
    }
}

impl fmt::Display for InvalidOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Collects every invalid option of a set; crate-internal helper for `validate` methods.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    errors: Vec<InvalidOption>,
}

impl Checker {
    pub(crate) fn new() -> Self {
        Checker::default()
    }

    pub(crate) fn push(&mut self, option: &str, value: impl fmt::Display, rule: impl Into<String>) {
        self.errors.push(InvalidOption::new(option, value, rule));
    }

    /// `value` must be finite and greater than 0.
    pub(crate) fn positive(&mut self, option: &str, value: f64) {
        if !value.is_finite() {
            self.push(option, value, "must be a finite number");
        } else if value <= 0.0 {
            self.push(option, value, "must be greater than 0");
        }
    }

    /// `value` must lie strictly between 0 and 1.
    pub(crate) fn fraction(&mut self, option: &str, value: f64) {
        if !(value > 0.0 && value < 1.0) {
            self.push(option, value, "must be greater than 0 and less than 1");
        }
    }

    /// `value` must be at least `min` (an integer option).
    pub(crate) fn at_least(&mut self, option: &str, value: u64, min: u64) {
        if value < min {
            self.push(option, value, format!("must be at least {min}"));
        }
    }

    /// `value` must not be zero.
    pub(crate) fn nonzero_duration(&mut self, option: &str, value: Duration) {
        if value.is_zero() {
            self.push(option, format_duration(value), "must be greater than 0");
        }
    }

    /// A rule that relates two options; `ok` says whether it holds.
    pub(crate) fn relation(
        &mut self,
        ok: bool,
        option: &str,
        value: impl fmt::Display,
        rule: String,
    ) {
        if !ok {
            self.push(option, value, rule);
        }
    }

    /// Adds the errors of a nested set of options.
    pub(crate) fn nested(&mut self, result: Result<(), InvalidOptions>) {
        if let Err(e) = result {
            self.errors.extend(e.into_errors());
        }
    }

    pub(crate) fn finish(self) -> Result<(), InvalidOptions> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(InvalidOptions {
                errors: self.errors,
            })
        }
    }
}

/// A duration as the configuration would write it: `5s`, `250ms`, `1.5s`.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:?}", d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_reported_with_its_option_value_and_rule() {
        let mut c = Checker::new();
        c.positive("IncreaseStep", 0.0);
        c.fraction("DecreaseFactor", 1.5);
        c.positive("X", f64::NAN);
        c.at_least("InstanceCount", 0, 1);
        c.nonzero_duration("Burst", Duration::ZERO);
        let e = c.finish().unwrap_err().prefixed("Aimd");
        assert_eq!(e.errors().len(), 5);
        assert_eq!(
            e.to_string(),
            "Aimd.IncreaseStep = 0: must be greater than 0; \
             Aimd.DecreaseFactor = 1.5: must be greater than 0 and less than 1; \
             Aimd.X = NaN: must be a finite number; \
             Aimd.InstanceCount = 0: must be at least 1; \
             Aimd.Burst = 0s: must be greater than 0"
        );
        let e = e.prefixed("AdaptiveRateLimiting.Limiters.orders-api");
        assert_eq!(
            e.errors()[0].option,
            "AdaptiveRateLimiting.Limiters.orders-api.Aimd.IncreaseStep"
        );
    }

    #[test]
    fn durations_print_as_configured() {
        assert_eq!(format_duration(Duration::from_secs(5)), "5s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_micros(3)), "3µs");
    }
}
