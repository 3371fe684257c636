//! A clock that moves only when told to: for tests, and for a simulation on virtual time.

use super::{Clock, Sleep, Timestamp};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

/// A clock for tests and simulations: time stands still until [`ManualClock::advance`] or
/// [`ManualClock::set`] moves it. Clones share one timeline, so a test can keep a clone and move
/// the time of the limiter it handed the other one to. Sleepers wake when the time passes their
/// deadline, so async code can be tested without real waiting.
///
/// ```
/// use pacer_core::{Clock, ManualClock, Timestamp};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let shared = clock.clone();
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(shared.now(), Timestamp::from_duration(Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    now: AtomicU64,
    system_origin: SystemTime,
    next_id: AtomicU64,
    sleepers: Mutex<Vec<Sleeper>>,
}

#[derive(Debug)]
struct Sleeper {
    id: u64,
    deadline: Timestamp,
    waker: Waker,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            now: AtomicU64::new(0),
            // A fixed, recognisable wall-clock origin: 2026-01-01T00:00:00Z.
            system_origin: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
            next_id: AtomicU64::new(0),
            sleepers: Mutex::new(Vec::new()),
        }
    }
}

impl ManualClock {
    /// A clock at its origin, whose wall clock reads 2026-01-01T00:00:00Z there.
    #[must_use]
    pub fn new() -> Self {
        ManualClock::default()
    }

    /// A clock at its origin whose wall clock reads `system_origin` there.
    #[must_use]
    pub fn with_system_origin(system_origin: SystemTime) -> Self {
        ManualClock {
            inner: Arc::new(Inner {
                system_origin,
                ..Inner::default()
            }),
        }
    }

    /// Moves time forward by `by` and wakes every sleeper whose deadline has passed.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let mut cur = self.inner.now.load(Ordering::Acquire);
        loop {
            let next = cur.saturating_add(by);
            match self.inner.now.compare_exchange_weak(
                cur,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        self.wake_due();
    }

    /// Sets the time to `to` (never backwards: an earlier `to` is ignored) and wakes due sleepers.
    pub fn set(&self, to: Timestamp) {
        self.inner.now.fetch_max(to.as_nanos(), Ordering::AcqRel);
        self.wake_due();
    }

    /// The number of futures sleeping on this clock (test introspection).
    #[must_use]
    pub fn sleepers(&self) -> usize {
        self.inner.sleepers.lock().len()
    }

    /// The earliest deadline any sleeper waits for, if any: a simulation loop can jump there.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.inner.sleepers.lock().iter().map(|s| s.deadline).min()
    }

    /// Runs `future` to its end, moving the time to the earliest sleeper's deadline whenever
    /// the future waits: code that sleeps on this clock (a limiter, a middleware, a layer) runs
    /// without waiting in real time, while its network IO, if any, runs as it does. Between two
    /// looks the future gets 2 ms of real time to make progress. Needs a tokio runtime with its
    /// timer.
    ///
    /// ```
    /// use pacer_core::{Clock, ManualClock, Timestamp};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let clock = ManualClock::new();
    /// let sleeper = clock.clone();
    /// let woke = clock
    ///     .drive(async move {
    ///         sleeper.sleep_until(Timestamp::from_duration(Duration::from_secs(90))).await;
    ///         sleeper.now()
    ///     })
    ///     .await;
    /// assert_eq!(woke, Timestamp::from_duration(Duration::from_secs(90)));
    /// # }
    /// ```
    pub async fn drive<F: Future>(&self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        loop {
            let polled = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
            if let Poll::Ready(out) = polled {
                return out;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Some(deadline) = self.next_deadline() {
                self.set(deadline);
            }
        }
    }

    fn wake_due(&self) {
        let now = self.now();
        let due: Vec<Waker> = {
            let mut sleepers = self.inner.sleepers.lock();
            let mut due = Vec::new();
            sleepers.retain(|s| {
                if s.deadline <= now {
                    due.push(s.waker.clone());
                    false
                } else {
                    true
                }
            });
            due
        };
        for w in due {
            w.wake();
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.inner.now.load(Ordering::Acquire))
    }

    fn system_now(&self) -> SystemTime {
        self.inner.system_origin + self.now().as_duration()
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        Box::pin(ManualSleep {
            clock: self.clone(),
            id,
            deadline,
        })
    }
}

struct ManualSleep {
    clock: ManualClock,
    id: u64,
    deadline: Timestamp,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.now() >= self.deadline {
            return Poll::Ready(());
        }
        let mut sleepers = self.clock.inner.sleepers.lock();
        // Re-check under the lock: `advance` may have run between the check and the lock.
        if self.clock.now() >= self.deadline {
            return Poll::Ready(());
        }
        match sleepers.iter_mut().find(|s| s.id == self.id) {
            Some(s) => s.waker.clone_from(cx.waker()),
            None => sleepers.push(Sleeper {
                id: self.id,
                deadline: self.deadline,
                waker: cx.waker().clone(),
            }),
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        self.clock.inner.sleepers.lock().retain(|s| s.id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_a_timeline() {
        let a = ManualClock::new();
        let b = a.clone();
        a.advance(Duration::from_millis(1500));
        assert_eq!(b.now(), Timestamp::from_nanos(1_500_000_000));
        b.set(Timestamp::from_nanos(10));
        assert_eq!(
            a.now(),
            Timestamp::from_nanos(1_500_000_000),
            "set never goes back"
        );
        assert_eq!(
            a.system_now(),
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(1_767_225_600)
                + Duration::from_millis(1500)
        );
    }

    #[tokio::test]
    async fn sleepers_wake_when_time_passes_their_deadline() {
        let clock = ManualClock::new();
        let sleeper = clock.sleep_until(Timestamp::from_nanos(1_000));
        let task = tokio::spawn(sleeper);
        tokio::task::yield_now().await;
        while clock.sleepers() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(clock.next_deadline(), Some(Timestamp::from_nanos(1_000)));
        clock.advance(Duration::from_nanos(999));
        assert!(!task.is_finished());
        clock.advance(Duration::from_nanos(1));
        task.await.unwrap();
        assert_eq!(clock.sleepers(), 0);
    }

    #[test]
    fn a_dropped_sleep_unregisters() {
        let clock = ManualClock::new();
        let mut s = clock.sleep_until(Timestamp::from_nanos(5));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert_eq!(clock.sleepers(), 1, "a re-poll replaces, not adds");
        drop(s);
        assert_eq!(clock.sleepers(), 0);
    }
}
