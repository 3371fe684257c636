//! [`ThrottlingResult`]: what a throttling algorithm decided.

use std::borrow::Cow;
use std::time::Duration;

/// The decision of a [`crate::ThrottlingAlgorithm`]: send now, or wait `delay` first, for a
/// `reason` fit for a log line.
///
/// A throttle of zero delay is no throttle: [`ThrottlingResult::throttle`] normalises it.
///
/// ```
/// use pacer_core::ThrottlingResult;
/// use std::time::Duration;
///
/// let wait = ThrottlingResult::throttle(Duration::from_millis(600), "quota at 8%");
/// assert!(wait.should_throttle());
/// assert_eq!(wait.delay(), Duration::from_millis(600));
/// assert_eq!(wait.reason(), Some("quota at 8%"));
///
/// assert!(!ThrottlingResult::throttle(Duration::ZERO, "nothing").should_throttle());
/// assert_eq!(ThrottlingResult::NO_THROTTLE.delay(), Duration::ZERO);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThrottlingResult {
    delay: Duration,
    reason: Option<Cow<'static, str>>,
}

impl ThrottlingResult {
    /// Send now.
    pub const NO_THROTTLE: ThrottlingResult = ThrottlingResult {
        delay: Duration::ZERO,
        reason: None,
    };

    /// Wait `delay` before sending, because of `reason`. A zero `delay` gives
    /// [`NO_THROTTLE`](Self::NO_THROTTLE).
    #[must_use]
    pub fn throttle(delay: Duration, reason: impl Into<Cow<'static, str>>) -> ThrottlingResult {
        if delay.is_zero() {
            return ThrottlingResult::NO_THROTTLE;
        }
        ThrottlingResult {
            delay,
            reason: Some(reason.into()),
        }
    }

    /// `true` when the request should wait.
    #[must_use]
    pub fn should_throttle(&self) -> bool {
        !self.delay.is_zero()
    }

    /// How long to wait; zero for no throttle.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Why, when throttling.
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// A delay of `secs` seconds, rounded to the microsecond; negative or NaN gives zero, and huge
/// values saturate.
pub(crate) fn delay_from_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    let micros = (secs * 1e6).round();
    if micros >= u64::MAX as f64 {
        return Duration::MAX;
    }
    Duration::from_micros(micros as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_from_float_seconds() {
        assert_eq!(
            delay_from_secs(0.6000000000000001),
            Duration::from_millis(600)
        );
        assert_eq!(delay_from_secs(-1.0), Duration::ZERO);
        assert_eq!(delay_from_secs(f64::NAN), Duration::ZERO);
        assert_eq!(delay_from_secs(f64::INFINITY), Duration::MAX);
    }
}
