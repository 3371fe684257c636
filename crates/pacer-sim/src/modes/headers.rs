//! `headers`: the limiter paces to the server's own numbers.
//!
//! The model API sends IETF draft-11 `RateLimit-Policy` and `RateLimit` fields with every
//! response (and, as a leaky bucket, Shopify's `X-Shopify-Shop-Api-Call-Limit` beside them). Each instance parses them with the very parser the middleware uses
//! ([`RateLimitInfo::from_headers`]) and hands the remaining units and the reset to its limiter
//! ([`LimiterCore::follow_server`]): the rate becomes the remaining units spread over the time to
//! the reset, divided by the instance count. When the fields stop, the limiter's controller
//! (Pacer's) takes over again.

use super::{Client, ClientSetup, Mode, ModeError, Response, signal_of};
use crate::model::ModelHeaders;
use http::{HeaderMap, HeaderName, HeaderValue};
use pacer_core::{
    Acquired, Changes, ControllerKind, Feedback, LimiterCore, RateLimitInfo, Rejected, ServerQuota,
    Ticket, Timestamp,
};
use std::time::{Duration, SystemTime};

/// The `headers` mode: a limiter per instance that follows the API's rate-limit fields, with
/// Pacer's controller for when they stop.
#[derive(Debug, Clone, Copy)]
pub struct HeadersMode {
    controller: ControllerKind,
}

impl Default for HeadersMode {
    fn default() -> Self {
        HeadersMode {
            controller: ControllerKind::Pacer,
        }
    }
}

impl HeadersMode {
    /// The mode with another controller for when the fields stop.
    #[must_use]
    pub fn with_fallback(controller: ControllerKind) -> Self {
        HeadersMode { controller }
    }
}

impl Mode for HeadersMode {
    fn name(&self) -> &str {
        "headers"
    }

    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        let mut options = setup.limiter.clone();
        options.controller = self.controller;
        let core = LimiterCore::new(options, setup.now).map_err(|e| ModeError::InvalidOptions {
            name: self.name().to_owned(),
            message: e.to_string(),
        })?;
        Ok(Box::new(HeadersClient { core }))
    }

    fn wants_headers(&self) -> bool {
        true
    }
}

/// One instance's limiter, fed the server's numbers from each response's fields.
#[derive(Debug)]
pub struct HeadersClient {
    core: LimiterCore,
}

impl HeadersClient {
    /// The limiter.
    #[must_use]
    pub fn core(&self) -> &LimiterCore {
        &self.core
    }
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

/// What the fields of a response say of the quota, through Pacer's header parser. Draft-11
/// carries delta seconds only, so the wall clock the parser resolves dates against does not
/// matter; the virtual time is used.
#[must_use]
pub fn server_quota(headers: &ModelHeaders, now: Timestamp) -> Option<ServerQuota> {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + now.as_duration();
    ServerQuota::from_info(&RateLimitInfo::from_headers(&header_map(headers), wall))
}

impl Client for HeadersClient {
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, Rejected> {
        self.core.acquire(units, now)
    }

    fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        self.core.pop_ready(now)
    }

    fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.core.next_grant_at(now)
    }

    fn on_response(&mut self, response: &Response, now: Timestamp) -> Changes {
        let mut changes = match response.headers.and_then(|h| server_quota(&h, now)) {
            Some(quota) => self.core.follow_server(quota, now),
            None => Changes::default(),
        };
        let feedback = Feedback {
            units: response.units,
            sent_at: response.sent_at,
            signal: signal_of(response.verdict),
        };
        let more = self.core.on_response(feedback, now);
        changes.rate = more.rate.or(changes.rate);
        changes.paused_until = more.paused_until.or(changes.paused_until);
        changes.rejected.extend(more.rejected);
        changes
    }

    fn retry_delay(&self, _retry_after: Duration) -> Duration {
        Duration::ZERO
    }

    fn set_instance_count(&mut self, count: u32, now: Timestamp) -> Changes {
        self.core.set_instance_count(count, now).unwrap_or_default()
    }

    fn rate(&self) -> Option<f64> {
        Some(self.core.rate())
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
}
