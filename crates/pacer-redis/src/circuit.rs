//! The store's circuit: after Redis could not be reached, calls fail at once, without touching
//! the network, until a backoff has passed; then one call probes, and its success closes the
//! circuit.
//!
//! Why here and not in the core's fallback policy: only the store knows which failures are the
//! transport's (refused, reset, timed out: the next call would fail the same way) and which are
//! Redis's own answers (a missing function, a bad argument: the next call may well succeed), and
//! every user of the store gains from not waiting on a dead server, whatever its policy. The
//! policies (`FailOpen`, `Fallback`, `FailClosed`) see the same `Unavailable` error as before,
//! only sooner.

use pacer_core::Timestamp;
use std::sync::Mutex;
use std::time::Duration;

/// The first backoff after Redis is found unreachable.
pub const DEFAULT_DOWN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest backoff: a Redis that comes back is noticed within this long.
pub const DEFAULT_MAX_DOWN_BACKOFF: Duration = Duration::from_secs(2);

/// Why the circuit is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Refused, reset, timed out.
    Unreachable,
    /// Something answered, but not as Redis.
    NotRedis,
}

/// What a call may do now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Go to Redis.
    Closed,
    /// Go to Redis as the one probe of this backoff.
    Probe,
    /// Fail at once: the circuit is open for `retry_in` more.
    Refuse { retry_in: Duration, why: Failure },
}

#[derive(Debug)]
struct Open {
    why: Failure,
    backoff: Duration,
    retry_at: Timestamp,
    probing: bool,
}

/// The circuit's state; every method takes `now` (the store's clock).
#[derive(Debug)]
pub(crate) struct Circuit {
    initial: Duration,
    max: Duration,
    open: Mutex<Option<Open>>,
}

impl Circuit {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Circuit {
            initial,
            max: max.max(initial),
            open: Mutex::new(None),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Option<Open>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a call may go to Redis at `now`.
    pub(crate) fn admit(&self, now: Timestamp) -> Admit {
        if self.initial.is_zero() {
            return Admit::Closed;
        }
        let mut state = self.state();
        match &mut *state {
            None => Admit::Closed,
            Some(open) if !open.probing && now >= open.retry_at => {
                open.probing = true;
                Admit::Probe
            }
            Some(open) => Admit::Refuse {
                // While a probe is out, the next chance is when it ends; say one backoff.
                retry_in: if open.probing {
                    open.backoff
                } else {
                    open.retry_at - now
                },
                why: open.why,
            },
        }
    }

    /// Why the circuit is open, if it is.
    pub(crate) fn open_for(&self) -> Option<Failure> {
        self.state().as_ref().map(|open| open.why)
    }

    /// A call reached Redis. True when that closed the circuit.
    pub(crate) fn succeeded(&self) -> bool {
        self.state().take().is_some()
    }

    /// A call failed for `why` at `now`; `probe` when it was the probe. Opens the circuit for
    /// the initial backoff, or after a failed probe doubles the backoff up to the maximum. A call
    /// that was already out when the circuit opened changes nothing. Returns the backoff when
    /// this opened the circuit.
    pub(crate) fn failed(&self, now: Timestamp, why: Failure, probe: bool) -> Option<Duration> {
        if self.initial.is_zero() {
            return None;
        }
        let mut state = self.state();
        match &mut *state {
            None => {
                *state = Some(Open {
                    why,
                    backoff: self.initial,
                    retry_at: now + self.initial,
                    probing: false,
                });
                Some(self.initial)
            }
            Some(open) if probe => {
                open.why = why;
                open.backoff = (open.backoff * 2).min(self.max);
                open.retry_at = now + open.backoff;
                open.probing = false;
                None
            }
            Some(_) => None,
        }
    }

    /// The probe ended without an answer either way (cancelled, or an error that says nothing of
    /// the transport): the next call may probe.
    pub(crate) fn probe_ended(&self) {
        if let Some(open) = &mut *self.state() {
            open.probing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_millis(ms))
    }

    fn refused(c: &Circuit, now: Timestamp) -> Option<Duration> {
        match c.admit(now) {
            Admit::Refuse { retry_in, .. } => Some(retry_in),
            _ => None,
        }
    }

    #[test]
    fn a_failure_opens_the_circuit_and_one_probe_per_backoff_goes_out() {
        let c = Circuit::new(Duration::from_millis(100), Duration::from_millis(350));
        assert_eq!(c.admit(at(0)), Admit::Closed);
        assert_eq!(
            c.failed(at(0), Failure::Unreachable, false),
            Some(Duration::from_millis(100))
        );
        assert_eq!(refused(&c, at(0)), Some(Duration::from_millis(100)));
        assert_eq!(refused(&c, at(99)), Some(Duration::from_millis(1)));
        assert_eq!(c.admit(at(100)), Admit::Probe);
        assert!(refused(&c, at(100)).is_some(), "one probe at a time");
        // The probe fails: 200 ms, then 350 (the cap), then 350.
        for (start, backoff) in [(100, 200), (300, 350), (650, 350)] {
            assert_eq!(c.failed(at(start), Failure::Unreachable, true), None);
            assert_eq!(refused(&c, at(start)), Some(Duration::from_millis(backoff)));
            assert_eq!(c.admit(at(start + backoff)), Admit::Probe);
        }
        assert!(c.succeeded(), "the probe's success closes the circuit");
        assert_eq!(c.admit(at(1000)), Admit::Closed);
        assert!(!c.succeeded());
    }

    #[test]
    fn calls_already_out_do_not_stretch_the_backoff() {
        let c = Circuit::new(Duration::from_millis(100), Duration::from_secs(5));
        assert!(c.failed(at(0), Failure::Unreachable, false).is_some());
        for _ in 0..10 {
            assert_eq!(c.failed(at(5), Failure::Unreachable, false), None);
        }
        assert_eq!(refused(&c, at(5)), Some(Duration::from_millis(95)));
    }

    #[test]
    fn a_zero_backoff_never_opens() {
        let c = Circuit::new(Duration::ZERO, Duration::ZERO);
        assert_eq!(c.failed(at(0), Failure::Unreachable, false), None);
        assert_eq!(c.admit(at(0)), Admit::Closed);
    }

    #[test]
    fn an_abandoned_probe_lets_the_next_call_probe() {
        let c = Circuit::new(Duration::from_millis(100), Duration::from_secs(5));
        c.failed(at(0), Failure::NotRedis, false);
        assert_eq!(
            c.admit(at(50)),
            Admit::Refuse {
                retry_in: Duration::from_millis(50),
                why: Failure::NotRedis
            }
        );
        assert_eq!(c.admit(at(100)), Admit::Probe);
        c.probe_ended();
        assert_eq!(c.admit(at(100)), Admit::Probe);
    }
}
