//! `headers`: the limiter paces to the server's own numbers, as the middleware does by default.
//!
//! The model API sends IETF draft-11 `RateLimit-Policy` and `RateLimit` fields with every
//! response (and, as a leaky bucket, Shopify's `X-Shopify-Shop-Api-Call-Limit` beside them).
//! Each instance runs the middleware's engine on them ([`ExchangeClient`], as every limiter mode
//! does): the limiter paces to the remaining units and the reset
//! ([`pacer_core::Limiter::follow_server`]: the remaining spread over the time to the reset,
//! divided by the instance count), and each attempt is held for the server's stop and the
//! proactive delay. When the fields stop, the limiter's controller (Pacer's) takes over again.

use super::{Client, ClientSetup, ExchangeClient, Mode, ModeError, Response};
use crate::model::{ModelHeaders, Verdict};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use pacer_core::{ControllerKind, QueryCost, RateLimitInfo, Rules, ServerQuota, Timestamp};
use std::time::{Duration, SystemTime};

/// The `headers` mode: a limiter per instance that follows the API's rate-limit fields, with
/// Pacer's controller for when they stop.
///
/// As `graphql` ([`HeadersMode::graphql`]) the API reports its numbers as Shopify's GraphQL
/// Admin API does, in each response's body and in no header: `extensions.cost` with the
/// request's units as its requested and actual cost, the quota as `maximumAvailable`, what is
/// left as `currentlyAvailable` and the quota's pace as `restoreRate`; a refusal is a `200`
/// whose error says `THROTTLED`, without `Retry-After`. The limiter reads it with `QueryCost`
/// on ([`pacer_core::Rules::read_with_cost`]). Shopify's bucket is the `leaky-bucket` shape;
/// against the other shapes the numbers are read as a bucket's all the same.
#[derive(Debug, Clone, Copy)]
pub struct HeadersMode {
    controller: ControllerKind,
    graphql: bool,
}

impl Default for HeadersMode {
    fn default() -> Self {
        HeadersMode {
            controller: ControllerKind::Pacer,
            graphql: false,
        }
    }
}

impl HeadersMode {
    /// The `headers` mode with another controller for when the fields stop.
    #[must_use]
    pub fn with_fallback(controller: ControllerKind) -> Self {
        HeadersMode {
            controller,
            graphql: false,
        }
    }

    /// `graphql`: the API's numbers in a GraphQL cost body, read with `QueryCost` on.
    #[must_use]
    pub fn graphql() -> Self {
        HeadersMode {
            graphql: true,
            ..HeadersMode::default()
        }
    }
}

impl Mode for HeadersMode {
    fn name(&self) -> &str {
        if self.graphql { "graphql" } else { "headers" }
    }

    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        let mut options = setup.limiter.clone();
        options.controller = self.controller;
        let rules = Rules::default().with_max_attempts(setup.max_attempts);
        let client = ExchangeClient::new(options, rules, None, None, setup.now).map_err(|e| {
            ModeError::InvalidOptions {
                name: self.name().to_owned(),
                message: e.to_string(),
            }
        })?;
        Ok(Box::new(if self.graphql {
            client.reading_query_cost()
        } else {
            client
        }))
    }

    fn wants_headers(&self) -> bool {
        true
    }
}

/// The response as Shopify's GraphQL Admin API would send it: a `200` whose body says the
/// request's cost (its units) and the bucket's state, and whose error says `THROTTLED` when it
/// was refused; the body read as the middleware reads it ([`QueryCost::from_body`]). Without
/// the model's numbers, the status as [`http_response`] gives it and no cost.
pub(crate) fn graphql_response(response: &Response) -> (StatusCode, Option<QueryCost>) {
    let Some(h) = response.headers.as_ref() else {
        return (http_response(response).0, None);
    };
    let throttled = matches!(response.verdict, Verdict::Throttled { .. });
    let (head, actual) = if throttled {
        (
            r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]"#,
            "null".to_owned(),
        )
    } else {
        (r#""data":{}"#, response.units.to_string())
    };
    let restore_rate = h.quota as f64 / h.window_secs.max(1) as f64;
    let body = format!(
        r#"{{{head},"extensions":{{"cost":{{"requestedQueryCost":{},"actualQueryCost":{actual},"throttleStatus":{{"maximumAvailable":{}.0,"currentlyAvailable":{},"restoreRate":{restore_rate:?}}}}}}}}}"#,
        response.units, h.quota, h.remaining
    );
    let cost = QueryCost::from_body(body.as_bytes()).map(|c| c.with_units(response.units));
    (StatusCode::OK, cost)
}

/// The response's fields as a real response would carry them.
#[must_use]
pub fn header_map(headers: &ModelHeaders) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers.fields() {
        if let Ok(value) = HeaderValue::from_str(&value) {
            map.insert(HeaderName::from_static(lowercase(name)), value);
        }
    }
    map
}

fn lowercase(name: &'static str) -> &'static str {
    match name {
        "RateLimit-Policy" => "ratelimit-policy",
        "RateLimit" => "ratelimit",
        "X-Shopify-Shop-Api-Call-Limit" => "x-shopify-shop-api-call-limit",
        other => other,
    }
}

/// The wall clock the fields' dates are resolved against at virtual time `now`. Draft-11 and
/// the model's `Retry-After` carry delta seconds only, so it does not matter which.
pub(crate) fn wall(now: Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + now.as_duration()
}

/// What the fields of a response say of the quota, through Pacer's header parser.
#[must_use]
pub fn server_quota(headers: &ModelHeaders, now: Timestamp) -> Option<ServerQuota> {
    ServerQuota::from_info(&RateLimitInfo::from_headers(
        &header_map(headers),
        wall(now),
    ))
}

/// The response as the middleware would see it: its status, its fields and its `Retry-After`.
pub(crate) fn http_response(response: &Response) -> (StatusCode, HeaderMap) {
    let mut map = response
        .headers
        .as_ref()
        .map(header_map)
        .unwrap_or_default();
    match response.verdict {
        Verdict::Accepted => (StatusCode::OK, map),
        Verdict::Throttled { retry_after } => {
            if let Some(after) = retry_after {
                // Whole seconds, as the model sends them.
                let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
                map.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
            }
            (StatusCode::TOO_MANY_REQUESTS, map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_go_through_the_real_parser() {
        let h = ModelHeaders {
            quota: 3000,
            window_secs: 60,
            remaining: 50,
            reset_secs: 2,
            call_limit: false,
        };
        let q = server_quota(&h, Timestamp::ZERO).unwrap();
        assert_eq!(
            q,
            ServerQuota::new(50, Duration::from_secs(2)).with_policy(3000, Duration::from_secs(60))
        );
        assert_eq!(q.pace(), 1500.0);
        // An empty window says "t=0": the remaining is spread over at least a second.
        let empty = ModelHeaders {
            remaining: 3000,
            reset_secs: 0,
            ..h
        };
        assert_eq!(
            server_quota(&empty, Timestamp::ZERO).unwrap().pace(),
            180_000.0
        );
    }

    #[test]
    fn a_graphql_body_goes_through_the_real_reader_in_the_request_s_units() {
        let h = ModelHeaders {
            quota: 3000,
            window_secs: 10,
            remaining: 600,
            reset_secs: 8,
            call_limit: true,
        };
        let accepted = Response {
            units: 5,
            sent_at: Timestamp::ZERO,
            verdict: Verdict::Accepted,
            headers: Some(h),
        };
        let (status, cost) = graphql_response(&accepted);
        assert_eq!(status, StatusCode::OK);
        let cost = cost.expect("a cost");
        assert!(!cost.throttled());
        assert_eq!((cost.requested(), cost.actual()), (Some(5), Some(5)));
        // 3,000 units leaking 300 a second; the bucket counted in units (queries of 5).
        let p = cost.policy().expect("a policy");
        assert_eq!((p.limit(), p.remaining()), (Some(3000), Some(600)));
        assert_eq!(p.window(), Some(Duration::from_secs(10)));
        let refused = Response {
            verdict: Verdict::Throttled { retry_after: None },
            headers: Some(ModelHeaders { remaining: 2, ..h }),
            ..accepted
        };
        let (status, cost) = graphql_response(&refused);
        assert_eq!(status, StatusCode::OK, "Shopify refuses with a 200");
        let cost = cost.expect("a cost");
        assert!(cost.throttled());
        // 3 units missing, 300 back a second.
        assert_eq!(cost.wait(), Some(Duration::from_millis(10)));
        let bare = Response {
            headers: None,
            ..refused
        };
        assert_eq!(
            graphql_response(&bare),
            (StatusCode::TOO_MANY_REQUESTS, None)
        );
    }

    use crate::modes::{Answered, ExchangeClient, Settled};

    /// The model API's one endpoint, as the engine keys it.
    const KEY: &str = "model-api";

    fn client() -> Box<dyn Client> {
        let mut limiter = pacer_core::LimiterOptions::default();
        limiter.max_wait = Duration::from_secs(30);
        let setup = ClientSetup {
            instance: 0,
            limiter,
            now: Timestamp::ZERO,
            max_attempts: pacer_core::Rules::DEFAULT_MAX_ATTEMPTS,
        };
        HeadersMode::default().client(&setup).unwrap()
    }

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_secs(secs))
    }

    fn headers(remaining: u64, reset_secs: u64) -> Option<ModelHeaders> {
        Some(ModelHeaders {
            quota: 100,
            window_secs: 60,
            remaining,
            reset_secs,
            call_limit: false,
        })
    }

    /// Request `request`'s attempt begins at `now` and is looked at then.
    fn begin(c: &mut ExchangeClient, request: u32, now: Timestamp) -> Vec<(u32, Settled)> {
        c.begin(request, 1, now);
        c.settle(now)
    }

    /// Looks at the waits each time one is due until one ends: when, and how.
    fn until_settled(c: &mut ExchangeClient) -> (Timestamp, Vec<(u32, Settled)>) {
        loop {
            let due = c.next_at().expect("a wait due");
            let settled = c.settle(due);
            if !settled.is_empty() {
                return (due, settled);
            }
        }
    }

    fn go(attempt: u32, waited: Duration) -> Settled {
        Settled::Go { attempt, waited }
    }

    #[test]
    fn a_retry_after_holds_the_next_attempt_and_a_hold_past_max_wait_is_refused() {
        let mut boxed = client();
        let c = boxed.exchanges().expect("the engine's exchanges");
        assert_eq!(
            begin(c, 0, at(0)),
            [(0, go(1, Duration::ZERO))],
            "nothing known yet"
        );
        let throttled = Response {
            units: 1,
            sent_at: at(0),
            verdict: Verdict::Throttled {
                retry_after: Some(Duration::from_secs(7)),
            },
            headers: headers(0, 7),
        };
        assert_eq!(c.answered(0, &throttled, at(0)), Answered::Retry);
        assert_eq!(begin(c, 0, at(0)), [], "held by the stop");
        assert_eq!(c.next_at(), Some(at(7)), "the stop's end");
        // Then the limiter's queue, at the rate the throttle cut it to.
        let (sent, settled) = until_settled(c);
        assert!(sent >= at(7), "{sent:?}");
        assert_eq!(settled, [(0, go(2, sent - at(0)))]);
        let long = Response {
            sent_at: sent,
            verdict: Verdict::Throttled {
                retry_after: Some(Duration::from_secs(45)),
            },
            headers: headers(0, 45),
            ..throttled
        };
        let back = sent + Duration::from_secs(1);
        assert_eq!(c.answered(0, &long, back), Answered::Retry);
        assert_eq!(
            begin(c, 0, back),
            [(0, Settled::Refused)],
            "45 s past a MaxWait of 30 s"
        );
    }

    #[test]
    fn a_low_remaining_is_met_with_the_proactive_delay_of_the_middleware() {
        let mut boxed = client();
        let c = boxed.exchanges().expect("the engine's exchanges");
        assert_eq!(begin(c, 0, at(0)), [(0, go(1, Duration::ZERO))]);
        let low = Response {
            units: 1,
            sent_at: at(0),
            verdict: Verdict::Accepted,
            headers: headers(5, 30),
        };
        assert_eq!(c.answered(0, &low, at(0)), Answered::Done);
        let expected = pacer_core::ThrottlingAlgorithm::evaluate(
            &pacer_core::Percentage::default(),
            &pacer_core::ThrottlingContext::new(
                &RateLimitInfo::from_headers(&header_map(&low.headers.unwrap()), wall(at(0)))
                    .into_advisory(),
                KEY,
            )
            .with_since_last_request(Some(Duration::ZERO)),
        )
        .delay();
        assert!(
            !expected.is_zero(),
            "5 of 100 left: the percentage rule delays"
        );
        assert_eq!(begin(c, 1, at(0)), [], "delayed");
        let due = c.next_at().expect("a delay");
        assert_eq!(due, at(0) + expected);
        assert_eq!(c.settle(due), [(1, go(1, expected))]);
        let plenty = Response {
            headers: headers(90, 30),
            sent_at: due,
            ..low
        };
        assert_eq!(c.answered(1, &plenty, due), Answered::Done);
        // No proactive delay with 90 left: the next waits for the pace the fields set alone
        // (90 in 30 s), a fraction of the delay 5 left called for.
        let settled = match begin(c, 2, due) {
            settled if settled.is_empty() => until_settled(c).1,
            settled => settled,
        };
        let [(2, Settled::Go { waited, .. })] = settled[..] else {
            panic!("{settled:?}")
        };
        assert!(waited < expected / 2, "{waited:?} against {expected:?}");
    }
}
