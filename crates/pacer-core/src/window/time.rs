//! Time on a window store's own clock.
//!
//! Shared windows are framed on wall-clock time (Redis `TIME`), so their ETAs are absolute. Every
//! result carries the store's `now` beside its ETA: a caller turns the two into a wait with
//! [`WindowTime::saturating_duration_since`] and sleeps on its own clock, free of any skew between
//! its clock and the store's.

use std::fmt;
use std::time::{Duration, SystemTime};

/// Microseconds since the Unix epoch on a window store's clock.
///
/// ```
/// use pacer_core::WindowTime;
/// use std::time::Duration;
///
/// let now = WindowTime::from_micros(1_000_000);
/// let eta = WindowTime::from_micros(1_250_000);
/// assert_eq!(eta.saturating_duration_since(now), Duration::from_millis(250));
/// assert_eq!(now.saturating_duration_since(eta), Duration::ZERO);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WindowTime(u64);

impl WindowTime {
    /// The Unix epoch.
    pub const EPOCH: WindowTime = WindowTime(0);

    /// `micros` microseconds after the Unix epoch.
    #[must_use]
    pub const fn from_micros(micros: u64) -> Self {
        WindowTime(micros)
    }

    /// Microseconds since the Unix epoch.
    #[must_use]
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// The wall-clock time `t` (truncated to the microsecond; before the epoch gives the epoch).
    #[must_use]
    pub fn from_system_time(t: SystemTime) -> Self {
        let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        WindowTime(u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
    }

    /// This time as a [`SystemTime`].
    #[must_use]
    pub fn to_system_time(self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_micros(self.0)
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: WindowTime) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self + d` (whole microseconds, rounded up), saturating.
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> WindowTime {
        let us = u64::try_from(d.as_nanos().div_ceil(1_000)).unwrap_or(u64::MAX);
        WindowTime(self.0.saturating_add(us))
    }
}

impl fmt::Debug for WindowTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_and_from_system_time() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_767_225_600_123_456_789);
        let w = WindowTime::from_system_time(t);
        assert_eq!(w.as_micros(), 1_767_225_600_123_456);
        assert_eq!(
            w.to_system_time(),
            SystemTime::UNIX_EPOCH + Duration::from_micros(1_767_225_600_123_456)
        );
        assert_eq!(
            WindowTime::from_system_time(SystemTime::UNIX_EPOCH - Duration::from_secs(1)),
            WindowTime::EPOCH
        );
        assert_eq!(format!("{w:?}"), "1767225600.123456s");
    }

    #[test]
    fn arithmetic_saturates_and_rounds_up() {
        let t = WindowTime::from_micros(10);
        assert_eq!(
            t.saturating_add(Duration::from_nanos(1)),
            WindowTime::from_micros(11)
        );
        assert_eq!(
            WindowTime::from_micros(u64::MAX).saturating_add(Duration::from_secs(1)),
            WindowTime::from_micros(u64::MAX)
        );
    }
}
