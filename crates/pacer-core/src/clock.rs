//! Time as an input.
//!
//! Every algorithm in Pacer is a function of `(state, now, input)`: none reads a clock. The async
//! shells ask a [`Clock`] for `now`, hand it to the algorithm, and sleep with the same clock. That
//! is what lets the simulator run the very same limiter code on virtual time and lets tests be
//! exact: swap [`RealClock`] for a `ManualClock` (feature `test-util`) and time only moves when
//! the test says so.

use std::fmt;
use std::future::Future;
use std::ops::{Add, AddAssign, Sub};
use std::pin::Pin;
use std::time::{Duration, SystemTime};

/// A future that completes when a [`Clock`] reaches a deadline.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A point on a clock's monotonic timeline: nanoseconds since the clock's origin.
///
/// Timestamps from different clocks are not comparable. The type is 8 bytes and `Copy`; arithmetic
/// saturates instead of panicking (a `u64` of nanoseconds lasts 584 years).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The clock's origin.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The largest representable timestamp; used as "never".
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// A timestamp `nanos` nanoseconds after the origin.
    #[must_use]
    pub const fn from_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// A timestamp `d` after the origin (saturating at [`Timestamp::MAX`]).
    #[must_use]
    pub fn from_duration(d: Duration) -> Self {
        Timestamp(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// A timestamp `secs` seconds after the origin. Negative or NaN gives the origin; too large
    /// saturates.
    #[must_use]
    pub fn from_secs_f64(secs: f64) -> Self {
        Timestamp::ZERO.saturating_add_secs_f64(secs)
    }

    /// Nanoseconds since the origin.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time since the origin.
    #[must_use]
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Seconds since the origin, as a float.
    #[must_use]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Seconds from `earlier` to `self` as a float, or zero if `earlier` is later.
    #[must_use]
    pub fn secs_since(self, earlier: Timestamp) -> f64 {
        self.0.saturating_sub(earlier.0) as f64 * 1e-9
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Timestamp::MAX`].
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(d))
    }

    /// `self - d`, saturating at the origin.
    #[must_use]
    pub fn saturating_sub(self, d: Duration) -> Timestamp {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_sub(d))
    }

    /// `self + secs` seconds. Negative or NaN adds nothing; too large saturates.
    #[must_use]
    pub fn saturating_add_secs_f64(self, secs: f64) -> Timestamp {
        if secs.is_nan() || secs <= 0.0 {
            return self;
        }
        let nanos = secs * 1e9;
        if nanos >= u64::MAX as f64 {
            return Timestamp::MAX;
        }
        Timestamp(self.0.saturating_add(nanos.round() as u64))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T+{:?}", self.as_duration())
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, rhs: Duration) -> Timestamp {
        self.saturating_add(rhs)
    }
}

impl AddAssign<Duration> for Timestamp {
    fn add_assign(&mut self, rhs: Duration) {
        *self = self.saturating_add(rhs);
    }
}

impl Sub<Timestamp> for Timestamp {
    type Output = Duration;
    /// Saturating: a later `rhs` gives zero.
    fn sub(self, rhs: Timestamp) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

/// The wall-clock time a response's dates and epoch resets are resolved against
/// ([`crate::Rules::read`]): a `SystemTime` read already, or a function that reads it, called
/// only when a field needs it (most responses carry no date: `SystemTime::now` is then not
/// read).
///
/// ```
/// use pacer_core::{Clock, RealClock, WallTime};
/// use std::time::SystemTime;
///
/// let read = SystemTime::UNIX_EPOCH.wall_time();
/// assert_eq!(read, SystemTime::UNIX_EPOCH);
/// let clock = RealClock::default();
/// let later = (|| clock.system_now()).wall_time();
/// assert!(later > read);
/// ```
pub trait WallTime {
    /// The time.
    fn wall_time(self) -> SystemTime;
}

impl WallTime for SystemTime {
    #[inline]
    fn wall_time(self) -> SystemTime {
        self
    }
}

impl<F: FnOnce() -> SystemTime> WallTime for F {
    #[inline]
    fn wall_time(self) -> SystemTime {
        self()
    }
}

/// A source of time for the async shells.
///
/// `now` is monotonic and drives the in-process limiters; `system_now` is the wall clock, used only
/// to resolve HTTP dates (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`, epoch resets).
///
/// # Example
///
/// A clock that is always at its origin (of no use but to show the trait):
///
/// ```
/// use pacer_core::{Clock, Sleep, Timestamp};
/// use std::time::SystemTime;
///
/// #[derive(Debug)]
/// struct Frozen;
///
/// impl Clock for Frozen {
///     fn now(&self) -> Timestamp {
///         Timestamp::ZERO
///     }
///     fn system_now(&self) -> SystemTime {
///         SystemTime::UNIX_EPOCH
///     }
///     fn sleep_until(&self, _deadline: Timestamp) -> Sleep {
///         Box::pin(std::future::pending())
///     }
/// }
/// assert_eq!(Frozen.now(), Timestamp::ZERO);
/// ```
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current point on the monotonic timeline.
    fn now(&self) -> Timestamp;

    /// The current wall-clock time.
    fn system_now(&self) -> SystemTime;

    /// A future that completes once [`Clock::now`] has reached `deadline`.
    fn sleep_until(&self, deadline: Timestamp) -> Sleep;
}

/// The real clock: the CPU's time-stamp counter (through `quanta`, calibrated against the OS's
/// monotonic clock, a few nanoseconds a read) for the timeline, `SystemTime` for the wall clock,
/// and tokio's timer for sleeping (so sleeping needs a tokio runtime with the time driver).
///
/// Sleeps are relative (`deadline - now`), so the timer's clock and the timeline cannot drift
/// apart.
#[derive(Clone)]
pub struct RealClock {
    clock: quanta::Clock,
    /// The raw counter at the origin.
    origin: u64,
}

impl RealClock {
    /// A real clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        RealClock { clock, origin }
    }
}

impl fmt::Debug for RealClock {
    /// `RealClock`: its origin (a raw counter reading) means nothing outside the process.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RealClock")
    }
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock::new()
    }
}

impl Clock for RealClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.clock.delta_as_nanos(self.origin, self.clock.raw()))
    }

    fn system_now(&self) -> SystemTime {
        #[allow(clippy::disallowed_methods)] // the one place the wall clock is read
        SystemTime::now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        if deadline == Timestamp::MAX {
            return Box::pin(std::future::pending());
        }
        let delay = deadline - self.now();
        Box::pin(tokio::time::sleep(delay))
    }
}

mod manual;
pub use manual::ManualClock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_arithmetic_saturates() {
        let t = Timestamp::from_nanos(10);
        assert_eq!(t - Timestamp::from_nanos(20), Duration::ZERO);
        assert_eq!(Timestamp::MAX + Duration::from_secs(1), Timestamp::MAX);
        assert_eq!(t.saturating_sub(Duration::from_secs(1)), Timestamp::ZERO);
        assert_eq!(t.saturating_add_secs_f64(-1.0), t);
        assert_eq!(t.saturating_add_secs_f64(f64::NAN), t);
        assert_eq!(t.saturating_add_secs_f64(1e300), Timestamp::MAX);
        assert_eq!(Timestamp::from_secs_f64(1.5).as_nanos(), 1_500_000_000);
        assert_eq!(Timestamp::from_duration(Duration::MAX), Timestamp::MAX);
    }

    #[test]
    fn real_clock_is_monotonic() {
        let c = RealClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }

    #[tokio::test]
    async fn real_clock_sleeps_until_the_deadline() {
        let c = RealClock::new();
        let deadline = c.now() + Duration::from_millis(5);
        c.sleep_until(deadline).await;
        assert!(c.now() >= deadline);
    }
}
