//! A model API's limits, in one of two dialects ([`LlmDialect`]).
//!
//! **OpenAI** (its rate-limit guide): requests a minute and tokens a minute, each a bucket that
//! refills continuously to its limit (a minute from empty to full); a request's tokens are
//! reserved when it comes (its prompt and its `max_tokens`) and adjusted to what it used at its
//! end. Every answer carries OpenAI's six fields
//! (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations such as
//! `6m0s`), counted when the request came; a refusal is a bare 429 with them, as OpenAI's are.
//!
//! **Anthropic** (docs.anthropic.com, "Rate limits"): requests (RPM), input tokens (ITPM) and
//! output tokens (OTPM) a minute, three such buckets. A request takes 1 request, its prompt from
//! ITPM and its `max_tokens` from OTPM when it comes ("OTPM rate limits are estimated based on
//! max_tokens at the beginning of each request and adjusted at the end of the request"); at its
//! end OTPM gets back what it reserved above the output it wrote, and ITPM nothing. Every answer
//! carries `anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-` and
//! `{limit,remaining,reset}` (`tokens` is the input or output bucket with the fewer tokens left), resets as RFC 3339 times
//! of when the bucket is full again (whole seconds, rounded up), token counts left rounded down
//! to the thousand ("values may be rounded"); a 429 adds `retry-after`, whole seconds until the
//! request would fit.
//!
//! Times are story time; an API served on the real clock faster than real time
//! ([`LlmApi::with_speed`]) writes its resets in real time, as a client reads them, and
//! Anthropic's dates as story 0's wall time plus the real time since.

use crate::Speed;
use http::{HeaderMap, HeaderName, HeaderValue};
use pacer_core::Timestamp;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The path of OpenAI's chat completions endpoint.
pub const CHAT_COMPLETIONS_PATH: &str = "/v1/chat/completions";

/// The path of Anthropic's messages endpoint.
pub const MESSAGES_PATH: &str = "/v1/messages";

/// Whose model API `serve --llm` serves: its route, its bodies, its limits and its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LlmDialect {
    /// OpenAI: `POST /v1/chat/completions`, requests and tokens a minute ([`LlmQuota`]), the six
    /// `x-ratelimit-*` fields with Go-duration resets, a 429 without `retry-after`. The default.
    #[default]
    OpenAi,
    /// Anthropic: `POST /v1/messages`, requests, input tokens and output tokens a minute
    /// ([`AnthropicQuota`]), the `anthropic-ratelimit-*` fields with RFC 3339 resets, a 429 with
    /// `retry-after`.
    Anthropic,
}

impl LlmDialect {
    /// Its name on the command line and in `/stats`: `openai` or `anthropic`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LlmDialect::OpenAi => "openai",
            LlmDialect::Anthropic => "anthropic",
        }
    }

    /// The path of its one endpoint.
    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            LlmDialect::OpenAi => CHAT_COMPLETIONS_PATH,
            LlmDialect::Anthropic => MESSAGES_PATH,
        }
    }
}

impl FromStr for LlmDialect {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(LlmDialect::OpenAi),
            "anthropic" => Ok(LlmDialect::Anthropic),
            _ => Err(format!(
                "unknown model API {s:?}: expected openai or anthropic"
            )),
        }
    }
}

impl fmt::Display for LlmDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Anthropic's limits a minute, per model: requests (RPM), input tokens (ITPM) and output
/// tokens (OTPM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnthropicQuota {
    /// Requests a minute.
    pub requests_per_minute: u64,
    /// Input (prompt) tokens a minute.
    pub input_tokens_per_minute: u64,
    /// Output tokens a minute, reserved as `max_tokens` when a request comes.
    pub output_tokens_per_minute: u64,
}

impl Default for AnthropicQuota {
    /// Anthropic's first usage tier for Claude Sonnet: 50 requests, 30,000 input tokens and
    /// 8,000 output tokens a minute.
    fn default() -> Self {
        AnthropicQuota {
            requests_per_minute: 50,
            input_tokens_per_minute: 30_000,
            output_tokens_per_minute: 8_000,
        }
    }
}

/// A model API's limits a minute, OpenAI's.
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

/// Anthropic rounds the token counts left it reports ("values may be rounded"): down to this.
const TOKENS_ROUNDED_TO: u64 = 1_000;

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

    fn left(&self) -> f64 {
        (self.limit - self.taken).max(0.0)
    }

    fn remaining(&self) -> u64 {
        self.left().floor() as u64
    }

    /// Until the bucket is full again.
    fn reset(&self) -> Duration {
        Duration::from_secs_f64(self.taken / self.per_second())
    }

    /// Until `need` is left: as long as the bucket takes to fill when it can never hold it.
    fn until_left(&self, need: u64) -> Duration {
        let short = (need as f64).min(self.limit) - self.left();
        Duration::from_secs_f64(short.max(0.0) / self.per_second())
    }
}

/// What the API answered a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmAnswer {
    /// Whether it was taken (else a 429).
    pub accepted: bool,
    /// The dialect's rate-limit fields, as the request found them (and Anthropic's
    /// `retry-after` on a refusal).
    pub headers: HeaderMap,
    /// Whether no request was left when it came: on a refusal, the requests limit refused it
    /// (the tokens may have too); false on a refusal by a tokens limit alone, and on an
    /// acceptance.
    pub no_request_left: bool,
    /// On a refusal, the first limit short of what the request needs: `"requests"`, then
    /// `"tokens"` (OpenAI) or `"input tokens"` and `"output tokens"` (Anthropic); `None` on an
    /// acceptance.
    pub limited_by: Option<&'static str>,
    /// On an Anthropic refusal, its `retry-after`: whole real seconds, rounded up and at least
    /// 1, until every limit has what the request needs (until a limit is full, for a request
    /// larger than it). `None` on an acceptance and from OpenAI, which sends none.
    pub retry_after_secs: Option<u64>,
}

/// The server side of the `llm-batch` story and of `serve --llm`: OpenAI's limits
/// ([`LlmApi::new`]) or Anthropic's ([`LlmApi::anthropic`]).
#[derive(Debug, Clone)]
pub struct LlmApi {
    quota: LlmQuota,
    anthropic: Option<AnthropicQuota>,
    requests: Taken,
    /// OpenAI's tokens a minute, or Anthropic's input tokens a minute.
    tokens: Taken,
    /// Anthropic's output tokens a minute.
    output: Option<Taken>,
    used: u64,
    accepted: u64,
    refused: u64,
    speed: Speed,
    /// The wall time story time 0 stands for (Anthropic's dates).
    wall_origin: SystemTime,
}

impl LlmApi {
    /// An API with OpenAI's limits `quota`, its buckets full at time 0.
    #[must_use]
    pub fn new(quota: LlmQuota) -> Self {
        LlmApi {
            quota,
            anthropic: None,
            requests: Taken::new(quota.requests_per_minute),
            tokens: Taken::new(quota.tokens_per_minute),
            output: None,
            used: 0,
            accepted: 0,
            refused: 0,
            speed: Speed::REAL_TIME,
            wall_origin: UNIX_EPOCH,
        }
    }

    /// An API with Anthropic's limits `quota`, its buckets full at time 0, which stands for the
    /// wall time `wall_origin` in its RFC 3339 resets. Its [`quota`](Self::quota) is its
    /// requests and its input and output tokens together.
    #[must_use]
    pub fn anthropic(quota: AnthropicQuota, wall_origin: SystemTime) -> Self {
        let tokens = quota
            .input_tokens_per_minute
            .saturating_add(quota.output_tokens_per_minute);
        LlmApi {
            anthropic: Some(quota),
            tokens: Taken::new(quota.input_tokens_per_minute),
            output: Some(Taken::new(quota.output_tokens_per_minute)),
            wall_origin,
            ..LlmApi::new(LlmQuota {
                requests_per_minute: quota.requests_per_minute,
                tokens_per_minute: tokens,
            })
        }
    }

    /// The API with its resets written in real time at `speed` (story durations divided by it),
    /// for an API served on the real clock with story time running `speed` times faster. The
    /// limits stay per story minute; at [`Speed::REAL_TIME`] (the default) nothing changes.
    #[must_use]
    pub fn with_speed(mut self, speed: Speed) -> Self {
        self.speed = speed;
        self
    }

    /// The API's limits: OpenAI's, or Anthropic's requests and its input and output tokens
    /// summed ([`anthropic_quota`](Self::anthropic_quota) has them apart).
    #[must_use]
    pub fn quota(&self) -> LlmQuota {
        self.quota
    }

    /// Anthropic's limits, for an API made by [`LlmApi::anthropic`].
    #[must_use]
    pub fn anthropic_quota(&self) -> Option<AnthropicQuota> {
        self.anthropic
    }

    /// Whose limits and fields the API has.
    #[must_use]
    pub fn dialect(&self) -> LlmDialect {
        if self.anthropic.is_some() {
            LlmDialect::Anthropic
        } else {
            LlmDialect::OpenAi
        }
    }

    /// A request that reserves `reserved` tokens comes at `now`: as
    /// [`offer_split`](Self::offer_split) with a prompt of 0 and `reserved` as its `max_tokens`
    /// (for OpenAI's one tokens limit, the split does not matter).
    pub fn offer(&mut self, reserved: u64, now: Timestamp) -> LlmAnswer {
        self.offer_split(0, reserved, now)
    }

    /// A request of `prompt` input tokens and `max_tokens` comes at `now`: taken if a request
    /// and the tokens are left, refused with a 429 if not. OpenAI reserves both from its tokens
    /// limit; Anthropic the prompt from its input tokens, `max_tokens` from its output tokens.
    pub fn offer_split(&mut self, prompt: u64, max_tokens: u64, now: Timestamp) -> LlmAnswer {
        self.requests.refill(now);
        self.tokens.refill(now);
        if let Some(output) = &mut self.output {
            output.refill(now);
        }
        // What each limit must have left, in the order a refusal names them; OpenAI's third
        // need is empty (its one tokens limit takes both).
        let needs = match &self.output {
            None => [
                (1, &self.requests, "requests"),
                (prompt.saturating_add(max_tokens), &self.tokens, "tokens"),
                (0, &self.tokens, "tokens"),
            ],
            Some(output) => [
                (1, &self.requests, "requests"),
                (prompt, &self.tokens, "input tokens"),
                (max_tokens, output, "output tokens"),
            ],
        };
        let short = needs
            .iter()
            .filter(|(need, taken, _)| taken.remaining() < *need);
        let limited_by = short.clone().next().map(|(_, _, name)| *name);
        let wait = short.map(|(need, taken, _)| taken.until_left(*need)).max();
        let no_request_left = self.requests.remaining() < 1;
        let mut retry_after_secs = None;
        if limited_by.is_none() {
            self.requests.taken += 1.0;
            match &mut self.output {
                None => self.tokens.taken += prompt.saturating_add(max_tokens) as f64,
                Some(output) => {
                    self.tokens.taken += prompt as f64;
                    output.taken += max_tokens as f64;
                }
            }
            self.accepted += 1;
        } else {
            self.refused += 1;
            if self.anthropic.is_some() {
                let real = self.real(wait.unwrap_or_default()).as_secs_f64();
                retry_after_secs = Some((real.ceil() as u64).max(1));
            }
        }
        let mut headers = match self.output {
            None => self.openai_headers(),
            Some(_) => self.anthropic_headers(now),
        };
        if let Some(secs) = retry_after_secs {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        LlmAnswer {
            accepted: limited_by.is_none(),
            headers,
            no_request_left: limited_by.is_some() && no_request_left,
            limited_by,
            retry_after_secs,
        }
    }

    /// A request taken with `reserved` tokens ended at `now` having used `used`: as
    /// [`complete_split`](Self::complete_split) with a prompt of 0, `reserved` as its
    /// `max_tokens` and `used` as its output.
    pub fn complete(&mut self, reserved: u64, used: u64, now: Timestamp) {
        self.complete_split(0, reserved, used, now);
    }

    /// A request taken with `prompt` input tokens and `max_tokens` ended at `now` having written
    /// `output` tokens: what it reserved above that comes back (what it wrote above it is
    /// taken), from OpenAI's tokens limit or Anthropic's output tokens (its input tokens stay
    /// taken), and its prompt and output are counted as [`used`](Self::used).
    pub fn complete_split(&mut self, prompt: u64, max_tokens: u64, output: u64, now: Timestamp) {
        let (bucket, reserved, used) = match &mut self.output {
            None => (
                &mut self.tokens,
                prompt.saturating_add(max_tokens),
                prompt.saturating_add(output),
            ),
            Some(bucket) => (bucket, max_tokens, output),
        };
        bucket.refill(now);
        bucket.taken = (bucket.taken + used as f64 - reserved as f64).max(0.0);
        self.used = self.used.saturating_add(prompt).saturating_add(output);
    }

    /// The tokens the requests that ended used (input and output), in all.
    #[must_use]
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The requests refused, in all.
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The most tokens the API lets through in `run`: its full buckets at the start and their
    /// refill since (Anthropic's input and output tokens summed).
    #[must_use]
    pub fn most_tokens(&self, run: Duration) -> f64 {
        let limit = self.quota.tokens_per_minute as f64;
        limit + limit * run.as_secs_f64() / 60.0
    }

    fn openai_headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (unit, taken) in [("requests", &self.requests), ("tokens", &self.tokens)] {
            let fields = [
                ("limit", (taken.limit as u64).to_string()),
                ("remaining", taken.remaining().to_string()),
                ("reset", go_duration(self.real(taken.reset()))),
            ];
            for (what, value) in fields {
                insert(&mut h, &format!("x-ratelimit-{what}-{unit}"), &value);
            }
        }
        h
    }

    fn anthropic_headers(&self, now: Timestamp) -> HeaderMap {
        let output = self.output.as_ref().unwrap_or(&self.tokens);
        let input = &self.tokens;
        let fewer = if output.left() < input.left() {
            output
        } else {
            input
        };
        let mut h = HeaderMap::new();
        for (name, taken) in [
            ("requests", &self.requests),
            ("input-tokens", input),
            ("output-tokens", output),
            ("tokens", fewer),
        ] {
            let remaining = match name {
                "requests" => taken.remaining(),
                _ => taken.remaining() / TOKENS_ROUNDED_TO * TOKENS_ROUNDED_TO,
            };
            let full_at = self.wall_origin + self.real(now.as_duration() + taken.reset());
            let fields = [
                ("limit", (taken.limit as u64).to_string()),
                ("remaining", remaining.to_string()),
                ("reset", rfc3339(full_at)),
            ];
            for (what, value) in fields {
                insert(
                    &mut h,
                    &format!("anthropic-ratelimit-{name}-{what}"),
                    &value,
                );
            }
        }
        h
    }

    /// A story duration as a client on the real clock reads it.
    fn real(&self, story: Duration) -> Duration {
        if self.speed == Speed::REAL_TIME {
            story
        } else {
            self.speed.to_real(story)
        }
    }
}

fn insert(h: &mut HeaderMap, name: &str, value: &str) {
    let name = HeaderName::from_bytes(name.as_bytes()).expect("a valid name");
    h.insert(name, HeaderValue::from_str(value).expect("a valid value"));
}

/// `t` as Anthropic writes its resets, RFC 3339 in UTC to the second, rounded up:
/// `2026-12-07T21:58:10Z`. Times before 1970 are written as 1970's start.
fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    let (days, secs) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01: Howard Hinnant's `civil_from_days`
/// ("chrono-Compatible Low-Level Date Algorithms"), for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
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
        assert!(!third.accepted && third.no_request_left);
        assert_eq!(field(&third.headers, "x-ratelimit-reset-requests"), "1m0s");
        assert!(api.offer(1, t0 + Duration::from_secs(30)).accepted);
    }

    #[test]
    fn llm_refusals_say_which_limit_and_resets_follow_the_speed() {
        let t0 = Timestamp::ZERO;
        let quota = LlmQuota {
            requests_per_minute: 60,
            tokens_per_minute: 6_000,
        };
        let mut api = LlmApi::new(quota).with_speed(Speed::new(100.0).unwrap());
        let first = api.offer(5_000, t0);
        assert!(first.accepted && !first.no_request_left);
        // 50 story seconds until the tokens are back: 500 ms of real time at 100×.
        assert_eq!(field(&first.headers, "x-ratelimit-reset-tokens"), "500ms");
        assert_eq!(field(&first.headers, "x-ratelimit-reset-requests"), "10ms");
        assert_eq!(field(&first.headers, "x-ratelimit-limit-tokens"), "6000");
        let by_tokens = api.offer(2_000, t0);
        assert!(!by_tokens.accepted && !by_tokens.no_request_left);
    }

    /// 2026-12-07T00:00:00Z, the wall time of story 0 in the Anthropic tests.
    fn december() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_601_600)
    }

    fn anthropic(rpm: u64, itpm: u64, otpm: u64) -> LlmApi {
        LlmApi::anthropic(
            AnthropicQuota {
                requests_per_minute: rpm,
                input_tokens_per_minute: itpm,
                output_tokens_per_minute: otpm,
            },
            december(),
        )
    }

    #[test]
    fn rfc3339_is_utc_to_the_second_rounded_up() {
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(december()), "2026-12-07T00:00:00Z");
        assert_eq!(rfc3339(at(1_796_680_690)), "2026-12-07T21:58:10Z");
        assert_eq!(rfc3339(at(951_868_799)), "2000-02-29T23:59:59Z");
        assert_eq!(rfc3339(at(4_107_542_400)), "2100-03-01T00:00:00Z");
        assert_eq!(
            rfc3339(december() + Duration::from_nanos(1)),
            "2026-12-07T00:00:01Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn anthropic_takes_max_tokens_from_output_and_gives_back_only_output_at_the_end() {
        let t0 = Timestamp::ZERO;
        // 1,000 input tokens and 100 output tokens a second.
        let mut api = anthropic(60, 60_000, 6_000);
        assert_eq!(api.dialect(), LlmDialect::Anthropic);
        let first = api.offer_split(30_000, 5_000, t0);
        assert!(first.accepted);
        assert_eq!((first.limited_by, first.retry_after_secs), (None, None));
        let h = &first.headers;
        assert_eq!(
            field(h, "anthropic-ratelimit-input-tokens-remaining"),
            "30000"
        );
        assert_eq!(
            field(h, "anthropic-ratelimit-output-tokens-remaining"),
            "1000"
        );
        assert!(h.get("retry-after").is_none());
        // It wrote 1,000 of its 5,000: 4,000 output tokens come back, no input token does.
        api.complete_split(30_000, 5_000, 1_000, t0);
        assert_eq!(api.used(), 31_000);
        let next = api.offer_split(0, 0, t0);
        let h = &next.headers;
        assert_eq!(
            field(h, "anthropic-ratelimit-input-tokens-remaining"),
            "30000"
        );
        assert_eq!(
            field(h, "anthropic-ratelimit-output-tokens-remaining"),
            "5000"
        );
        // Each bucket refuses on its own: 40,000 input tokens wait 10 s for the missing 10,000.
        let by_input = api.offer_split(40_000, 1, t0);
        assert!(!by_input.accepted && !by_input.no_request_left);
        assert_eq!(by_input.limited_by, Some("input tokens"));
        assert_eq!(by_input.retry_after_secs, Some(10));
        assert_eq!(field(&by_input.headers, "retry-after"), "10");
        let by_output = api.offer_split(1, 5_500, t0);
        assert_eq!(by_output.limited_by, Some("output tokens"));
        assert_eq!(by_output.retry_after_secs, Some(5));
        // Both short: the later one.
        assert_eq!(
            api.offer_split(40_000, 5_500, t0).retry_after_secs,
            Some(10)
        );
        // More than the limit never fits: it waits for a full bucket (1,000 taken: 10 s).
        assert_eq!(api.offer_split(1, 7_000, t0).retry_after_secs, Some(10));
        assert_eq!(api.refused(), 4);
        assert_eq!(api.most_tokens(Duration::from_secs(60)), 132_000.0);
        assert_eq!(api.quota().tokens_per_minute, 66_000);
    }

    #[test]
    fn anthropic_fields_have_rfc3339_resets_and_token_counts_rounded_to_thousands() {
        let t0 = Timestamp::ZERO;
        let mut api = anthropic(60, 60_000, 6_000);
        let answer = api.offer_split(30_500, 4_001, t0 + Duration::from_secs(100));
        let h = &answer.headers;
        let names: Vec<&str> = h.keys().map(http::HeaderName::as_str).collect();
        let mut want = Vec::new();
        for group in ["requests", "input-tokens", "output-tokens", "tokens"] {
            for what in ["limit", "remaining", "reset"] {
                want.push(format!("anthropic-ratelimit-{group}-{what}"));
            }
        }
        assert_eq!(names, want);
        assert_eq!(field(h, "anthropic-ratelimit-requests-limit"), "60");
        assert_eq!(field(h, "anthropic-ratelimit-requests-remaining"), "59");
        // 100 s after story 0, 1 s to give the request back.
        assert_eq!(
            field(h, "anthropic-ratelimit-requests-reset"),
            "2026-12-07T00:01:41Z"
        );
        assert_eq!(field(h, "anthropic-ratelimit-input-tokens-limit"), "60000");
        // 29,500 left, rounded down; full again in 30.5 s, rounded up.
        assert_eq!(
            field(h, "anthropic-ratelimit-input-tokens-remaining"),
            "29000"
        );
        assert_eq!(
            field(h, "anthropic-ratelimit-input-tokens-reset"),
            "2026-12-07T00:02:11Z"
        );
        assert_eq!(field(h, "anthropic-ratelimit-output-tokens-limit"), "6000");
        assert_eq!(
            field(h, "anthropic-ratelimit-output-tokens-remaining"),
            "1000"
        );
        assert_eq!(
            field(h, "anthropic-ratelimit-output-tokens-reset"),
            "2026-12-07T00:02:21Z"
        );
        // `tokens` is the bucket with fewer left: output's 1,999.
        assert_eq!(field(h, "anthropic-ratelimit-tokens-limit"), "6000");
        assert_eq!(field(h, "anthropic-ratelimit-tokens-remaining"), "1000");
        assert_eq!(
            field(h, "anthropic-ratelimit-tokens-reset"),
            "2026-12-07T00:02:21Z"
        );
        // At 10×, 100 story seconds are 10 real ones and the 40.01 s of output 4.001 s.
        let mut fast = anthropic(60, 60_000, 6_000).with_speed(Speed::new(10.0).unwrap());
        let answer = fast.offer_split(30_500, 4_001, t0 + Duration::from_secs(100));
        let h = &answer.headers;
        assert_eq!(
            field(h, "anthropic-ratelimit-output-tokens-reset"),
            "2026-12-07T00:00:15Z"
        );
        assert_eq!(
            field(h, "anthropic-ratelimit-requests-reset"),
            "2026-12-07T00:00:11Z"
        );
    }

    #[test]
    fn anthropic_retry_after_is_whole_real_seconds_at_least_one() {
        let t0 = Timestamp::ZERO;
        // 1 request a second; at 10× a story second is 100 ms: still "1".
        let mut api = anthropic(60, 60_000, 6_000).with_speed(Speed::new(10.0).unwrap());
        assert!(api.offer_split(1, 1, t0).accepted);
        let mut api = anthropic(1, 60_000, 6_000).with_speed(Speed::new(10.0).unwrap());
        assert!(api.offer_split(1, 1, t0).accepted);
        let refused = api.offer_split(1, 1, t0);
        assert!(refused.no_request_left);
        assert_eq!(refused.limited_by, Some("requests"));
        // 60 story seconds for the request: 6 real ones.
        assert_eq!(refused.retry_after_secs, Some(6));
        let refused = api.offer_split(1, 1, t0 + Duration::from_millis(59_990));
        assert_eq!(refused.retry_after_secs, Some(1));
        assert_eq!(field(&refused.headers, "retry-after"), "1");
        // OpenAI's 429s carry none.
        let mut openai = LlmApi::new(LlmQuota {
            requests_per_minute: 1,
            tokens_per_minute: 6_000,
        });
        assert_eq!(openai.dialect(), LlmDialect::OpenAi);
        assert!(openai.offer(1, t0).accepted);
        let refused = openai.offer(1, t0);
        assert_eq!(
            (refused.limited_by, refused.retry_after_secs),
            (Some("requests"), None)
        );
        assert!(refused.headers.get("retry-after").is_none());
    }

    /// The fields written are the ones Pacer reads: its reader finds the input-tokens and
    /// output-tokens budgets with the remaining values written and resets of the time to full.
    #[test]
    fn pacer_reads_the_anthropic_fields_written() {
        use pacer_core::{QuotaUnit, RateLimitInfo};
        let mut api = anthropic(50, 30_000, 8_000);
        let answer = api.offer_split(12_000, 4_000, Timestamp::ZERO);
        let info = RateLimitInfo::from_headers(&answer.headers, december());
        let budget = |name: &str| {
            info.policies()
                .iter()
                .find(|p| p.name() == Some(name))
                .unwrap_or_else(|| panic!("no {name} policy in {info:?}"))
        };
        let input = budget("input-tokens");
        assert_eq!(input.unit(), &QuotaUnit::InputTokens);
        assert_eq!(
            (input.limit(), input.remaining()),
            (Some(30_000), Some(18_000))
        );
        // 12,000 at 500 a second.
        assert_eq!(input.reset_after(), Some(Duration::from_secs(24)));
        let output = budget("output-tokens");
        assert_eq!(output.unit(), &QuotaUnit::OutputTokens);
        assert_eq!(
            (output.limit(), output.remaining()),
            (Some(8_000), Some(4_000))
        );
        assert_eq!(output.reset_after(), Some(Duration::from_secs(30)));
        let requests = budget("requests");
        assert_eq!(
            (requests.limit(), requests.remaining()),
            (Some(50), Some(49))
        );
    }
}
