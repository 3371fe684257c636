//! A GraphQL API's calculated query cost, read from a response's body: Shopify's
//! `extensions.cost`, the only rate-limit state its GraphQL Admin API reports.
//!
//! ```json
//! {"data": {…},
//!  "extensions": {"cost": {"requestedQueryCost": 101, "actualQueryCost": 46,
//!    "throttleStatus": {"maximumAvailable": 1000.0, "currentlyAvailable": 954,
//!                       "restoreRate": 50.0}}}}
//! ```
//!
//! The quota is a bucket of points that fills at `restoreRate` a second up to
//! `maximumAvailable`; a query is refused when the bucket holds less than its requested cost,
//! with an error whose `extensions.code` is `THROTTLED` (Shopify sends it with a 200 or a 429).
//! Pacer reads the bucket in queries of the cost of the query that reported it, the same state
//! as Shopify's REST call limit: see [`QueryCost::policy`].

use crate::{Dialect, Policy};
use serde::Deserialize;
use std::time::Duration;

/// The most of a response's body a driver reads for its query cost, when it is asked to
/// (`QueryCost` on: [`Rules::with_query_cost`](crate::Rules::with_query_cost)): 1 MiB. The cost comes after the data, at the end of the
/// document, so the whole body is read; a longer one is handed on unread past this prefix, and
/// its cost is not known.
pub const QUERY_COST_BODY_LIMIT: usize = 1024 * 1024;

/// What a GraphQL response's body said of its calculated query cost and of the bucket it is
/// paid from (Shopify's `extensions.cost`).
///
/// # Example
///
/// ```
/// use pacer_core::QueryCost;
/// use std::time::Duration;
///
/// let body = br#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],
///   "extensions":{"cost":{"requestedQueryCost":752,"actualQueryCost":null,
///   "throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":666,"restoreRate":50.0}}}}"#;
/// let cost = QueryCost::from_body(body).expect("a cost");
/// assert!(cost.throttled());
/// assert_eq!(cost.requested(), Some(752));
/// // 86 points are missing; 50 come back a second.
/// assert_eq!(cost.wait(), Some(Duration::from_millis(1720)));
/// let policy = cost.policy().expect("a policy");
/// assert_eq!((policy.limit(), policy.remaining()), (Some(1), Some(0)));
/// assert_eq!(policy.reset_after(), Some(Duration::from_millis(1720)), "until one fits");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCost {
    requested: Option<u64>,
    actual: Option<u64>,
    maximum: f64,
    available: f64,
    restore_rate: f64,
    throttled: bool,
    /// The limiter's units of the request that reported it (its `Cost`), at least 1.
    units: u64,
}

impl QueryCost {
    /// Reads a GraphQL response's body (JSON). `None` when it is not JSON or reports no sound
    /// `extensions.cost.throttleStatus` (a bucket of more than 0 points that fills at more than
    /// 0 a second, with at least 0 available; more than the maximum is taken as full) — unless
    /// its errors say `THROTTLED`: then a cost with no bucket, a throttle without a
    /// [`policy`](Self::policy) or a [`wait`](Self::wait).
    #[must_use]
    pub fn from_body(body: &[u8]) -> Option<QueryCost> {
        let doc: Document = serde_json::from_slice(body).ok()?;
        let cost = doc.extensions?.cost?;
        let sound = |x: f64| x.is_finite() && x >= 0.0;
        let points = |x: Option<f64>| x.filter(|x| sound(*x)).map(|x| x.ceil() as u64);
        let throttled = doc.errors.iter().flatten().any(says_throttled);
        // A refusal whose bucket says nothing usable is a throttle all the same: a cost with no
        // bucket (no policy, no wait).
        let no_bucket = || {
            throttled.then(|| QueryCost {
                requested: points(cost.requested_query_cost),
                actual: None,
                maximum: 0.0,
                available: 0.0,
                restore_rate: 0.0,
                throttled,
                units: 1,
            })
        };
        let Some(status) = &cost.throttle_status else {
            return no_bucket();
        };
        if !(sound(status.maximum_available)
            && sound(status.currently_available)
            && sound(status.restore_rate)
            && status.maximum_available > 0.0
            && status.restore_rate > 0.0)
        {
            return no_bucket();
        }
        Some(QueryCost {
            requested: points(cost.requested_query_cost),
            actual: points(cost.actual_query_cost),
            maximum: status.maximum_available,
            available: status.currently_available.min(status.maximum_available),
            restore_rate: status.restore_rate,
            throttled,
            units: 1,
        })
    }

    /// The same cost, reported to a request of `units` of the limiter's units (its `Cost`;
    /// 1 unless said): the [`policy`](Self::policy) counts in those units, each query like
    /// this one `units` of them. A request of one unit (the default cost) makes the policy count
    /// queries; one whose `Cost` is its actual points makes it count about points (with a
    /// `Cost` of its *requested* points and a smaller actual cost, the limit is the requested
    /// cost times the queries a full bucket lets through: above the bucket). 0 counts as 1.
    ///
    /// ```
    /// use pacer_core::QueryCost;
    ///
    /// let body = br#"{"data":{},"extensions":{"cost":{"requestedQueryCost":100,"actualQueryCost":100,
    ///   "throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":500,"restoreRate":50.0}}}}"#;
    /// let cost = QueryCost::from_body(body).expect("a cost");
    /// assert_eq!(cost.policy().and_then(|p| p.limit()), Some(10), "10 queries");
    /// let points = cost.with_units(100).policy().expect("a policy");
    /// assert_eq!((points.limit(), points.remaining()), (Some(1_000), Some(500)));
    /// ```
    #[must_use]
    pub fn with_units(mut self, units: u64) -> Self {
        self.units = units.max(1);
        self
    }

    /// True if the query was refused for want of points (an error whose `extensions.code` is
    /// `THROTTLED`, or whose message is `Throttled`): the response is a throttle whatever its
    /// status.
    #[must_use]
    pub fn throttled(&self) -> bool {
        self.throttled
    }

    /// The query's requested cost, the points the bucket had to hold for it to run.
    #[must_use]
    pub fn requested(&self) -> Option<u64> {
        self.requested
    }

    /// The query's actual cost (none when it did not run); the difference from the requested
    /// cost was given back to the bucket.
    #[must_use]
    pub fn actual(&self) -> Option<u64> {
        self.actual
    }

    /// The bucket's size in points (`maximumAvailable`).
    #[must_use]
    pub fn maximum_available(&self) -> f64 {
        self.maximum
    }

    /// The points in the bucket when the server answered (`currentlyAvailable`, at most the
    /// maximum).
    #[must_use]
    pub fn currently_available(&self) -> f64 {
        self.available
    }

    /// The points that come back a second (`restoreRate`).
    #[must_use]
    pub fn restore_rate(&self) -> f64 {
        self.restore_rate
    }

    /// The limiter's units of the request that reported it ([`with_units`](Self::with_units)).
    #[must_use]
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The points the bucket must hold for a query like this one to run (its requested cost,
    /// else its actual cost), and the points it keeps (its actual cost, else its requested
    /// cost: the rest is given back at once); each at least 1.
    fn per_query(&self) -> (f64, f64) {
        let need = self.requested.or(self.actual).unwrap_or(1).max(1);
        let take = self.actual.or(self.requested).unwrap_or(1).max(1);
        (need as f64, take as f64)
    }

    /// How many queries like this one `points` let through one after another.
    fn fit(&self, points: f64) -> f64 {
        let (need, take) = self.per_query();
        if points < need {
            0.0
        } else {
            ((points - need) / take).floor() + 1.0
        }
    }

    /// How long until the bucket holds this query's requested cost again: `None` when it holds
    /// it now.
    #[must_use]
    pub fn wait(&self) -> Option<Duration> {
        if self.restore_rate <= 0.0 {
            return None; // No bucket: nothing says when.
        }
        let missing = self.per_query().0 - self.available;
        (missing > 0.0).then(|| seconds(missing / self.restore_rate))
    }

    /// The bucket as a policy in requests, each a query like this one of
    /// [`with_units`](Self::with_units) units (1 unless said)
    /// ([`Dialect::ShopifyGraphql`]), as Shopify's REST call limit is read: the limit is the
    /// queries a full bucket lets through one after another (each needs its requested cost
    /// there and keeps its actual cost), the remaining those the bucket lets through now, the
    /// window the time a bucket takes to fill from empty (so that the limit over the window is
    /// about the restore rate in queries), and the reset the time until it is full again — or,
    /// when not one query fits, until one does. `None` when the query needs more than a full
    /// bucket holds (no wait lets it through: Shopify refuses it as too costly).
    #[must_use]
    pub fn policy(&self) -> Option<Policy> {
        let limit = self.fit(self.maximum);
        if limit < 1.0 {
            return None;
        }
        let remaining = self.fit(self.available);
        let secs = |points: f64| seconds(points.max(0.0) / self.restore_rate);
        let reset = match self.wait().filter(|_| remaining < 1.0) {
            Some(wait) => wait,
            None => secs(self.maximum - self.available),
        };
        let units = self.units as f64;
        Some(
            Policy::new(Dialect::ShopifyGraphql)
                .with_limit((limit * units) as u64)
                .with_remaining((remaining * units) as u64)
                .with_reset_after(reset)
                .with_window(secs(self.maximum)),
        )
    }
}

/// `secs` as a duration; one too long for a `Duration` (a hostile bucket: a huge maximum, a
/// restore rate next to nothing) is the longest, which the policy's and the `Retry-After`'s
/// bounds then cut to a year and to `MAX_RETRY_AFTER`.
fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// `THROTTLED` (Shopify's code) or, without a code, the message `Throttled`.
fn says_throttled(error: &serde_json::Value) -> bool {
    match error.pointer("/extensions/code").and_then(|c| c.as_str()) {
        Some(code) => code == "THROTTLED",
        None => error.get("message").and_then(|m| m.as_str()) == Some("Throttled"),
    }
}

/// The parts of a GraphQL response Pacer reads; `data` is skipped unbuilt.
#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    errors: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    extensions: Option<Extensions>,
}

#[derive(Deserialize)]
struct Extensions {
    #[serde(default)]
    cost: Option<Cost>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cost {
    #[serde(default)]
    requested_query_cost: Option<f64>,
    #[serde(default)]
    actual_query_cost: Option<f64>,
    #[serde(default)]
    throttle_status: Option<ThrottleStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThrottleStatus {
    maximum_available: f64,
    currently_available: f64,
    restore_rate: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(errors: &str, requested: &str, actual: &str, status: &str) -> Vec<u8> {
        format!(
            r#"{{"data":{{"shop":{{"name":"a"}}}}{errors},"extensions":{{"cost":{{
            "requestedQueryCost":{requested},"actualQueryCost":{actual},
            "throttleStatus":{status}}}}}}}"#
        )
        .into_bytes()
    }

    const THROTTLED: &str = r#","errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}]"#;

    fn status(max: f64, available: f64, rate: f64) -> String {
        format!(
            r#"{{"maximumAvailable":{max:?},"currentlyAvailable":{available:?},"restoreRate":{rate:?}}}"#
        )
    }

    #[test]
    fn a_success_reports_its_bucket_in_queries_of_its_cost() {
        let cost = QueryCost::from_body(&body("", "101", "46", &status(1000.0, 954.0, 50.0)))
            .expect("a cost");
        assert!(!cost.throttled());
        assert_eq!((cost.requested(), cost.actual()), (Some(101), Some(46)));
        assert_eq!(cost.wait(), None);
        let p = cost.policy().expect("a policy");
        assert_eq!(p.dialect(), Dialect::ShopifyGraphql);
        // Each query needs 101 points and keeps 46: a full bucket lets 20 through, 954 points
        // 19; full in 46 / 50 s; empty to full 20 s.
        assert_eq!((p.limit(), p.remaining()), (Some(20), Some(19)));
        assert_eq!(p.reset_after(), Some(Duration::from_millis(920)));
        assert_eq!(p.window(), Some(Duration::from_secs(20)));
        assert!(p.is_sound());
    }

    #[test]
    fn a_throttled_query_waits_for_its_missing_points() {
        let cost = QueryCost::from_body(&body(
            THROTTLED,
            "752",
            "null",
            &status(1000.0, 666.0, 50.0),
        ))
        .expect("a cost");
        assert!(cost.throttled());
        assert_eq!(cost.actual(), None);
        assert_eq!(cost.wait(), Some(Duration::from_millis(1720)));
        let p = cost.policy().expect("a policy");
        assert!(p.is_exhausted());
        // Not one query fits: the reset is when one does, not when the bucket is full.
        assert_eq!(p.reset_after(), Some(Duration::from_millis(1720)));
        // The message alone, as older versions wrote it.
        let message = r#","errors":[{"message":"Throttled"}]"#;
        let cost = QueryCost::from_body(&body(message, "10", "null", &status(100.0, 5.0, 5.0)));
        assert!(cost.expect("a cost").throttled());
        // Another error is no throttle.
        let other = r#","errors":[{"message":"Field 'x' doesn't exist","extensions":{"code":"undefinedField"}}]"#;
        let cost = QueryCost::from_body(&body(other, "1", "1", &status(100.0, 99.0, 5.0)));
        assert!(!cost.expect("a cost").throttled());
    }

    #[test]
    fn what_is_not_a_sound_bucket_reports_nothing() {
        for bad in [
            status(0.0, 0.0, 50.0),
            status(1000.0, 10.0, 0.0),
            status(1000.0, -1.0, 50.0),
            r#"{"maximumAvailable":"1000","currentlyAvailable":1,"restoreRate":1}"#.into(),
            r#"{"maximumAvailable":1000}"#.into(),
            "null".into(),
        ] {
            assert_eq!(
                QueryCost::from_body(&body("", "1", "1", &bad)),
                None,
                "{bad}"
            );
        }
        // Unless the query was refused for want of points: a throttle with no bucket.
        for bad in [status(0.0, 0.0, 0.0), "null".into()] {
            let cost = QueryCost::from_body(&body(THROTTLED, "2", "null", &bad)).expect("a cost");
            assert!(cost.throttled(), "{bad}");
            assert_eq!((cost.policy(), cost.wait()), (None, None), "{bad}");
        }
        for doc in [
            &b"not json"[..],
            b"{}",
            br#"{"data":{}}"#,
            b"[1,2]",
            br#"{"extensions":{}}"#,
        ] {
            assert_eq!(QueryCost::from_body(doc), None);
        }
    }

    proptest::proptest! {
        /// Whatever numbers a body holds, reading it never panics, and a policy it gives never
        /// has more remaining than its limit.
        #[test]
        fn any_numbers_read_without_a_panic(
            max in proptest::num::f64::ANY,
            available in proptest::num::f64::ANY,
            rate in proptest::num::f64::ANY,
            requested in proptest::num::f64::ANY,
            actual in proptest::num::f64::ANY,
            units in proptest::num::u64::ANY,
            throttled in proptest::bool::ANY,
        ) {
            // JSON has no infinities or NaN: such a number is written as the largest there is.
            let n = |x: f64| if x.is_finite() { format!("{x:e}") } else { "1.7976931348623157e308".into() };
            let status = format!(
                r#"{{"maximumAvailable":{},"currentlyAvailable":{},"restoreRate":{}}}"#,
                n(max), n(available), n(rate)
            );
            let errors = if throttled { THROTTLED } else { "" };
            if let Some(cost) = QueryCost::from_body(&body(errors, &n(requested), &n(actual), &status)) {
                let _ = cost.wait();
                if let Some(p) = cost.with_units(units).policy() {
                    proptest::prop_assert!(p.remaining() <= p.limit(), "{p:?}");
                    proptest::prop_assert!(p.window() <= Some(Duration::from_secs(365 * 24 * 3600)));
                }
            }
        }
    }

    #[test]
    fn a_hostile_bucket_is_bounded_not_a_panic() {
        let huge = r#"{"maximumAvailable":1e300,"currentlyAvailable":0,"restoreRate":1e-300}"#;
        let cost = QueryCost::from_body(&body(THROTTLED, "1e300", "null", huge)).expect("a cost");
        let p = cost.policy().expect("a policy");
        assert_eq!(
            p.window(),
            Some(Duration::from_secs(365 * 24 * 3600)),
            "a year at most"
        );
        assert_eq!(p.reset_after(), Some(Duration::from_secs(365 * 24 * 3600)));
        assert_eq!(cost.wait(), Some(Duration::MAX), "bounded where it is used");
        let reading = crate::Rules::default().read_with_cost(
            http::StatusCode::OK,
            &http::HeaderMap::new(),
            None,
            Some(&cost),
            std::time::SystemTime::UNIX_EPOCH,
            Duration::from_secs(60),
        );
        assert_eq!(reading.info().retry_after(), Some(Duration::from_secs(60)));
        let limit = cost.with_units(u64::MAX).policy().and_then(|p| p.limit());
        assert_eq!(limit, Some(u64::MAX), "saturated");
    }

    #[test]
    fn a_query_above_a_full_bucket_has_no_policy_and_an_odd_cost_is_read_whole() {
        let cost = QueryCost::from_body(&body("", "1200", "null", &status(1000.0, 1000.0, 50.0)));
        assert_eq!(cost.expect("a cost").policy(), None);
        // A fractional cost is rounded up; more available than the maximum is a full bucket;
        // a cost of 0 counts as 1.
        let cost =
            QueryCost::from_body(&body("", "2.5", "2", &status(10.0, 12.0, 1.0))).expect("a cost");
        assert_eq!(cost.requested(), Some(3));
        let p = cost.policy().expect("a policy");
        // Needs 3, keeps 2: 3 + 2 + 2 + 2 of 10.
        assert_eq!((p.limit(), p.remaining()), (Some(4), Some(4)));
        assert_eq!(p.reset_after(), Some(Duration::ZERO));
        let free = QueryCost::from_body(&body("", "0", "0", &status(10.0, 10.0, 1.0)));
        assert_eq!(
            free.expect("a cost").policy().and_then(|p| p.limit()),
            Some(10)
        );
    }
}
