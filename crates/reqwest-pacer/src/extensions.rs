//! Per-request choices, set with `RequestBuilder::with_extension`, and the mark the middleware
//! leaves on a response it learned something of.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// Sends this request through the named limiter instead of the middleware's default.
///
/// ```no_run
/// # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> reqwest_middleware::Result<()> {
/// use reqwest_pacer::UseLimiter;
/// client
///     .get("https://api.example.com/search")
///     .with_extension(UseLimiter::new("search-api"))
///     .send()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UseLimiter(pub Cow<'static, str>);

impl UseLimiter {
    /// The limiter named `name`.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        UseLimiter(name.into())
    }
}

/// The mark on a response whose body says the account is out of credit
/// ([`BodyVerdict::QuotaExhausted`](crate::BodyVerdict::QuotaExhausted), e.g. OpenAI's
/// `insufficient_quota` 429). Waiting will not help: the middleware did not cut the rate, did not
/// stop the endpoint and did not retry, and handed the response on unchanged (its body readable)
/// with this in its extensions. Read it with [`PacerResponseExt::quota_exhausted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExhausted {
    pub(crate) code: String,
    pub(crate) limiter: Arc<str>,
    pub(crate) endpoint: Arc<str>,
}

impl QuotaExhausted {
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

/// What Pacer did with a request: on every response the middleware hands on (read it with
/// [`PacerResponseExt::paced`]) and on a refusal ([`Rejection::paced`](crate::Rejection::paced)).
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
    pub(crate) fn new(limiter: &Arc<str>, endpoint: &Arc<str>) -> Self {
        Paced {
            limiter: Arc::clone(limiter),
            endpoint: Arc::clone(endpoint),
            waited: Duration::ZERO,
            attempts: 0,
            rate: 0.0,
        }
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

/// What the middleware learned of a response it handed on.
///
/// ```no_run
/// # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> reqwest_middleware::Result<()> {
/// use reqwest_pacer::PacerResponseExt;
/// let response = client.post("https://api.openai.com/v1/responses").send().await?;
/// if let Some(code) = response.quota_exhausted().map(|q| q.code().to_owned()) {
///     let message = response.text().await?; // the server's own words, unchanged
///     eprintln!("out of credit ({code}): {message}");
/// }
/// # Ok(()) }
/// ```
pub trait PacerResponseExt {
    /// The mark of a response whose body says the account is out of credit, if it has one.
    fn quota_exhausted(&self) -> Option<&QuotaExhausted>;

    /// What Pacer did with the request: its wait, attempts, limiter, endpoint key and rate.
    /// `None` for a request of 0 units (not paced) or one that did not go through Pacer.
    ///
    /// ```no_run
    /// # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> reqwest_middleware::Result<()> {
    /// use reqwest_pacer::PacerResponseExt;
    /// let response = client.get("https://api.example.com/orders").send().await?;
    /// if let Some(paced) = response.paced() {
    ///     println!("waited {:?} over {} attempt(s)", paced.waited(), paced.attempts());
    /// }
    /// # Ok(()) }
    /// ```
    fn paced(&self) -> Option<&Paced>;

    /// True if the response says the account is out of credit.
    fn is_quota_exhausted(&self) -> bool {
        self.quota_exhausted().is_some()
    }
}

impl PacerResponseExt for reqwest::Response {
    fn quota_exhausted(&self) -> Option<&QuotaExhausted> {
        self.extensions().get::<QuotaExhausted>()
    }

    fn paced(&self) -> Option<&Paced> {
        self.extensions().get::<Paced>()
    }
}
