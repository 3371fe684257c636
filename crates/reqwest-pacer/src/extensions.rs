//! Per-request choices, set with `RequestBuilder::with_extension`, and the mark the middleware
//! leaves on a response it learned something of.

use crate::{Paced, QuotaExhausted};
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
