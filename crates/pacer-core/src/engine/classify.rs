//! Classify: is a response a throttle, a success, or neither? And, for a 429, does its body say
//! that waiting will not help (an account out of credit)?

use super::refusal::{RefusalClass, refusal_from_headers};
use crate::{RateLimitInfo, Signal};
use http::{HeaderMap, StatusCode};
use std::borrow::Cow;
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

/// True if the server asks that the request not be sent again: its `x-should-retry` (OpenAI,
/// Anthropic) or `Stripe-Should-Retry` (Stripe) header is `false` (any case), or its
/// `grpc-retry-pushback-ms` is negative or not a number (gRFC A6, "gRPC Retry Design": such a
/// pushback means "do not retry"). The vendors' SDKs and gRPC's clients honour them, and so
/// does Pacer.
///
/// ```
/// use http::HeaderMap;
/// use pacer_core::forbids_retry;
///
/// let mut h = HeaderMap::new();
/// h.insert("grpc-retry-pushback-ms", "1000".parse()?);
/// assert!(!forbids_retry(&h));
/// h.insert("grpc-retry-pushback-ms", "-1".parse()?);
/// assert!(forbids_retry(&h));
/// # Ok::<(), http::header::InvalidHeaderValue>(())
/// ```
#[must_use]
pub fn forbids_retry(headers: &HeaderMap) -> bool {
    let said_false = ["x-should-retry", "stripe-should-retry"]
        .iter()
        .any(|name| {
            headers
                .get(*name)
                .is_some_and(|v| v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"false"))
        });
    said_false
        || headers
            .get("grpc-retry-pushback-ms")
            .is_some_and(|v| !is_pushback(v.as_bytes().trim_ascii()))
}

/// A gRPC pushback a client may wait out: a non-negative integer of milliseconds.
fn is_pushback(value: &[u8]) -> bool {
    !value.is_empty() && value.iter().all(u8::is_ascii_digit)
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
    // The defaults are borrowed: a configuration of many limiters allocates none of them.
    throttled: Cow<'static, [StatusCode]>,
    overloaded: Cow<'static, [StatusCode]>,
    throttled_with_retry_after: Cow<'static, [StatusCode]>,
    throttled_when_exhausted: Cow<'static, [StatusCode]>,
    grpc_throttled: Cow<'static, [u16]>,
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
            throttled: Cow::Borrowed(&[StatusCode::TOO_MANY_REQUESTS]),
            overloaded: Cow::Borrowed(&[StatusCode::SERVICE_UNAVAILABLE, SITE_OVERLOADED]),
            throttled_with_retry_after: Cow::Borrowed(&[
                StatusCode::SERVICE_UNAVAILABLE,
                StatusCode::FORBIDDEN,
            ]),
            throttled_when_exhausted: Cow::Borrowed(&[StatusCode::FORBIDDEN]),
            grpc_throttled: Cow::Borrowed(&[GRPC_RESOURCE_EXHAUSTED, GRPC_UNAVAILABLE]),
        }
    }
}

impl DefaultClassifier {
    /// Statuses that are always a throttle. Default `[429]`.
    #[must_use]
    pub fn throttled(mut self, statuses: impl IntoIterator<Item = StatusCode>) -> Self {
        self.throttled = Cow::Owned(statuses.into_iter().collect());
        self
    }

    /// Statuses that say the server is overloaded: a throttle with or without a
    /// `Retry-After`. Default `[503, 529]`; `[]` keeps a bare 503 neutral (an API whose 503
    /// means maintenance, not load).
    #[must_use]
    pub fn overloaded(mut self, statuses: impl IntoIterator<Item = StatusCode>) -> Self {
        self.overloaded = Cow::Owned(statuses.into_iter().collect());
        self
    }

    /// Statuses that are a throttle when they carry a `Retry-After`. Default `[503, 403]`.
    #[must_use]
    pub fn throttled_with_retry_after(
        mut self,
        statuses: impl IntoIterator<Item = StatusCode>,
    ) -> Self {
        self.throttled_with_retry_after = Cow::Owned(statuses.into_iter().collect());
        self
    }

    /// Statuses that are a throttle when the rate-limit headers say nothing remains.
    /// Default `[403]`.
    #[must_use]
    pub fn throttled_when_exhausted(
        mut self,
        statuses: impl IntoIterator<Item = StatusCode>,
    ) -> Self {
        self.throttled_when_exhausted = Cow::Owned(statuses.into_iter().collect());
        self
    }

    /// gRPC status codes that are a throttle when a response's headers carry them as
    /// `grpc-status` (a gRPC error with no message is sent "trailers-only": its status is in
    /// the headers). Default `[8, 14]` ([`GRPC_RESOURCE_EXHAUSTED`], [`GRPC_UNAVAILABLE`]).
    #[must_use]
    pub fn grpc_throttled(mut self, codes: impl IntoIterator<Item = u16>) -> Self {
        self.grpc_throttled = Cow::Owned(codes.into_iter().collect());
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
mod tests;
