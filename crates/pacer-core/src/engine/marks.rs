//! The marks a driver leaves in the extensions of a response it hands on: what Pacer did
//! with the request ([`Paced`]), and that the account is out of credit ([`QuotaExhausted`]).

use std::sync::Arc;
use std::time::Duration;

/// The mark on a response whose body says the account is out of credit
/// ([`BodyVerdict::QuotaExhausted`](crate::BodyVerdict::QuotaExhausted), e.g. OpenAI's
/// `insufficient_quota` 429). Waiting will not help: the driver (the middleware, the tower
/// layer) did not cut the rate, did not stop the endpoint and did not retry, and handed the
/// response on unchanged (its body readable) with this in its extensions
/// (`response.extensions().get::<QuotaExhausted>()`; the middleware's
/// `PacerResponseExt::quota_exhausted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExhausted {
    pub(crate) code: String,
    pub(crate) limiter: Arc<str>,
    pub(crate) endpoint: Arc<str>,
}

impl QuotaExhausted {
    /// The mark of a response that `limiter` handed on for `endpoint`, out of credit by the
    /// provider's `code`.
    #[must_use]
    pub fn new(code: impl Into<String>, limiter: Arc<str>, endpoint: Arc<str>) -> Self {
        QuotaExhausted {
            code: code.into(),
            limiter,
            endpoint,
        }
    }

    /// The provider's code for it (`insufficient_quota`).
    #[must_use]
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The limiter the request went through.
    #[must_use]
    pub fn limiter(&self) -> &str {
        &self.limiter
    }

    /// The request's endpoint key.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

/// What Pacer did with a request: on every response a driver hands on for a request it paced
/// (not one of 0 units), in its extensions (`response.extensions().get::<Paced>()`; the
/// middleware's `PacerResponseExt::paced`), and on the middleware's refusals
/// (`Rejection::paced`).
///
/// ```
/// use pacer_core::Paced;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let paced = Paced::new(&Arc::from("api"), &Arc::from("https://api.example.com"))
///     .with_attempts(2)
///     .with_waited(Duration::from_secs(3))
///     .with_rate(120.0);
/// assert_eq!((paced.attempts(), paced.waited(), paced.rate()), (2, Duration::from_secs(3), 120.0));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Paced {
    pub(crate) limiter: Arc<str>,
    pub(crate) endpoint: Arc<str>,
    pub(crate) waited: Duration,
    pub(crate) attempts: u32,
    pub(crate) rate: f64,
}

impl Paced {
    /// Nothing done yet for a request through `limiter` to `endpoint`: no attempt, no wait, a
    /// rate of 0.
    #[must_use]
    #[inline]
    pub fn new(limiter: &Arc<str>, endpoint: &Arc<str>) -> Self {
        Paced {
            limiter: Arc::clone(limiter),
            endpoint: Arc::clone(endpoint),
            waited: Duration::ZERO,
            attempts: 0,
            rate: 0.0,
        }
    }

    /// With `attempts` sends.
    #[must_use]
    #[inline]
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// Having waited `waited` in all.
    #[must_use]
    #[inline]
    pub fn with_waited(mut self, waited: Duration) -> Self {
        self.waited = waited;
        self
    }

    /// With the endpoint's rate `rate` (units per minute) at the last send.
    #[must_use]
    #[inline]
    pub fn with_rate(mut self, rate: f64) -> Self {
        self.rate = rate;
        self
    }

    /// The limiter the request went through.
    #[must_use]
    pub fn limiter(&self) -> &str {
        &self.limiter
    }

    /// The request's endpoint key.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// How long it waited before its sends, all attempts together (and, refused, until the
    /// refusal).
    #[must_use]
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// How many times it was sent: 1 unless a throttle was retried; 0 for a refusal.
    #[must_use]
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The endpoint's adaptive rate when it was last sent (or refused), in units per minute for
    /// this process.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// The rate compares by its bits: it is never NaN.
impl PartialEq for Paced {
    fn eq(&self, other: &Self) -> bool {
        self.limiter == other.limiter
            && self.endpoint == other.endpoint
            && self.waited == other.waited
            && self.attempts == other.attempts
            && self.rate.to_bits() == other.rate.to_bits()
    }
}

impl Eq for Paced {}
