//! Classify: is a response a throttle, a success, or neither? And, for a 429, does its body say
//! that waiting will not help (an account out of credit)?

use crate::{RateLimitInfo, Signal};
use http::{HeaderMap, StatusCode};
use std::fmt;

/// Reads a response and says how it bears on the rate. Pure: the status, the headers and the
/// rate-limit state already parsed from them in, a [`Signal`] out.
///
/// # Example
///
/// An API that says "slow down" with a 200 and a header:
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use pacer_core::{RateLimitInfo, Signal};
/// use pacer_core::{DefaultClassifier, ThrottleClassifier};
///
/// #[derive(Debug)]
/// struct SoftThrottle;
///
/// impl ThrottleClassifier for SoftThrottle {
///     fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal {
///         if headers.contains_key("x-slow-down") {
///             return Signal::Throttled { retry_after: info.retry_after() };
///         }
///         DefaultClassifier::default().classify(status, headers, info)
///     }
/// }
///
/// let mut h = HeaderMap::new();
/// h.insert("x-slow-down", "1".parse().unwrap());
/// let s = SoftThrottle.classify(StatusCode::OK, &h, &RateLimitInfo::new());
/// assert_eq!(s, Signal::Throttled { retry_after: None });
/// ```
///
/// # A rule that reads the body
///
/// A driver (the middleware, the tower layer) shows [`classify_body`](ThrottleClassifier::classify_body) the first
/// [`BODY_LIMIT`] bytes of a 429 with a JSON content type (and only of such a response). A
/// provider that says "out of credit" in its own words:
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use pacer_core::{RateLimitInfo, Signal};
/// use pacer_core::{BodyVerdict, DefaultClassifier, ThrottleClassifier};
///
/// #[derive(Debug)]
/// struct Billing;
///
/// impl ThrottleClassifier for Billing {
///     fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal {
///         DefaultClassifier::default().classify(status, headers, info)
///     }
///
///     fn classify_body(&self, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Option<BodyVerdict> {
///         let needle = b"billing_hard_limit_reached";
///         if body.windows(needle.len()).any(|w| w == needle) {
///             return Some(BodyVerdict::QuotaExhausted { code: "billing_hard_limit_reached".into() });
///         }
///         // Keep the built-in rule (`insufficient_quota`).
///         DefaultClassifier::default().classify_body(status, headers, body)
///     }
/// }
///
/// let body = br#"{"error":{"code":"billing_hard_limit_reached"}}"#;
/// let verdict = Billing.classify_body(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body);
/// assert_eq!(verdict, Some(BodyVerdict::QuotaExhausted { code: "billing_hard_limit_reached".into() }));
/// let openai = br#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#;
/// let verdict = Billing.classify_body(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), openai);
/// assert_eq!(verdict, Some(BodyVerdict::QuotaExhausted { code: "insufficient_quota".into() }));
/// ```
pub trait ThrottleClassifier: Send + Sync + fmt::Debug + 'static {
    /// The signal of a response with `status` and `headers`, whose rate-limit state is `info`.
    fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal;

    /// What the body of a 429 or a 403 says beyond its status, or `None` for nothing (the
    /// response is then what [`classify`](ThrottleClassifier::classify) says). `body` is the
    /// whole body, at most [`BODY_LIMIT`] bytes; a longer body is never shown. A driver calls
    /// this only for a 429 or a 403 whose content type is JSON (`application/json` or
    /// `*/*+json`).
    ///
    /// The default is Pacer's built-in rules, [`builtin_body_verdict`]: OpenAI's
    /// `insufficient_quota` ([`BodyVerdict::QuotaExhausted`]), GitHub's secondary limits
    /// ([`BodyVerdict::Penalty`]) and Stripe's `lock_timeout` ([`BodyVerdict::Contention`]).
    fn classify_body(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<BodyVerdict> {
        let _ = headers;
        builtin_body_verdict(status, body)
    }

    /// Why the server refused a response this classifier calls a throttle: its
    /// [`RefusalClass`], read from the headers. Only a throttle is asked. The default is Pacer's
    /// built-in rules, [`refusal_from_headers`]: Discord's `X-RateLimit-Global` and
    /// `X-RateLimit-Scope`, Stripe's `Stripe-Rate-Limited-Reason`; anything else is
    /// [`RefusalClass::Rate`].
    fn refusal(&self, status: StatusCode, headers: &HeaderMap) -> RefusalClass {
        let _ = status;
        refusal_from_headers(headers)
    }
}

/// Why a server refused a request, beyond "too many": what Pacer does about it
/// ([`ThrottleClassifier::refusal`], the body rules). docs/responses.md has the table, with the
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

/// Pacer's built-in rules on a refusal's headers ([`ThrottleClassifier::refusal`]):
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

/// The most of a 429's body a driver reads to classify it: 8 KiB. An error document is
/// far smaller (OpenAI's is about 300 bytes); a longer body is not an error document, and is
/// handed on unread past this prefix.
pub const BODY_LIMIT: usize = 8 * 1024;

/// What a 429's body says beyond its status: the answer of
/// [`ThrottleClassifier::classify_body`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyVerdict {
    /// The account is out of credit (or in another state waiting will not fix). The response is
    /// not a throttle: it neither cuts the rate nor stops the endpoint, and it is not retried.
    /// The caller gets it unchanged, marked as such by the driver (the middleware's
    /// `QuotaExhausted` extension).
    QuotaExhausted {
        /// The provider's code for it (`insufficient_quota`), for logs and for the caller.
        code: String,
    },
    /// A throttle like any other for the rate, but not retried (what `x-should-retry: false`
    /// says in a header).
    NoRetry,
    /// A penalty for going over ([`RefusalClass::Penalty`]): GitHub's secondary limits,
    /// whose body says "You have exceeded a secondary rate limit". A throttle, with a 403 too.
    Penalty,
    /// Contention for one object, not the rate ([`RefusalClass::Contention`]): Stripe's
    /// `lock_timeout`. A throttle for the retry, not for the rate.
    Contention {
        /// The provider's code for it (`lock_timeout`).
        code: String,
    },
}

/// Pacer's built-in body rule: a JSON body whose `error.type` or `error.code` is
/// `insufficient_quota` (OpenAI's answer when the account has no credit left, sent with a 429)
/// is [`BodyVerdict::QuotaExhausted`]. Anything else, or a body that is not JSON, is `None`.
///
/// ```
/// use pacer_core::{insufficient_quota, BodyVerdict};
///
/// let body = br#"{"error":{"message":"You exceeded your current quota...","type":"insufficient_quota","code":"insufficient_quota"}}"#;
/// assert_eq!(insufficient_quota(body), Some(BodyVerdict::QuotaExhausted { code: "insufficient_quota".into() }));
/// assert_eq!(insufficient_quota(br#"{"error":{"type":"requests","code":"rate_limit_exceeded"}}"#), None);
/// ```
#[must_use]
pub fn insufficient_quota(body: &[u8]) -> Option<BodyVerdict> {
    const CODE: &str = "insufficient_quota";
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let says = |field| error.get(field).and_then(serde_json::Value::as_str) == Some(CODE);
    (says("type") || says("code")).then(|| BodyVerdict::QuotaExhausted {
        code: CODE.to_owned(),
    })
}

/// Pacer's built-in rules on a refused response's JSON body ([`ThrottleClassifier::classify_body`]),
/// read once:
///
/// - OpenAI's `{"error":{"type":"insufficient_quota",…}}` (or `code`): the account is out of
///   credit, [`BodyVerdict::QuotaExhausted`] ([`insufficient_quota`]);
/// - GitHub's secondary limits, a 403 or a 429 whose `message` says "secondary rate limit"
///   (GitHub's REST API docs, "Rate limits for the REST API"): [`BodyVerdict::Penalty`];
/// - Stripe's `{"error":{"code":"lock_timeout",…}}` on a 429 (Stripe's error codes: "another API
///   request or Stripe process is currently accessing" the object): [`BodyVerdict::Contention`].
///
/// ```
/// use http::StatusCode;
/// use pacer_core::{builtin_body_verdict, BodyVerdict};
///
/// let github = br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#;
/// assert_eq!(builtin_body_verdict(StatusCode::FORBIDDEN, github), Some(BodyVerdict::Penalty));
/// let stripe = br#"{"error":{"code":"lock_timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it.","type":"invalid_request_error"}}"#;
/// assert_eq!(builtin_body_verdict(StatusCode::TOO_MANY_REQUESTS, stripe),
///     Some(BodyVerdict::Contention { code: "lock_timeout".into() }));
/// ```
#[must_use]
pub fn builtin_body_verdict(status: StatusCode, body: &[u8]) -> Option<BodyVerdict> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    if let Some(error) = value.get("error") {
        let field = |name| error.get(name).and_then(serde_json::Value::as_str);
        const QUOTA: &str = "insufficient_quota";
        if field("type") == Some(QUOTA) || field("code") == Some(QUOTA) {
            return Some(BodyVerdict::QuotaExhausted {
                code: QUOTA.to_owned(),
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS && field("code") == Some("lock_timeout") {
            return Some(BodyVerdict::Contention {
                code: "lock_timeout".to_owned(),
            });
        }
    }
    let message = value.get("message").and_then(serde_json::Value::as_str)?;
    let secondary = (status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS)
        && message
            .to_ascii_lowercase()
            .contains("secondary rate limit");
    secondary.then_some(BodyVerdict::Penalty)
}

/// True if the response's `x-should-retry` (OpenAI, Anthropic) or `Stripe-Should-Retry`
/// (Stripe) header is `false` (any case): the server asks that the request not be sent again.
/// The vendors' SDKs honour it, and so does Pacer.
#[must_use]
pub fn forbids_retry(headers: &HeaderMap) -> bool {
    ["x-should-retry", "stripe-should-retry"]
        .iter()
        .any(|name| {
            headers
                .get(*name)
                .is_some_and(|v| v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"false"))
        })
}

/// True if the content type is JSON: `application/json`, or a `+json` type
/// (`application/problem+json`), any parameters aside: the responses whose body a driver shows
/// [`ThrottleClassifier::classify_body`].
#[must_use]
pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = value.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/json")
        || (media.len() > 5 && media[media.len() - 5..].eq_ignore_ascii_case("+json"))
}

/// The default classifier:
///
/// - **throttled**: a status in `throttled` (429); a status in `overloaded` (503, and 529, which
///   Anthropic's API sends when it is overloaded), with or without a `Retry-After`; a status in
///   `throttled_with_retry_after` (503, 403) that carries a `Retry-After`; a status in
///   `throttled_when_exhausted` (403) whose rate-limit headers say nothing remains (GitHub's
///   primary and secondary limits); a `grpc-status` in the headers (a gRPC answer with no
///   message, "trailers-only") that is in `grpc_throttled` (8 `RESOURCE_EXHAUSTED`, 14
///   `UNAVAILABLE`), whatever the HTTP status;
/// - **success**: any other 1xx–3xx;
/// - **neutral**: any other 4xx or 5xx.
///
/// An overloaded server says "less" as a rate limiter does: nginx's `limit_req` refuses with a
/// bare 503 unless told otherwise, Amazon S3 asks a client to slow down with a 503 `SlowDown`,
/// Anthropic's API answers 529 `overloaded_error`. For an API whose bare 503 means something
/// else (a maintenance page), `overloaded([])` keeps a 503 neutral unless it carries a
/// `Retry-After`.
///
/// The `Retry-After` of a throttle is the one parsed from the headers. Its body rules and its
/// refusal classes are the built-in ones ([`builtin_body_verdict`], [`refusal_from_headers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultClassifier {
    throttled: Vec<StatusCode>,
    overloaded: Vec<StatusCode>,
    throttled_with_retry_after: Vec<StatusCode>,
    throttled_when_exhausted: Vec<StatusCode>,
    grpc_throttled: Vec<u16>,
}

/// The statuses of each of [`DefaultClassifier`]'s rules ([`DefaultClassifier::statuses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassifierStatuses<'a> {
    /// Always a throttle.
    pub throttled: &'a [StatusCode],
    /// A throttle with or without a `Retry-After`: the server is overloaded.
    pub overloaded: &'a [StatusCode],
    /// A throttle when it carries a `Retry-After`.
    pub throttled_with_retry_after: &'a [StatusCode],
    /// A throttle when the rate-limit headers say nothing remains.
    pub throttled_when_exhausted: &'a [StatusCode],
    /// gRPC status codes (a `grpc-status` header) that are a throttle.
    pub grpc_throttled: &'a [u16],
}

/// gRPC's `RESOURCE_EXHAUSTED` ("some resource has been exhausted, perhaps a per-user quota"):
/// `grpc/doc/statuscodes.md`.
pub const GRPC_RESOURCE_EXHAUSTED: u16 = 8;
/// gRPC's `UNAVAILABLE` ("the service is currently unavailable … a transient condition"):
/// `grpc/doc/statuscodes.md`.
pub const GRPC_UNAVAILABLE: u16 = 14;

/// 529, "site is overloaded": not in any RFC; Anthropic's API sends it with an
/// `overloaded_error` body when it is overloaded.
const SITE_OVERLOADED: StatusCode = match StatusCode::from_u16(529) {
    Ok(status) => status,
    Err(_) => unreachable!(),
};

impl Default for DefaultClassifier {
    fn default() -> Self {
        DefaultClassifier {
            throttled: vec![StatusCode::TOO_MANY_REQUESTS],
            overloaded: vec![StatusCode::SERVICE_UNAVAILABLE, SITE_OVERLOADED],
            throttled_with_retry_after: vec![
                StatusCode::SERVICE_UNAVAILABLE,
                StatusCode::FORBIDDEN,
            ],
            throttled_when_exhausted: vec![StatusCode::FORBIDDEN],
            grpc_throttled: vec![GRPC_RESOURCE_EXHAUSTED, GRPC_UNAVAILABLE],
        }
    }
}

impl DefaultClassifier {
    /// Statuses that are always a throttle. Default `[429]`.
    #[must_use]
    pub fn throttled(mut self, statuses: impl IntoIterator<Item = StatusCode>) -> Self {
        self.throttled = statuses.into_iter().collect();
        self
    }

    /// Statuses that say the server is overloaded: a throttle with or without a
    /// `Retry-After`. Default `[503, 529]`; `[]` keeps a bare 503 neutral (an API whose 503
    /// means maintenance, not load).
    #[must_use]
    pub fn overloaded(mut self, statuses: impl IntoIterator<Item = StatusCode>) -> Self {
        self.overloaded = statuses.into_iter().collect();
        self
    }

    /// Statuses that are a throttle when they carry a `Retry-After`. Default `[503, 403]`.
    #[must_use]
    pub fn throttled_with_retry_after(
        mut self,
        statuses: impl IntoIterator<Item = StatusCode>,
    ) -> Self {
        self.throttled_with_retry_after = statuses.into_iter().collect();
        self
    }

    /// Statuses that are a throttle when the rate-limit headers say nothing remains.
    /// Default `[403]`.
    #[must_use]
    pub fn throttled_when_exhausted(
        mut self,
        statuses: impl IntoIterator<Item = StatusCode>,
    ) -> Self {
        self.throttled_when_exhausted = statuses.into_iter().collect();
        self
    }

    /// gRPC status codes that are a throttle when a response's headers carry them as
    /// `grpc-status` (a gRPC error with no message is sent "trailers-only": its status is in
    /// the headers). Default `[8, 14]` ([`GRPC_RESOURCE_EXHAUSTED`], [`GRPC_UNAVAILABLE`]).
    #[must_use]
    pub fn grpc_throttled(mut self, codes: impl IntoIterator<Item = u16>) -> Self {
        self.grpc_throttled = codes.into_iter().collect();
        self
    }

    /// The statuses of each rule.
    #[must_use]
    pub fn statuses(&self) -> ClassifierStatuses<'_> {
        ClassifierStatuses {
            throttled: &self.throttled,
            overloaded: &self.overloaded,
            throttled_with_retry_after: &self.throttled_with_retry_after,
            throttled_when_exhausted: &self.throttled_when_exhausted,
            grpc_throttled: &self.grpc_throttled,
        }
    }

    /// The `grpc-status` of a trailers-only gRPC answer, if it is one of `grpc_throttled`.
    fn grpc_throttle(&self, headers: &HeaderMap) -> bool {
        if self.grpc_throttled.is_empty() {
            return false;
        }
        headers
            .get("grpc-status")
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
            .and_then(|v| v.trim().parse::<u16>().ok())
            .is_some_and(|code| self.grpc_throttled.contains(&code))
    }
}

impl ThrottleClassifier for DefaultClassifier {
    fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal {
        let throttled = self.throttled.contains(&status)
            || self.overloaded.contains(&status)
            || self.grpc_throttle(headers)
            || (self.throttled_with_retry_after.contains(&status) && info.retry_after().is_some())
            || (self.throttled_when_exhausted.contains(&status) && info.is_exhausted());
        if throttled {
            Signal::Throttled {
                retry_after: info.retry_after(),
            }
        } else if status.is_informational() || status.is_success() || status.is_redirection() {
            Signal::Success
        } else {
            Signal::Neutral
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn classify(status: u16, headers: &[(&str, &str)]) -> Signal {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let info = RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH);
        DefaultClassifier::default().classify(StatusCode::from_u16(status).unwrap(), &h, &info)
    }

    #[test]
    fn the_default_rules() {
        let thr = |s| Signal::Throttled { retry_after: s };
        let table = [
            (200, vec![], Signal::Success),
            (304, vec![], Signal::Success),
            (429, vec![], thr(None)),
            (
                429,
                vec![("retry-after", "2")],
                thr(Some(Duration::from_secs(2))),
            ),
            (503, vec![], thr(None)),
            (529, vec![], thr(None)),
            (200, vec![("grpc-status", "8")], thr(None)),
            (200, vec![("grpc-status", "14")], thr(None)),
            (200, vec![("grpc-status", " 14 ")], thr(None)),
            (200, vec![("grpc-status", "0")], Signal::Success),
            (200, vec![("grpc-status", "13")], Signal::Success),
            (200, vec![("grpc-status", "fourteen")], Signal::Success),
            (
                503,
                vec![("retry-after", "5")],
                thr(Some(Duration::from_secs(5))),
            ),
            (403, vec![], Signal::Neutral),
            (
                403,
                vec![("retry-after", "60")],
                thr(Some(Duration::from_secs(60))),
            ),
            (
                403,
                vec![
                    ("x-ratelimit-limit", "5000"),
                    ("x-ratelimit-remaining", "0"),
                ],
                thr(None),
            ),
            (
                403,
                vec![
                    ("x-ratelimit-limit", "5000"),
                    ("x-ratelimit-remaining", "12"),
                ],
                Signal::Neutral,
            ),
            (500, vec![], Signal::Neutral),
            (404, vec![], Signal::Neutral),
        ];
        for (status, headers, expected) in table {
            assert_eq!(classify(status, &headers), expected, "{status} {headers:?}");
        }
    }

    #[test]
    fn the_insufficient_quota_rule() {
        let quota = Some(BodyVerdict::QuotaExhausted {
            code: "insufficient_quota".into(),
        });
        let table: [(&str, Option<BodyVerdict>); 9] = [
            (
                r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
                quota.clone(),
            ),
            (r#"{"error":{"type":"insufficient_quota"}}"#, quota.clone()),
            (r#"{"error":{"code":"insufficient_quota"}}"#, quota.clone()),
            (
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
                None,
            ),
            (r#"{"type":"insufficient_quota"}"#, None),
            (r#"{"error":"insufficient_quota"}"#, None),
            (r#"{"error":{"message":"insufficient_quota"}}"#, None),
            (r#"{"error":{"type":"insufficient_quota""#, None),
            ("insufficient_quota", None),
        ];
        for (body, expected) in table {
            assert_eq!(insufficient_quota(body.as_bytes()), expected, "{body}");
        }
    }

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn x_should_retry_or_stripe_should_retry_false_forbids_a_retry_and_nothing_else_does() {
        let table = [
            ("false", true),
            ("FALSE", true),
            ("False", true),
            ("true", false),
            ("0", false),
            ("no", false),
            ("", false),
        ];
        for (value, forbids) in table {
            for name in ["x-should-retry", "stripe-should-retry"] {
                assert_eq!(
                    forbids_retry(&headers(name, value)),
                    forbids,
                    "{name}: {value:?}"
                );
            }
        }
        assert!(!forbids_retry(&HeaderMap::new()));
    }

    #[test]
    fn the_built_in_body_rules() {
        let table: [(u16, &str, Option<BodyVerdict>); 8] = [
            (
                403,
                r#"{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#,
                Some(BodyVerdict::Penalty),
            ),
            (
                429,
                r#"{"message":"You have exceeded a Secondary Rate Limit."}"#,
                Some(BodyVerdict::Penalty),
            ),
            (
                403,
                r#"{"message":"API rate limit exceeded for 203.0.113.7.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}"#,
                None,
            ),
            (
                500,
                r#"{"message":"You have exceeded a secondary rate limit."}"#,
                None,
            ),
            (
                429,
                r#"{"error":{"code":"lock_timeout","type":"invalid_request_error"}}"#,
                Some(BodyVerdict::Contention {
                    code: "lock_timeout".into(),
                }),
            ),
            (403, r#"{"error":{"code":"lock_timeout"}}"#, None),
            (
                429,
                r#"{"error":{"type":"insufficient_quota"}}"#,
                Some(BodyVerdict::QuotaExhausted {
                    code: "insufficient_quota".into(),
                }),
            ),
            (429, "not json", None),
        ];
        for (status, body, expected) in table {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(
                builtin_body_verdict(status, body.as_bytes()),
                expected,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn refusal_classes_from_discord_s_and_stripe_s_headers() {
        let table = [
            (vec![], RefusalClass::Rate),
            (vec![("x-ratelimit-global", "true")], RefusalClass::Global),
            (vec![("x-ratelimit-global", "True ")], RefusalClass::Global),
            (vec![("x-ratelimit-global", "false")], RefusalClass::Rate),
            (vec![("x-ratelimit-scope", "global")], RefusalClass::Global),
            (vec![("x-ratelimit-scope", "shared")], RefusalClass::Shared),
            (vec![("x-ratelimit-scope", "user")], RefusalClass::Rate),
            (
                vec![("stripe-rate-limited-reason", "global-concurrency")],
                RefusalClass::Contention,
            ),
            (
                vec![("stripe-rate-limited-reason", "endpoint-concurrency")],
                RefusalClass::Contention,
            ),
            (
                vec![("stripe-rate-limited-reason", "resource-specific")],
                RefusalClass::Contention,
            ),
            (
                vec![("stripe-rate-limited-reason", "global-rate")],
                RefusalClass::Rate,
            ),
            (
                vec![("stripe-rate-limited-reason", "endpoint-rate")],
                RefusalClass::Rate,
            ),
        ];
        for (fields, expected) in table {
            let mut h = HeaderMap::new();
            for (k, v) in &fields {
                h.insert(*k, v.parse().unwrap());
            }
            assert_eq!(refusal_from_headers(&h), expected, "{fields:?}");
        }
        assert!(RefusalClass::Penalty.cuts() && RefusalClass::Global.cuts());
        assert!(!RefusalClass::Contention.cuts() && !RefusalClass::Shared.cuts());
    }

    #[test]
    fn json_content_types() {
        let table = [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("application/problem+json", true),
            ("text/plain", false),
            ("text/html; charset=utf-8", false),
            ("application/jsonp", false),
            ("+json", false),
        ];
        for (value, json) in table {
            assert_eq!(is_json(&headers("content-type", value)), json, "{value}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }

    #[test]
    fn a_classifier_of_ones_own_keeps_the_built_in_body_rule() {
        #[derive(Debug)]
        struct Plain;
        impl ThrottleClassifier for Plain {
            fn classify(&self, _: StatusCode, _: &HeaderMap, _: &RateLimitInfo) -> Signal {
                Signal::Neutral
            }
        }
        let body = br#"{"error":{"type":"insufficient_quota"}}"#;
        assert!(matches!(
            Plain.classify_body(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body),
            Some(BodyVerdict::QuotaExhausted { .. })
        ));
    }

    #[test]
    fn statuses_can_be_changed() {
        let c = DefaultClassifier::default()
            .throttled([
                StatusCode::TOO_MANY_REQUESTS,
                StatusCode::from_u16(420).unwrap(),
            ])
            .throttled_with_retry_after([])
            .throttled_when_exhausted([]);
        let info = RateLimitInfo::new();
        let h = HeaderMap::new();
        assert_eq!(
            c.classify(StatusCode::from_u16(420).unwrap(), &h, &info),
            Signal::Throttled { retry_after: None }
        );
        assert_eq!(
            c.statuses().throttled_with_retry_after,
            &[] as &[StatusCode]
        );
    }

    #[test]
    fn an_api_whose_503_means_maintenance_keeps_a_bare_503_neutral() {
        let c = DefaultClassifier::default().overloaded([]);
        let info = |h: &HeaderMap| RateLimitInfo::from_headers(h, SystemTime::UNIX_EPOCH);
        let bare = HeaderMap::new();
        assert_eq!(
            c.classify(StatusCode::SERVICE_UNAVAILABLE, &bare, &info(&bare)),
            Signal::Neutral
        );
        // A Retry-After still makes it a throttle (ThrottledWithRetryAfter).
        let h = headers("retry-after", "5");
        assert_eq!(
            c.classify(StatusCode::SERVICE_UNAVAILABLE, &h, &info(&h)),
            Signal::Throttled {
                retry_after: Some(Duration::from_secs(5))
            }
        );
    }

    #[test]
    fn grpc_statuses_can_be_turned_off() {
        let c = DefaultClassifier::default().grpc_throttled([]);
        let h = headers("grpc-status", "8");
        assert_eq!(
            c.classify(StatusCode::OK, &h, &RateLimitInfo::new()),
            Signal::Success
        );
    }
}
