//! Per-request choices, set with `RequestBuilder::with_extension`, and the mark the middleware
//! leaves on a response it learned something of.

use std::borrow::Cow;
use std::sync::Arc;

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

/// Charges this request `units` instead of what the limiter's cost estimator says. A request of
/// 0 units neither waits nor moves the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cost(pub u64);

/// Puts this request under the endpoint key `key` instead of the one the limiter's key mode
/// derives from the URL: requests with the same key share one rate and one header state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointKey(pub String);

impl EndpointKey {
    /// The key `key`.
    pub fn new(key: impl Into<String>) -> Self {
        EndpointKey(key.into())
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

    /// True if the response says the account is out of credit.
    fn is_quota_exhausted(&self) -> bool {
        self.quota_exhausted().is_some()
    }
}

impl PacerResponseExt for reqwest::Response {
    fn quota_exhausted(&self) -> Option<&QuotaExhausted> {
        self.extensions().get::<QuotaExhausted>()
    }
}

/// The request's cost in tokens, for the quotas that count tokens (OpenAI's `tokens`,
/// Anthropic's `tokens` and `input-tokens`), instead of what the limiter's token estimator
/// says ([`LimiterConfig::token_estimator`](crate::LimiterConfig::token_estimator)).
///
/// A tokens quota the server reports then holds the request until its tokens are there, and
/// the tokens are debited from it when the request is sent. It never changes the request's
/// [`Cost`] in the adaptive limiter's units. A request without a token cost is held by a tokens
/// quota only while that quota is exhausted. `docs/headers.md` ("Quotas in other units") has
/// the rules.
///
/// ```no_run
/// # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> reqwest_middleware::Result<()> {
/// use reqwest_pacer::TokenCost;
/// client
///     .post("https://api.openai.com/v1/chat/completions")
///     .with_extension(TokenCost(1_200))
///     .send()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenCost(pub u64);
