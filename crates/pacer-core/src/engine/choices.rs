//! What a request may choose for itself, carried in its extensions: `http::Request`'s
//! (`request.extensions_mut().insert(Cost(5))`, for `tower-pacer`) or reqwest's
//! (`RequestBuilder::with_extension(Cost(5))`, for the middleware). Every driver reads them the
//! same way; [`crate::Priority`] is one too.

use std::num::NonZeroU32;
use std::time::Duration;

/// Charges this request `units` instead of what the limiter's cost estimator says. A request of
/// 0 units neither waits nor moves the rate.
///
/// ```
/// use pacer_core::Cost;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(Cost(5));
/// assert_eq!(request.extensions().get::<Cost>(), Some(&Cost(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cost(pub u64);

/// Puts this request under the endpoint key `key` instead of the one the limiter's key mode
/// derives from the URL: requests with the same key share one rate and one header state.
///
/// ```
/// use pacer_core::EndpointKey;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(EndpointKey::new("tenant-42"));
/// # assert!(request.extensions().get::<EndpointKey>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointKey(pub String);

impl EndpointKey {
    /// The key `key`.
    pub fn new(key: impl Into<String>) -> Self {
        EndpointKey(key.into())
    }
}

/// This request's own `MaxWait`, instead of the limiter's: the longest each attempt may wait
/// before it is sent (for a server-ordered stop, a window, a proactive delay and the queue, in
/// one budget), shorter or longer than the limiter's. A request that would wait longer is
/// refused without being sent, as with the limiter's `MaxWait`. It bounds the wait only, each
/// attempt's anew; the middleware's `TotalTimeout` bounds the whole request.
///
/// A cost whose debt the limiter could not repay within the limiter's own `MaxWait` is still
/// refused: the longer wait of one request does not lengthen what its cost blocks the others.
///
/// ```
/// use pacer_core::MaxWait;
/// use std::time::Duration;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(MaxWait(Duration::from_secs(2)));
/// # assert!(request.extensions().get::<MaxWait>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxWait(pub Duration);

/// The request's cost in tokens, for the quotas that count tokens (OpenAI's `tokens`,
/// Anthropic's `tokens` and `input-tokens`), instead of what a token estimator says (the
/// middleware's `LimiterConfig::token_estimator`).
///
/// A tokens quota the server reports then holds the request until its tokens are there, and
/// the tokens are debited from it when the request is sent. It never changes the request's
/// [`Cost`] in the adaptive limiter's units. A request without a token cost is held by a tokens
/// quota only while that quota is exhausted. `docs/headers.md` ("Quotas in other units") has
/// the rules.
///
/// ```
/// use pacer_core::TokenCost;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(TokenCost(1_200));
/// # assert!(request.extensions().get::<TokenCost>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenCost(pub u64);

/// Of the request's tokens ([`TokenCost`], or the token estimator's), those it may produce:
/// its `max_tokens` (OpenAI's `max_completion_tokens`, Anthropic's `max_tokens`). The request's
/// output is then reserved from an output-tokens quota (Anthropic's `output-tokens`) before the
/// send, as its input is from an input-tokens quota, instead of that quota holding it only once
/// exhausted; its input is the token cost less this. When the answer reports what the request
/// used (its `usage`), the middleware settles the reservation: the tokens reserved and not used
/// are given back, those used above it charged. `docs/llm.md` has the rules.
///
/// ```
/// use pacer_core::{OutputTokens, TokenCost};
///
/// // About 1,000 tokens of prompt, and up to 256 of answer.
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(TokenCost(1_256));
/// request.extensions_mut().insert(OutputTokens(256));
/// # assert!(request.extensions().get::<OutputTokens>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutputTokens(pub u64);

/// The most the whole request may take in a driver, from the moment it enters it: every wait,
/// every send and every retry, on the driver's clock. The driver waits only while the time is
/// not up (a wait that would end after it is refused at once,
/// [`RejectReason::PastTimeout`](crate::RejectReason::PastTimeout)), and bounds each send with
/// the time left: a send still running then is abandoned (the middleware's
/// `PacerError::TimedOut`, the layer's `TimedOut`), neutral to the rate.
///
/// An HTTP client's own timeout starts inside the send, below the driver: Pacer's wait comes on
/// top of it, so with a `MaxWait` of 30 s a 5 s client timeout can take 35 s. Use
/// `TotalTimeout` for a bound on what the caller waits.
///
/// ```
/// use pacer_core::TotalTimeout;
/// use std::time::Duration;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(TotalTimeout(Duration::from_secs(5)));
/// # assert!(request.extensions().get::<TotalTimeout>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TotalTimeout(pub Duration);

/// Sends this request only while fewer than `n` requests of its endpoint are in flight (sent
/// and not yet answered) in this process, counting every request of the endpoint, with or
/// without this extension. The limiter's own `MaxConcurrent` still applies: the lower cap
/// holds. The request waits for a slot in its place in the endpoint's queue, within its
/// `MaxWait`; past it, it is refused
/// ([`RejectReason::WaitTooLong`](crate::RejectReason::WaitTooLong), cause
/// [`WaitCause::Concurrency`](crate::WaitCause::Concurrency)). A request is itself in flight
/// once sent, so `MaxConcurrent(0)` is taken as 1.
///
/// ```
/// use pacer_core::MaxConcurrent;
///
/// // An export that must not run beside any other request of its endpoint.
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(MaxConcurrent(1));
/// # assert_eq!(request.extensions().get::<MaxConcurrent>().map(|m| m.cap().get()), Some(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxConcurrent(pub u32);

impl MaxConcurrent {
    /// The cap: `n`, or 1 for `MaxConcurrent(0)`.
    ///
    /// ```
    /// use pacer_core::MaxConcurrent;
    ///
    /// assert_eq!(MaxConcurrent(3).cap().get(), 3);
    /// assert_eq!(MaxConcurrent(0).cap().get(), 1);
    /// ```
    #[must_use]
    pub fn cap(self) -> NonZeroU32 {
        NonZeroU32::new(self.0).unwrap_or(NonZeroU32::MIN)
    }
}
