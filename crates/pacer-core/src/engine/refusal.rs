//! Why a server refused a request, beyond "too many": the refusal classes and Pacer's built-in
//! rules on a refusal's headers.

use http::HeaderMap;

/// Why a server refused a request, beyond "too many": what Pacer does about it
/// ([`ThrottleClassifier::refusal`](crate::ThrottleClassifier::refusal), the body rules). docs/responses.md has the table, with the
/// vendor's document for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RefusalClass {
    /// Too many for this client's rate (a 429, an overloaded server's 503): the rate is cut,
    /// the endpoint stops for the `Retry-After` (or `PauseWithoutRetryAfter`), the request is
    /// sent again.
    #[default]
    Rate,
    /// A penalty for going over (GitHub's secondary limits: "wait for at least one minute
    /// before retrying", and longer each time they continue): as [`Rate`](Self::Rate), and the
    /// endpoint stops at least [`PENALTY_PAUSE`], doubled for each penalty that follows within
    /// twice its pause, up to `MaxRetryAfter`.
    Penalty,
    /// Not the rate: contention for one object (Stripe's `lock_timeout`), or too many requests
    /// in flight at once (Stripe's concurrency limiters, `Stripe-Rate-Limited-Reason:
    /// …-concurrency`). The rate is not cut and the endpoint does not stop; the request alone
    /// is sent again after its `Retry-After`, or `PauseWithoutRetryAfter`. A cap on requests in
    /// flight (`MaxConcurrent`) keeps the concurrency ones away.
    Contention,
    /// A limit shared with other clients on one resource (Discord's `X-RateLimit-Scope:
    /// shared`): not this client's rate, which is not cut; the endpoint stops for the
    /// `Retry-After` and the request is sent again.
    Shared,
    /// A limit on every endpoint at once (Discord's `X-RateLimit-Global: true`, `X-RateLimit-Scope:
    /// global`): as [`Rate`](Self::Rate), and the stop holds every endpoint of the limiter.
    Global,
    /// A budget in other units than requests ran short (a model API's tokens): the fields
    /// count requests with some left and a budget in tokens besides, so what the server lacked
    /// was the request's tokens, not a place in its rate. The request rate is not cut: the
    /// budget in tokens holds each request until its tokens are back
    /// ([`UnitBudgets`](crate::UnitBudgets)); the endpoint stops for a `Retry-After` if there is
    /// one, and the request is sent again. Pacer's rules give this class; a classifier need not.
    /// A request whose tokens were not known (no `TokenCost`, no estimator) reserved none, so
    /// nothing but the rate can hold the next ones: its refusal is read as [`Rate`](Self::Rate).
    Tokens,
}

impl RefusalClass {
    /// Its name, as logs and metrics write it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalClass::Rate => "rate",
            RefusalClass::Penalty => "penalty",
            RefusalClass::Contention => "contention",
            RefusalClass::Shared => "shared",
            RefusalClass::Global => "global",
            RefusalClass::Tokens => "tokens",
        }
    }

    /// Whether it says this client went too fast: the rate is cut.
    #[must_use]
    pub fn cuts(self) -> bool {
        matches!(
            self,
            RefusalClass::Rate | RefusalClass::Penalty | RefusalClass::Global
        )
    }
}

/// The least a [`RefusalClass::Penalty`] stops its endpoint: a minute. GitHub's docs on its
/// secondary rate limits: "Otherwise, wait for at least one minute before retrying. If your
/// request continues to fail due to a secondary rate limit, wait for an exponentially
/// increasing amount of time between retries."
pub const PENALTY_PAUSE: std::time::Duration = std::time::Duration::from_secs(60);

/// Pacer's built-in rules on a refusal's headers ([`ThrottleClassifier::refusal`](crate::ThrottleClassifier::refusal)):
///
/// - Discord: `X-RateLimit-Global: true`, or `X-RateLimit-Scope: global`, is
///   [`RefusalClass::Global`]; `X-RateLimit-Scope: shared` is [`RefusalClass::Shared`]
///   (Discord's docs, "Rate Limits": a shared limit is the resource's, and does not count
///   against the client);
/// - Stripe: `Stripe-Rate-Limited-Reason: global-concurrency`, `endpoint-concurrency` or
///   `resource-specific` is [`RefusalClass::Contention`]; `global-rate` and `endpoint-rate` are
///   [`RefusalClass::Rate`];
/// - anything else is [`RefusalClass::Rate`].
///
/// ```
/// use http::HeaderMap;
/// use pacer_core::{refusal_from_headers, RefusalClass};
///
/// let mut h = HeaderMap::new();
/// h.insert("x-ratelimit-scope", "shared".parse().unwrap());
/// assert_eq!(refusal_from_headers(&h), RefusalClass::Shared);
/// h.insert("x-ratelimit-global", "true".parse().unwrap());
/// assert_eq!(refusal_from_headers(&h), RefusalClass::Global);
/// assert_eq!(refusal_from_headers(&HeaderMap::new()), RefusalClass::Rate);
/// ```
#[must_use]
pub fn refusal_from_headers(headers: &HeaderMap) -> RefusalClass {
    let is = |name: &str, value: &str| {
        headers.get(name).is_some_and(|v| {
            v.as_bytes()
                .trim_ascii()
                .eq_ignore_ascii_case(value.as_bytes())
        })
    };
    if is("x-ratelimit-global", "true") || is("x-ratelimit-scope", "global") {
        return RefusalClass::Global;
    }
    if is("x-ratelimit-scope", "shared") {
        return RefusalClass::Shared;
    }
    if [
        "global-concurrency",
        "endpoint-concurrency",
        "resource-specific",
    ]
    .iter()
    .any(|reason| is("stripe-rate-limited-reason", reason))
    {
        return RefusalClass::Contention;
    }
    RefusalClass::Rate
}
