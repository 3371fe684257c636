//! Per-request choices, set with `RequestBuilder::with_extension`.

use std::borrow::Cow;

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
