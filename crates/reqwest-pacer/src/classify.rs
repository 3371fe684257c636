//! Classify: is a response a throttle, a success, or neither?

use http::{HeaderMap, StatusCode};
use pacer_core::{RateLimitInfo, Signal};
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
/// use reqwest_pacer::{DefaultClassifier, ThrottleClassifier};
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
pub trait ThrottleClassifier: Send + Sync + fmt::Debug + 'static {
    /// The signal of a response with `status` and `headers`, whose rate-limit state is `info`.
    fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal;
}

/// The default classifier:
///
/// - **throttled**: a status in `throttled` (429); a status in `throttled_with_retry_after`
///   (503, 403) that carries a `Retry-After`; a status in `throttled_when_exhausted` (403) whose
///   rate-limit headers say nothing remains (GitHub's primary and secondary limits);
/// - **success**: any other 1xx–3xx;
/// - **neutral**: any other 4xx or 5xx.
///
/// The `Retry-After` of a throttle is the one parsed from the headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultClassifier {
    throttled: Vec<StatusCode>,
    throttled_with_retry_after: Vec<StatusCode>,
    throttled_when_exhausted: Vec<StatusCode>,
}

impl Default for DefaultClassifier {
    fn default() -> Self {
        DefaultClassifier {
            throttled: vec![StatusCode::TOO_MANY_REQUESTS],
            throttled_with_retry_after: vec![
                StatusCode::SERVICE_UNAVAILABLE,
                StatusCode::FORBIDDEN,
            ],
            throttled_when_exhausted: vec![StatusCode::FORBIDDEN],
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

    /// The statuses of each rule: (always, with Retry-After, when exhausted).
    #[must_use]
    pub fn statuses(&self) -> (&[StatusCode], &[StatusCode], &[StatusCode]) {
        (
            &self.throttled,
            &self.throttled_with_retry_after,
            &self.throttled_when_exhausted,
        )
    }
}

impl ThrottleClassifier for DefaultClassifier {
    fn classify(&self, status: StatusCode, _: &HeaderMap, info: &RateLimitInfo) -> Signal {
        let throttled = self.throttled.contains(&status)
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
            (503, vec![], Signal::Neutral),
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
        assert_eq!(c.statuses().1, &[] as &[StatusCode]);
    }
}
