//! [`ThrottlingConfigError`]: a throttling parameter out of range.

use std::time::Duration;

/// A throttling algorithm (or the server-ordered stop) was given a parameter it cannot work
/// with. The message names the parameter and the bad value.
///
/// ```
/// use pacer_core::{Percentage, ThrottlingConfigError};
///
/// let err = Percentage::builder().threshold(1.5).build().unwrap_err();
/// assert!(matches!(err, ThrottlingConfigError::Invalid { parameter: "threshold", .. }));
/// assert_eq!(err.to_string(), "invalid threshold = 1.5: expected a fraction in (0, 1]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThrottlingConfigError {
    /// A parameter is out of range.
    #[error("invalid {parameter} = {value}: expected {expected}")]
    Invalid {
        /// The parameter's name, as the builder method spells it.
        parameter: &'static str,
        /// The value given, formatted.
        value: String,
        /// What the parameter accepts.
        expected: &'static str,
    },
    /// A composite algorithm was built without any algorithm.
    #[error("a composite algorithm needs at least one algorithm")]
    EmptyComposite,
}

/// `v` must be a fraction in `(0, 1]`.
pub(crate) fn fraction(parameter: &'static str, v: f64) -> Result<f64, ThrottlingConfigError> {
    if v.is_finite() && v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(ThrottlingConfigError::Invalid {
            parameter,
            value: v.to_string(),
            expected: "a fraction in (0, 1]",
        })
    }
}

/// `v` must be finite and positive.
pub(crate) fn positive(parameter: &'static str, v: f64) -> Result<f64, ThrottlingConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ThrottlingConfigError::Invalid {
            parameter,
            value: v.to_string(),
            expected: "a finite number above 0",
        })
    }
}

/// `d` must not be zero.
pub(crate) fn non_zero(
    parameter: &'static str,
    d: Duration,
) -> Result<Duration, ThrottlingConfigError> {
    if d.is_zero() {
        Err(ThrottlingConfigError::Invalid {
            parameter,
            value: format!("{d:?}"),
            expected: "a duration above zero",
        })
    } else {
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_parameter_and_value() {
        assert_eq!(fraction("threshold", 1.0), Ok(1.0));
        for bad in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            let e = fraction("threshold", bad).unwrap_err();
            assert!(e.to_string().starts_with("invalid threshold = "), "{e}");
        }
        assert!(positive("factor", 0.0).is_err());
        assert!(positive("factor", f64::INFINITY).is_err());
        assert_eq!(positive("factor", 2.5), Ok(2.5));
        assert_eq!(
            non_zero("delay", Duration::ZERO).unwrap_err().to_string(),
            "invalid delay = 0ns: expected a duration above zero"
        );
    }
}
