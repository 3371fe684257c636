//! The model API of `serve --llm` on the real clock: the very [`LlmApi`] of `compare --story
//! llm-batch`, whose `now` is the real time since the start (or the last reset) times the speed,
//! answering OpenAI's chat completions or Anthropic's messages ([`LlmDialect`]).
//!
//! A request reserves its prompt and its `max_tokens` when it comes; its prompt is counted as
//! OpenAI's rule of thumb has it (4 characters a token, [`prompt_tokens`]), so a client that
//! estimates the same way knows a request's cost exactly. Its answer is as long as a stable hash
//! of the messages says (50 to 600 tokens, at most `max_tokens`, as `llm-batch`'s answers) and
//! takes 0.3 s and 10 ms a token of story time to write, after which the tokens it did not use
//! come back (OpenAI's tokens, or Anthropic's output tokens).
//!
//! The dialect's types live here, beside the server that speaks it, and the model
//! ([`LlmApi::anthropic`], [`LlmApi::dialect`]) takes them from here.

use super::{LLM_SHAPE, LlmStats, SERVER_NAME};
use crate::Speed;
use crate::model::{AnthropicQuota, LlmApi, LlmDialect, LlmQuota};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, StatusCode};
use pacer_core::{Clock, Timestamp};
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `max_tokens` of a chat completion request that sends none (Anthropic requires it).
pub const DEFAULT_MAX_TOKENS: u64 = 1000;

/// Bytes a token, OpenAI's rule of thumb ("a token is about 4 characters of English text").
pub const BYTES_PER_TOKEN: usize = 4;

/// The shortest answer, in tokens, before `max_tokens` cuts it (`llm-batch`'s).
const SHORTEST_ANSWER: u64 = 50;
/// How many answer lengths there are: 50 to 600 tokens.
const ANSWER_LENGTHS: u64 = 551;
/// The time an answer takes before its first token, story time.
const FIRST_TOKEN: Duration = Duration::from_millis(300);
/// The time an answer takes a token it writes, story time.
const PER_TOKEN: Duration = Duration::from_millis(10);

/// The prompt tokens `serve --llm` counts for messages of these contents: each message
/// `ceil(bytes / 4)` ([`BYTES_PER_TOKEN`]), summed. A client that estimates its prompts this way
/// knows what the server counts.
#[must_use]
pub fn prompt_tokens<'a>(contents: impl IntoIterator<Item = &'a str>) -> u64 {
    contents
        .into_iter()
        .map(|c| c.len().div_ceil(BYTES_PER_TOKEN) as u64)
        .sum()
}

/// The body of a chat completion request, as far as the server reads it; other fields are
/// ignored.
#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<Message>,
    #[serde(default)]
    max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Message {
    /// Required, as OpenAI requires it, but not read.
    #[serde(rename = "role")]
    _role: String,
    content: String,
}

/// The body of an Anthropic messages request, as far as the server reads it.
#[derive(Debug, Deserialize)]
struct MessagesRequest {
    model: String,
    messages: Vec<AnthropicMessage>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    system: Option<Content>,
}

#[derive(Debug, Deserialize)]
struct AnthropicMessage {
    /// Required, as Anthropic requires it, but not read.
    #[serde(rename = "role")]
    _role: String,
    content: Content,
}

/// A message's content: a string, or blocks whose texts count (other blocks count nothing).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    _kind: String,
    #[serde(default)]
    text: String,
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks.iter().map(|b| b.text.as_str()).collect(),
        }
    }
}

/// A request either dialect sends, as the server counts it.
#[derive(Debug)]
struct Request {
    model: String,
    /// The system prompt and the messages' contents, in order.
    contents: Vec<String>,
    max_tokens: u64,
}

/// FNV-1a, 64 bits, over the contents, each followed by a 0 byte: stable across builds, unlike
/// std's `DefaultHasher`.
fn fnv1a<'a>(contents: impl IntoIterator<Item = &'a str>) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for c in contents {
        for &b in c.as_bytes().iter().chain(&[0]) {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }
    h
}

/// One answer, ready to send: a JSON body with its status and headers.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: String,
}

impl Reply {
    fn json(status: StatusCode, mut headers: HeaderMap, body: &serde_json::Value) -> Self {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Reply {
            status,
            headers,
            body: body.to_string(),
        }
    }

    /// OpenAI's error body.
    fn error(
        status: StatusCode,
        headers: HeaderMap,
        message: &str,
        kind: &str,
        code: Option<&str>,
    ) -> Self {
        let body = json!({
            "error": {"message": message, "type": kind, "param": null, "code": code}
        });
        Reply::json(status, headers, &body)
    }

    /// Anthropic's error body.
    fn anthropic_error(status: StatusCode, headers: HeaderMap, kind: &str, message: &str) -> Self {
        let body = json!({"type": "error", "error": {"type": kind, "message": message}});
        Reply::json(status, headers, &body)
    }

    /// A 400 in the dialect's words.
    fn bad_request(dialect: LlmDialect, message: &str) -> Self {
        match dialect {
            LlmDialect::OpenAi => Reply::error(
                StatusCode::BAD_REQUEST,
                HeaderMap::new(),
                message,
                "invalid_request_error",
                None,
            ),
            LlmDialect::Anthropic => Reply::anthropic_error(
                StatusCode::BAD_REQUEST,
                HeaderMap::new(),
                "invalid_request_error",
                message,
            ),
        }
    }

    /// A 404 for a path the API does not have, as the dialect words it.
    pub(super) fn not_found(dialect: LlmDialect, method: &str, path: &str) -> Self {
        match dialect {
            LlmDialect::OpenAi => Reply::error(
                StatusCode::NOT_FOUND,
                HeaderMap::new(),
                &format!("Invalid URL ({method} {path})"),
                "invalid_request_error",
                None,
            ),
            LlmDialect::Anthropic => Reply::anthropic_error(
                StatusCode::NOT_FOUND,
                HeaderMap::new(),
                "not_found_error",
                &format!("Not found: {method} {path}"),
            ),
        }
    }
}

/// What a request that comes gets.
#[derive(Debug)]
pub(super) enum Admission {
    /// Taken: answered after its delay by [`ServedLlm::finish`].
    Taken(Taken),
    /// Answered now: a 400 or a 429.
    Now(Reply),
}

/// A request taken: it is answered after `delay` (real time) by [`ServedLlm::finish`].
#[derive(Debug)]
pub(super) struct Taken {
    /// How long the answer takes to write, real time.
    pub(super) delay: Duration,
    generation: u64,
    id: u64,
    model: String,
    prompt: u64,
    max_tokens: u64,
    completion: u64,
    truncated: bool,
    headers: HeaderMap,
}

/// The served model API: one [`LlmApi`] behind a lock, and the counters of `/stats`.
#[derive(Debug)]
pub(super) struct ServedLlm {
    clock: Arc<dyn Clock>,
    speed: Speed,
    dialect: LlmDialect,
    quota: LlmQuota,
    anthropic: AnthropicQuota,
    next_id: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    api: LlmApi,
    /// The real moment story time 0 stands for.
    origin: Timestamp,
    /// Counts the resets, so that a request taken before one does not settle after it.
    generation: u64,
    accepted_requests: u64,
    throttled: u64,
    bad_requests: u64,
}

impl ServedLlm {
    /// An API of `dialect` at `speed`, whose story time starts now on `clock`, with OpenAI's
    /// limits `quota` or Anthropic's `anthropic` (a story minute's).
    pub(super) fn new(
        clock: Arc<dyn Clock>,
        dialect: LlmDialect,
        quota: LlmQuota,
        anthropic: AnthropicQuota,
        speed: Speed,
    ) -> Self {
        let state = Mutex::new(State {
            api: api(clock.as_ref(), dialect, quota, anthropic).with_speed(speed),
            origin: clock.now(),
            generation: 0,
            accepted_requests: 0,
            throttled: 0,
            bad_requests: 0,
        });
        ServedLlm {
            clock,
            speed,
            dialect,
            quota,
            anthropic,
            next_id: AtomicU64::new(1),
            state,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only counters half-updated: keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The dialect it speaks.
    pub(super) fn dialect(&self) -> LlmDialect {
        self.dialect
    }

    /// Story time now. The clock is read under the lock, so the buckets see times in order.
    fn story_now(&self, state: &State) -> Timestamp {
        let real = self.clock.now() - state.origin;
        Timestamp::from_duration(self.speed.to_story(real))
    }

    /// A request of this body comes to the dialect's endpoint: a reply now (400 or 429), or
    /// the request taken, to be finished after its delay.
    pub(super) fn admit(&self, body: &[u8]) -> Admission {
        let parsed = match self.dialect {
            LlmDialect::OpenAi => parse_chat(body),
            LlmDialect::Anthropic => parse_messages(body),
        };
        let request = match parsed {
            Ok(request) => request,
            Err(message) => {
                self.lock().bad_requests += 1;
                return Admission::Now(Reply::bad_request(self.dialect, &message));
            }
        };
        let max_tokens = request.max_tokens;
        let prompt = prompt_tokens(request.contents.iter().map(String::as_str));
        let natural =
            SHORTEST_ANSWER + fnv1a(request.contents.iter().map(String::as_str)) % ANSWER_LENGTHS;
        let completion = natural.min(max_tokens);

        let mut state = self.lock();
        let now = self.story_now(&state);
        let answer = state.api.offer_split(prompt, max_tokens, now);
        if !answer.accepted {
            state.throttled += 1;
            drop(state);
            let limit = answer.limited_by.unwrap_or("tokens");
            return Admission::Now(self.too_many(answer.headers, limit));
        }
        state.accepted_requests += 1;
        let generation = state.generation;
        drop(state);
        let writing = FIRST_TOKEN + PER_TOKEN * u32::try_from(completion).unwrap_or(u32::MAX);
        Admission::Taken(Taken {
            delay: self.speed.to_real(writing),
            generation,
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            model: request.model,
            prompt,
            max_tokens,
            completion,
            truncated: natural > max_tokens,
            headers: answer.headers,
        })
    }

    /// The 429 of a request `limit` refused, in the dialect's words.
    fn too_many(&self, headers: HeaderMap, limit: &str) -> Reply {
        match self.dialect {
            LlmDialect::OpenAi => {
                let kind = if limit == "requests" {
                    "requests"
                } else {
                    "tokens"
                };
                Reply::error(
                    StatusCode::TOO_MANY_REQUESTS,
                    headers,
                    "Rate limit reached for requests or tokens per min",
                    kind,
                    Some("rate_limit_exceeded"),
                )
            }
            LlmDialect::Anthropic => {
                let a = self.anthropic;
                let per_minute = match limit {
                    "requests" => a.requests_per_minute,
                    "input tokens" => a.input_tokens_per_minute,
                    _ => a.output_tokens_per_minute,
                };
                let message = format!(
                    "This request would exceed your organization's rate limit of {per_minute} \
                     {limit} per minute. Please reduce the prompt length or the maximum tokens \
                     requested, or try again later."
                );
                Reply::anthropic_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    headers,
                    "rate_limit_error",
                    &message,
                )
            }
        }
    }

    /// The answer of a taken request has been written: what it did not use of its reservation
    /// comes back (unless the API was reset since), and its 200 with the fields counted when it
    /// came.
    pub(super) fn finish(&self, taken: Taken) -> Reply {
        {
            let mut state = self.lock();
            if state.generation == taken.generation {
                let now = self.story_now(&state);
                state
                    .api
                    .complete_split(taken.prompt, taken.max_tokens, taken.completion, now);
            }
        }
        let text = format!("A simulated answer of {} tokens.", taken.completion);
        let body = match self.dialect {
            LlmDialect::OpenAi => json!({
                "id": format!("chatcmpl-{}", taken.id),
                "object": "chat.completion",
                "created": 0,
                "model": taken.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": if taken.truncated { "length" } else { "stop" },
                }],
                "usage": {
                    "prompt_tokens": taken.prompt,
                    "completion_tokens": taken.completion,
                    "total_tokens": taken.prompt + taken.completion,
                },
            }),
            LlmDialect::Anthropic => json!({
                "id": format!("msg_{}", taken.id),
                "type": "message",
                "role": "assistant",
                "model": taken.model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": if taken.truncated { "max_tokens" } else { "end_turn" },
                "stop_sequence": null,
                "usage": {"input_tokens": taken.prompt, "output_tokens": taken.completion},
            }),
        };
        Reply::json(StatusCode::OK, taken.headers, &body)
    }

    /// The counters and the limits now.
    pub(super) fn stats(&self) -> LlmStats {
        let state = self.lock();
        let elapsed = self.story_now(&state).as_duration();
        let tokens_used = state.api.used();
        let most_tokens = state.api.most_tokens(elapsed);
        let quota = state.api.quota();
        let anthropic = state.api.anthropic_quota();
        LlmStats {
            server: SERVER_NAME.to_owned(),
            shape: LLM_SHAPE.to_owned(),
            dialect: self.dialect.name().to_owned(),
            speed: self.speed.get(),
            rpm: quota.requests_per_minute,
            tpm: quota.tokens_per_minute,
            itpm: anthropic.map(|a| a.input_tokens_per_minute),
            otpm: anthropic.map(|a| a.output_tokens_per_minute),
            elapsed_s: elapsed.as_secs_f64(),
            accepted_requests: state.accepted_requests,
            throttled: state.throttled,
            bad_requests: state.bad_requests,
            tokens_used,
            most_tokens,
            token_share: tokens_used as f64 / most_tokens,
        }
    }

    /// Starts over: story time 0 is now, the buckets are full, the counters are zero; requests
    /// in flight are answered but settle nothing.
    pub(super) fn reset(&self) -> LlmStats {
        {
            let mut state = self.lock();
            *state = State {
                api: api(
                    self.clock.as_ref(),
                    self.dialect,
                    self.quota,
                    self.anthropic,
                )
                .with_speed(self.speed),
                origin: self.clock.now(),
                generation: state.generation + 1,
                accepted_requests: 0,
                throttled: 0,
                bad_requests: 0,
            };
        }
        self.stats()
    }
}

/// A chat request, or what is wrong with the body.
fn parse_chat(body: &[u8]) -> Result<Request, String> {
    let request: ChatRequest = serde_json::from_slice(body).map_err(|e| {
        format!(
            "We could not parse the JSON body of your request: {e} (expected {{\"model\", \
             \"messages\": [{{\"role\", \"content\"}}], \"max_tokens\"}})"
        )
    })?;
    if request.messages.is_empty() {
        return Err("[] is too short - 'messages'".to_owned());
    }
    if request.max_tokens == Some(0) {
        return Err("max_tokens must be at least 1".to_owned());
    }
    Ok(Request {
        model: request.model,
        contents: request.messages.into_iter().map(|m| m.content).collect(),
        max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
    })
}

/// A messages request, or what is wrong with the body, in Anthropic's words.
fn parse_messages(body: &[u8]) -> Result<Request, String> {
    let request: MessagesRequest = serde_json::from_slice(body).map_err(|e| {
        format!(
            "invalid request body: {e} (expected {{\"model\", \"max_tokens\", \"messages\": \
             [{{\"role\", \"content\"}}], \"system\"}})"
        )
    })?;
    let Some(max_tokens) = request.max_tokens else {
        return Err("max_tokens: Field required".to_owned());
    };
    if max_tokens == 0 {
        return Err("max_tokens: Input should be greater than or equal to 1".to_owned());
    }
    if request.messages.is_empty() {
        return Err("messages: at least one message is required".to_owned());
    }
    let system = request.system.as_ref().map(Content::text);
    let messages = request.messages.iter().map(|m| m.content.text());
    Ok(Request {
        model: request.model,
        contents: system.into_iter().chain(messages).collect(),
        max_tokens,
    })
}

/// A new API of `dialect` with full buckets, its story time 0 standing for the wall time now.
fn api(
    clock: &dyn Clock,
    dialect: LlmDialect,
    quota: LlmQuota,
    anthropic: AnthropicQuota,
) -> LlmApi {
    match dialect {
        LlmDialect::OpenAi => LlmApi::new(quota),
        LlmDialect::Anthropic => LlmApi::anthropic(anthropic, clock.system_now()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CHAT_COMPLETIONS_PATH, MESSAGES_PATH};
    use pacer_core::ManualClock;

    fn served(rpm: u64, tpm: u64, speed: f64) -> (ManualClock, ServedLlm) {
        let clock = ManualClock::new();
        let quota = LlmQuota {
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
        };
        let llm = ServedLlm::new(
            Arc::new(clock.clone()),
            LlmDialect::OpenAi,
            quota,
            AnthropicQuota::default(),
            Speed::new(speed).unwrap(),
        );
        (clock, llm)
    }

    fn chat(content: &str, max_tokens: u64) -> Vec<u8> {
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens,
        })
        .to_string()
        .into_bytes()
    }

    impl Admission {
        fn unwrap(self) -> Taken {
            match self {
                Admission::Taken(taken) => taken,
                Admission::Now(reply) => panic!("answered now: {reply:?}"),
            }
        }

        fn unwrap_err(self) -> Reply {
            match self {
                Admission::Now(reply) => reply,
                Admission::Taken(taken) => panic!("taken: {taken:?}"),
            }
        }
    }

    fn body(reply: &Reply) -> serde_json::Value {
        serde_json::from_str(&reply.body).unwrap()
    }

    #[test]
    fn llm_prompt_tokens_are_a_quarter_of_the_bytes_rounded_up_per_message() {
        assert_eq!(prompt_tokens([]), 0);
        assert_eq!(prompt_tokens(["", "a", "abcd", "abcde"]), 4);
        assert_eq!(prompt_tokens(["é"]), 1, "bytes, not characters");
    }

    #[test]
    fn llm_answer_lengths_are_stable_and_capped_by_max_tokens() {
        // Pinned: FNV-1a of "hi\0" is stable across builds and platforms (an answer of 53).
        assert_eq!(fnv1a(["hi"]), 0x3373_5419_3006_cb6e_u64);
        let (_clock, llm) = served(500, 1_000_000, 1.0);
        let taken = llm.admit(&chat("hi", 10_000)).unwrap();
        assert_eq!(taken.completion, 53);
        assert!(!taken.truncated);
        let short = llm.admit(&chat("hi", 20)).unwrap();
        assert_eq!((short.completion, short.truncated), (20, true));
        // 0.3 s and 10 ms a token, story time.
        assert_eq!(short.delay, Duration::from_millis(500));
        let reply = llm.finish(short);
        assert_eq!(body(&reply)["choices"][0]["finish_reason"], "length");
    }

    #[test]
    fn llm_reservation_comes_back_at_the_end_and_time_runs_at_the_speed() {
        let (clock, llm) = served(60, 6_000, 100.0);
        let taken = llm.admit(&chat(&"x".repeat(4_000), 4_000)).unwrap();
        // 1,000 prompt tokens and 4,000 reserved for the answer.
        assert_eq!(taken.headers["x-ratelimit-remaining-tokens"], "1000");
        // 50 story seconds to refill 5,000 tokens: 500 ms at 100×.
        assert_eq!(taken.headers["x-ratelimit-reset-tokens"], "500ms");
        assert_eq!(
            taken.delay,
            llm.speed
                .to_real(FIRST_TOKEN + PER_TOKEN * taken.completion as u32)
        );
        let refused = llm.admit(&chat("hello", 2_000)).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(body(&refused)["error"]["type"], "tokens");
        let used = 1_000 + taken.completion;
        let reply = llm.finish(taken);
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(body(&reply)["usage"]["total_tokens"], used);
        clock.advance(Duration::from_millis(10)); // 1 story second: 100 tokens back
        let s = llm.stats();
        assert_eq!(
            (s.tokens_used, s.accepted_requests, s.throttled),
            (used, 1, 1)
        );
        assert!((s.elapsed_s - 1.0).abs() < 1e-9, "{s:?}");
        assert!((s.most_tokens - 6_100.0).abs() < 1e-6, "{s:?}");
        let next = llm.admit(&chat("hello", 2_000)).unwrap();
        let left: u64 = next.headers["x-ratelimit-remaining-tokens"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(left, 6_000 - used + 100 - 2_002);
    }

    #[test]
    fn llm_requests_limit_refusal_says_requests() {
        let (_clock, llm) = served(1, 6_000, 1.0);
        llm.admit(&chat("a", 10)).unwrap();
        let refused = llm.admit(&chat("a", 10)).unwrap_err();
        let b = body(&refused);
        assert_eq!(b["error"]["type"], "requests");
        assert_eq!(b["error"]["code"], "rate_limit_exceeded");
        assert_eq!(refused.headers["x-ratelimit-remaining-requests"], "0");
    }

    #[test]
    fn llm_bad_bodies_are_400s_that_take_nothing() {
        let (_clock, llm) = served(500, 30_000, 1.0);
        for bad in [
            &b"not json"[..],
            br#"{"model": "m"}"#,
            br#"{"model": "m", "messages": [{"role": "user"}]}"#,
            br#"{"model": "m", "messages": []}"#,
            br#"{"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": -1}"#,
            br#"{"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": 0}"#,
        ] {
            let reply = llm.admit(bad).unwrap_err();
            assert_eq!(reply.status, StatusCode::BAD_REQUEST);
            assert_eq!(body(&reply)["error"]["type"], "invalid_request_error");
            assert_eq!(body(&reply)["error"]["code"], serde_json::Value::Null);
        }
        let ok = br#"{"model": "m", "messages": [{"role": "user", "content": "a"}]}"#;
        let taken = llm.admit(ok).unwrap();
        assert_eq!((taken.prompt, taken.max_tokens), (1, DEFAULT_MAX_TOKENS));
        let s = llm.stats();
        assert_eq!((s.bad_requests, s.accepted_requests), (6, 1));
    }

    #[test]
    fn llm_request_taken_before_a_reset_settles_nothing_after_it() {
        let (_clock, llm) = served(500, 30_000, 1.0);
        let taken = llm.admit(&chat("before", 1_000)).unwrap();
        let s = llm.reset();
        assert_eq!((s.accepted_requests, s.tokens_used), (0, 0));
        assert_eq!(llm.finish(taken).status, StatusCode::OK);
        assert_eq!(llm.stats().tokens_used, 0);
        let after = llm.admit(&chat("after", 1_000)).unwrap();
        assert_eq!(after.headers["x-ratelimit-remaining-tokens"], "28998");
    }

    fn served_anthropic(rpm: u64, itpm: u64, otpm: u64) -> (ManualClock, ServedLlm) {
        let clock = ManualClock::new();
        let quota = AnthropicQuota {
            requests_per_minute: rpm,
            input_tokens_per_minute: itpm,
            output_tokens_per_minute: otpm,
        };
        let llm = ServedLlm::new(
            Arc::new(clock.clone()),
            LlmDialect::Anthropic,
            LlmQuota::default(),
            quota,
            Speed::REAL_TIME,
        );
        (clock, llm)
    }

    fn message(content: &str, max_tokens: u64) -> Vec<u8> {
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": content}],
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn anthropic_messages_count_the_system_and_text_blocks_and_answer_as_anthropic() {
        let (_clock, llm) = served_anthropic(60, 6_000, 2_000);
        let request = json!({
            "model": "claude-sonnet-4-5",
            "system": "Be brief.",
            "max_tokens": 20,
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "abcd"},
                    {"type": "text", "text": "efgh"},
                ]},
                {"role": "assistant", "content": "ok"},
            ],
        });
        let taken = llm.admit(request.to_string().as_bytes()).unwrap();
        // ceil(9 / 4) + ceil(8 / 4) + ceil(2 / 4).
        assert_eq!((taken.prompt, taken.max_tokens), (6, 20));
        assert_eq!((taken.completion, taken.truncated), (20, true));
        let h = &taken.headers;
        assert_eq!(h["anthropic-ratelimit-input-tokens-remaining"], "5000");
        assert_eq!(h["anthropic-ratelimit-output-tokens-remaining"], "1000");
        assert_eq!(h["anthropic-ratelimit-requests-remaining"], "59");
        // The manual clock's wall time at story 0 (2026-01-01) and a request back in 1 s.
        assert_eq!(
            h["anthropic-ratelimit-requests-reset"],
            "2026-01-01T00:00:01Z"
        );
        assert!(h.get("x-ratelimit-remaining-tokens").is_none());
        let reply = llm.finish(taken);
        assert_eq!(reply.status, StatusCode::OK);
        let b = body(&reply);
        assert_eq!(b["id"], "msg_1");
        assert_eq!(b["type"], "message");
        assert_eq!(b["role"], "assistant");
        assert_eq!(b["model"], "claude-sonnet-4-5");
        assert_eq!(b["content"][0]["type"], "text");
        assert!(b["content"][0]["text"].is_string());
        assert_eq!(b["stop_reason"], "max_tokens");
        assert_eq!(b["stop_sequence"], serde_json::Value::Null);
        assert_eq!(b["usage"], json!({"input_tokens": 6, "output_tokens": 20}));
        let s = llm.stats();
        assert_eq!(s.dialect, "anthropic");
        assert_eq!(
            (s.rpm, s.itpm, s.otpm, s.tpm),
            (60, Some(6_000), Some(2_000), 8_000)
        );
        assert_eq!((s.accepted_requests, s.tokens_used), (1, 26));
        assert!((s.most_tokens - 8_000.0).abs() < 1e-9, "{s:?}");
        let untruncated = llm.admit(&message("hi", 10_000)).unwrap_err();
        assert_eq!(
            untruncated.status,
            StatusCode::TOO_MANY_REQUESTS,
            "10,000 > 2,000"
        );
        let natural = llm.admit(&message("hi", 1_000)).unwrap();
        assert_eq!((natural.completion, natural.truncated), (53, false));
        assert_eq!(body(&llm.finish(natural))["stop_reason"], "end_turn");
    }

    #[test]
    fn anthropic_output_reservation_comes_back_at_the_end_and_a_429_says_when_to_retry() {
        let (clock, llm) = served_anthropic(60, 6_000, 4_000);
        let taken = llm.admit(&message("hello", 3_000)).unwrap();
        assert_eq!(
            taken.headers["anthropic-ratelimit-output-tokens-remaining"],
            "1000"
        );
        // 1,000 output tokens left, 2,000 needed: 1,000 more at 66.7 a second, 15 s.
        let refused = llm.admit(&message("hello", 2_000)).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers["retry-after"], "15");
        assert_eq!(
            refused.headers["anthropic-ratelimit-output-tokens-remaining"],
            "1000"
        );
        let b = body(&refused);
        assert_eq!(b["type"], "error");
        assert_eq!(b["error"]["type"], "rate_limit_error");
        let text = b["error"]["message"].as_str().unwrap();
        assert!(
            text.contains("rate limit of 4000 output tokens per minute"),
            "{text}"
        );
        // The answer wrote at most 600 of its 3,000: at least 2,400 come back.
        llm.finish(taken);
        let next = llm.admit(&message("hello", 1)).unwrap();
        assert_eq!(
            next.headers["anthropic-ratelimit-output-tokens-remaining"],
            "3000"
        );
        let s = llm.stats();
        assert_eq!((s.accepted_requests, s.throttled), (2, 1));
        // A reset starts story 0 at the wall time now.
        clock.advance(Duration::from_secs(10));
        llm.reset();
        let after = llm.admit(&message("hello", 1)).unwrap();
        assert_eq!(
            after.headers["anthropic-ratelimit-requests-reset"],
            "2026-01-01T00:00:11Z"
        );
    }

    #[test]
    fn anthropic_bad_bodies_are_400s_in_anthropic_shape() {
        let (_clock, llm) = served_anthropic(50, 30_000, 8_000);
        for bad in [
            &b"not json"[..],
            br#"{"model": "m", "messages": [{"role": "user", "content": "a"}]}"#,
            br#"{"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "a"}]}"#,
            br#"{"model": "m", "max_tokens": 10, "messages": []}"#,
            br#"{"max_tokens": 10, "messages": [{"role": "user", "content": "a"}]}"#,
            br#"{"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": 5}]}"#,
        ] {
            let reply = llm.admit(bad).unwrap_err();
            assert_eq!(reply.status, StatusCode::BAD_REQUEST);
            let b = body(&reply);
            assert_eq!(b["type"], "error");
            assert_eq!(b["error"]["type"], "invalid_request_error");
        }
        let missing = llm
            .admit(br#"{"model": "m", "messages": [{"role": "user", "content": "a"}]}"#)
            .unwrap_err();
        assert_eq!(
            body(&missing)["error"]["message"],
            "max_tokens: Field required"
        );
        let nf = Reply::not_found(LlmDialect::Anthropic, "POST", CHAT_COMPLETIONS_PATH);
        assert_eq!(nf.status, StatusCode::NOT_FOUND);
        assert_eq!(body(&nf)["error"]["type"], "not_found_error");
        let s = llm.stats();
        assert_eq!(
            (s.bad_requests, s.accepted_requests, s.throttled),
            (7, 0, 0)
        );
    }

    #[test]
    fn llm_dialect_names_parse_and_openai_stats_have_no_anthropic_limits() {
        assert_eq!("openai".parse(), Ok(LlmDialect::OpenAi));
        assert_eq!(" Anthropic ".parse(), Ok(LlmDialect::Anthropic));
        let e = "gemini".parse::<LlmDialect>().unwrap_err();
        assert_eq!(
            e,
            "unknown model API \"gemini\": expected openai or anthropic"
        );
        assert_eq!(LlmDialect::default(), LlmDialect::OpenAi);
        assert_eq!(LlmDialect::Anthropic.path(), MESSAGES_PATH);
        let (_clock, llm) = served(500, 30_000, 1.0);
        let json = serde_json::to_value(llm.stats()).unwrap();
        assert_eq!(json["dialect"], "openai");
        assert!(
            json.get("itpm").is_none() && json.get("otpm").is_none(),
            "{json}"
        );
    }
}
