//! One attempt of a request, as the engine's wait reads it.

use crate::WindowLimit;
use crate::{Priority, Timestamp, TokenUsage};
use std::num::NonZeroU32;
use std::time::Duration;

/// One attempt of a request, as its wait needs it ([`Engine::begin_wait`](super::Engine::begin_wait)):
/// its units, its tokens, its keyed strict windows and its limits.
///
/// ```
/// use pacer_core::{Attempt, Timestamp};
/// use std::time::Duration;
///
/// let attempt = Attempt::new(1, Timestamp::ZERO, Duration::from_secs(30)).tokens(Some(500));
/// # let _ = attempt;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Attempt<'a> {
    pub(crate) units: u64,
    pub(crate) tokens: Option<TokenUsage>,
    pub(crate) windows: &'a [(&'a WindowLimit, String)],
    pub(crate) max_wait: Duration,
    pub(crate) priority: Priority,
    pub(crate) timeout: Option<(Timestamp, Duration)>,
    pub(crate) start: Timestamp,
    pub(crate) instance_count: u32,
    pub(crate) max_retry_after: Duration,
    pub(crate) not_before: Option<Timestamp>,
    pub(crate) max_concurrent: Option<NonZeroU32>,
}

impl<'a> Attempt<'a> {
    /// An attempt of `units` that came in at `start` and may wait `max_wait`, with no tokens,
    /// no window, the default lane, no timeout, one instance, no cap on a `Retry-After`
    /// beyond `max_wait`'s and no cap of its own on requests in flight.
    #[inline]
    pub fn new(units: u64, start: Timestamp, max_wait: Duration) -> Self {
        Attempt {
            units,
            tokens: None,
            windows: &[],
            max_wait,
            priority: Priority::default(),
            timeout: None,
            start,
            instance_count: 1,
            max_retry_after: Duration::MAX,
            not_before: None,
            max_concurrent: None,
        }
    }

    /// Its cost in tokens, if known (for the quotas in tokens): all of them, with the output
    /// among them ([`output_tokens`](Self::output_tokens)) or not.
    #[inline]
    pub fn tokens(mut self, tokens: Option<u64>) -> Self {
        let output = self.tokens.and_then(|t| t.output);
        self.tokens =
            tokens.map(|t| TokenUsage::new(t.saturating_sub(output.unwrap_or(0)), output));
        self
    }

    /// Of its tokens, those it may produce (its `max_tokens`), if known; set after
    /// [`tokens`](Self::tokens). Without a token cost, its output alone.
    #[inline]
    pub fn output_tokens(mut self, output: Option<u64>) -> Self {
        let total = self.tokens.map(|t| t.total());
        self.tokens = match (total, output) {
            (Some(total), _) => Some(TokenUsage::new(
                total.saturating_sub(output.unwrap_or(0)),
                output,
            )),
            (None, Some(o)) => Some(TokenUsage::new(0, Some(o))),
            (None, None) => None,
        };
        self
    }

    /// Its strict windows, each with the request's key in it.
    #[inline]
    pub fn windows(mut self, windows: &'a [(&'a WindowLimit, String)]) -> Self {
        self.windows = windows;
        self
    }

    /// Its lane in the adaptive limiter's queue.
    #[inline]
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// When its whole request must end, and that timeout (the middleware's `TotalTimeout`): a
    /// wait that would end after it is refused at once.
    #[inline]
    pub fn timeout(mut self, timeout: Option<(Timestamp, Duration)>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The number of processes sharing the limit (a window's fallback takes its share).
    #[inline]
    pub fn instance_count(mut self, count: u32) -> Self {
        self.instance_count = count;
        self
    }

    /// The cap on a server's `Retry-After` (`MaxRetryAfter`).
    #[inline]
    pub fn max_retry_after(mut self, cap: Duration) -> Self {
        self.max_retry_after = cap;
        self
    }

    /// The earliest it may go, whatever else allows: a retry after a refusal for contention
    /// waits its own [`After::retry_in`](super::After::retry_in) first, within the same
    /// `MaxWait`.
    #[inline]
    pub fn not_before(mut self, at: Option<Timestamp>) -> Self {
        self.not_before = at;
        self
    }

    /// Its own cap on its endpoint's requests in flight ([`MaxConcurrent`](crate::MaxConcurrent)):
    /// it waits for its units until fewer than that many are in flight, the limiter's own
    /// `MaxConcurrent` applying as well.
    ///
    /// ```
    /// use pacer_core::{Attempt, MaxConcurrent, Timestamp};
    /// use std::time::Duration;
    ///
    /// let attempt = Attempt::new(1, Timestamp::ZERO, Duration::from_secs(30))
    ///     .max_concurrent(Some(MaxConcurrent(2).cap()));
    /// # let _ = attempt;
    /// ```
    #[inline]
    pub fn max_concurrent(mut self, cap: Option<NonZeroU32>) -> Self {
        self.max_concurrent = cap;
        self
    }
}
