//! A model API's limits, as OpenAI's rate-limit guide describes them: requests a minute and
//! tokens a minute, each a bucket that refills continuously to its limit (a minute from empty
//! to full); a request's tokens are reserved when it comes (its prompt and its `max_tokens`) and
//! adjusted to what it used at its end. Every answer carries OpenAI's six fields
//! (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations such as
//! `6m0s`), counted when the request came; a refusal is a bare 429 with them, as OpenAI's are.

use http::{HeaderMap, HeaderValue};
use pacer_core::Timestamp;
use std::time::Duration;

/// A model API's limits a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmQuota {
    /// Requests a minute.
    pub requests_per_minute: u64,
    /// Tokens a minute (prompt and output alike).
    pub tokens_per_minute: u64,
}

impl Default for LlmQuota {
    /// OpenAI's first usage tier for its GPT-4o models: 500 requests and 30,000 tokens a minute.
    fn default() -> Self {
        LlmQuota {
            requests_per_minute: 500,
            tokens_per_minute: 30_000,
        }
    }
}

/// One limit: what was taken, leaking back at the limit a minute.
#[derive(Debug, Clone)]
struct Taken {
    limit: f64,
    taken: f64,
    updated: Timestamp,
}

impl Taken {
    fn new(limit: u64) -> Self {
        Taken {
            limit: limit as f64,
            taken: 0.0,
            updated: Timestamp::ZERO,
        }
    }

    fn per_second(&self) -> f64 {
        self.limit / 60.0
    }

    fn refill(&mut self, now: Timestamp) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.taken = (self.taken - elapsed * self.per_second()).max(0.0);
        self.updated = self.updated.max(now);
    }

    fn remaining(&self) -> u64 {
        (self.limit - self.taken).max(0.0).floor() as u64
    }

    /// Until the bucket is full again.
    fn reset(&self) -> Duration {
        Duration::from_secs_f64(self.taken / self.per_second())
    }
}

/// What the API answered a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmAnswer {
    /// Whether it was taken (else a 429).
    pub accepted: bool,
    /// OpenAI's six rate-limit fields, as the request found them.
    pub headers: HeaderMap,
}

/// The server side of the `llm-batch` story.
#[derive(Debug, Clone)]
pub struct LlmApi {
    quota: LlmQuota,
    requests: Taken,
    tokens: Taken,
    used: u64,
    accepted: u64,
    refused: u64,
}

impl LlmApi {
    /// An API with `quota`, its buckets full at time 0.
    #[must_use]
    pub fn new(quota: LlmQuota) -> Self {
        LlmApi {
            quota,
            requests: Taken::new(quota.requests_per_minute),
            tokens: Taken::new(quota.tokens_per_minute),
            used: 0,
            accepted: 0,
            refused: 0,
        }
    }

    /// The API's limits.
    #[must_use]
    pub fn quota(&self) -> LlmQuota {
        self.quota
    }

    /// A request that reserves `reserved` tokens (its prompt and its `max_tokens`) comes at
    /// `now`: taken if a request and the tokens are left, refused with a 429 if not.
    pub fn offer(&mut self, reserved: u64, now: Timestamp) -> LlmAnswer {
        self.requests.refill(now);
        self.tokens.refill(now);
        let fits = self.requests.remaining() >= 1 && self.tokens.remaining() >= reserved;
        if fits {
            self.requests.taken += 1.0;
            self.tokens.taken += reserved as f64;
            self.accepted += 1;
        } else {
            self.refused += 1;
        }
        LlmAnswer {
            accepted: fits,
            headers: self.headers(),
        }
    }

    /// A request taken with `reserved` tokens ended at `now` having used `used`: what it
    /// reserved above that comes back (what it used above it is taken), and `used` is counted.
    pub fn complete(&mut self, reserved: u64, used: u64, now: Timestamp) {
        self.tokens.refill(now);
        self.tokens.taken = (self.tokens.taken + used as f64 - reserved as f64).max(0.0);
        self.used += used;
    }

    /// The tokens the requests that ended used, in all.
    #[must_use]
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The requests refused, in all.
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The most tokens the API lets through in `run`: its full bucket at the start and its
    /// refill since.
    #[must_use]
    pub fn most_tokens(&self, run: Duration) -> f64 {
        let limit = self.quota.tokens_per_minute as f64;
        limit + limit * run.as_secs_f64() / 60.0
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (unit, taken) in [("requests", &self.requests), ("tokens", &self.tokens)] {
            let fields = [
                ("limit", (taken.limit as u64).to_string()),
                ("remaining", taken.remaining().to_string()),
                ("reset", go_duration(taken.reset())),
            ];
            for (what, value) in fields {
                let name = format!("x-ratelimit-{what}-{unit}");
                let name = http::HeaderName::from_bytes(name.as_bytes()).expect("a valid name");
                h.insert(name, HeaderValue::from_str(&value).expect("a valid value"));
            }
        }
        h
    }
}

/// `d` as OpenAI writes its resets (Go's `time.Duration`): `20ms`, `1.5s`, `6m0s`; whole
/// milliseconds, rounded up.
#[must_use]
pub fn go_duration(d: Duration) -> String {
    let ms = d.as_nanos().div_ceil(1_000_000);
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let (minutes, ms) = (ms / 60_000, ms % 60_000);
    let secs = if ms % 1_000 == 0 {
        format!("{}s", ms / 1_000)
    } else {
        let s = format!("{}.{:03}", ms / 1_000, ms % 1_000);
        format!("{}s", s.trim_end_matches('0'))
    };
    if minutes == 0 {
        secs
    } else {
        format!("{minutes}m{secs}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'h>(h: &'h HeaderMap, name: &str) -> &'h str {
        h.get(name).unwrap().to_str().unwrap()
    }

    #[test]
    fn resets_are_written_as_go_durations() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(ms(0)), "0ms");
        assert_eq!(go_duration(ms(20)), "20ms");
        assert_eq!(go_duration(Duration::from_micros(19_001)), "20ms");
        assert_eq!(go_duration(ms(1_500)), "1.5s");
        assert_eq!(go_duration(ms(1_000)), "1s");
        assert_eq!(go_duration(ms(360_000)), "6m0s");
        assert_eq!(go_duration(ms(61_250)), "1m1.25s");
    }

    #[test]
    fn tokens_are_reserved_at_the_request_and_adjusted_at_its_end() {
        let t0 = Timestamp::ZERO;
        let mut api = LlmApi::new(LlmQuota {
            requests_per_minute: 60,
            tokens_per_minute: 6_000,
        });
        let first = api.offer(5_000, t0);
        assert!(first.accepted);
        assert_eq!(
            field(&first.headers, "x-ratelimit-remaining-tokens"),
            "1000"
        );
        assert_eq!(field(&first.headers, "x-ratelimit-reset-tokens"), "50s");
        assert_eq!(
            field(&first.headers, "x-ratelimit-remaining-requests"),
            "59"
        );
        assert_eq!(field(&first.headers, "x-ratelimit-limit-tokens"), "6000");
        // Its reservation holds the next one out: a 429 with the fields.
        assert!(!api.offer(2_000, t0).accepted);
        assert_eq!(api.refused(), 1);
        // It used 1,000 of its 5,000: 4,000 come back at its end, and 1 s refilled 100.
        api.complete(5_000, 1_000, t0 + Duration::from_secs(1));
        let third = api.offer(2_000, t0 + Duration::from_secs(1));
        assert!(third.accepted);
        assert_eq!(
            field(&third.headers, "x-ratelimit-remaining-tokens"),
            "3100"
        );
        assert_eq!(api.used(), 1_000);
        assert_eq!(api.most_tokens(Duration::from_secs(60)), 12_000.0);
    }

    #[test]
    fn the_requests_limit_refuses_too() {
        let t0 = Timestamp::ZERO;
        let mut api = LlmApi::new(LlmQuota {
            requests_per_minute: 2,
            tokens_per_minute: 6_000,
        });
        assert!(api.offer(1, t0).accepted);
        assert!(api.offer(1, t0).accepted);
        let third = api.offer(1, t0);
        assert!(!third.accepted);
        assert_eq!(field(&third.headers, "x-ratelimit-reset-requests"), "1m0s");
        assert!(api.offer(1, t0 + Duration::from_secs(30)).accepted);
    }
}
