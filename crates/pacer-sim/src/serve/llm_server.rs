//! `serve --llm`: a model API with OpenAI's or Anthropic's limits and fields behind axum, on a
//! TCP port.
//!
//! | route | answer |
//! |---|---|
//! | `POST /v1/chat/completions` (OpenAI) | `200` with a `chat.completion` body after the answer's writing time, or `429` with OpenAI's `rate_limit_exceeded` body (no `Retry-After`, as OpenAI sends none); OpenAI's six `x-ratelimit-*` fields on both, counted when the request came; `400` with an `invalid_request_error` body for a body that is not a chat request |
//! | `POST /v1/messages` (Anthropic) | `200` with a `message` body and its `usage` after the answer's writing time, or `429` with a `rate_limit_error` body and `retry-after`; the `anthropic-ratelimit-*` fields on both, counted when the request came; `400` with an `invalid_request_error` body for a body that is not a messages request (one without `max_tokens` too) |
//! | `GET /stats` | [`LlmStats`] as JSON |
//! | `POST /reset` | starts over (story time 0, full buckets, zero counters); the stats after |
//! | anything else | `404` in the dialect's error shape (the other dialect's endpoint too) |

use super::LlmStats;
use super::llm::{Admission, Reply, ServedLlm};
use super::server::{Running, json};
use crate::Speed;
use crate::model::LlmQuota;
use crate::model::{AnthropicQuota, LlmDialect};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pacer_core::{Clock, RealClock};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

/// What `serve --llm` serves.
#[derive(Debug, Clone)]
pub struct LlmServeOptions {
    /// The address to listen on; port 0 picks a free one.
    pub addr: SocketAddr,
    /// How many times faster than the real clock story time runs.
    pub speed: Speed,
    /// Whose API it serves: its endpoint, limits and fields.
    pub dialect: LlmDialect,
    /// OpenAI's limits, requests and tokens a story minute (under [`LlmDialect::OpenAi`]).
    pub quota: LlmQuota,
    /// Anthropic's limits, requests, input and output tokens a story minute (under
    /// [`LlmDialect::Anthropic`]).
    pub anthropic: AnthropicQuota,
}

impl Default for LlmServeOptions {
    /// Loopback port 8080, real time, OpenAI's API with 500 requests and 30,000 tokens a minute
    /// ([`LlmQuota::default`]); Anthropic's limits, if chosen, are [`AnthropicQuota::default`].
    fn default() -> Self {
        LlmServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            speed: Speed::REAL_TIME,
            dialect: LlmDialect::OpenAi,
            quota: LlmQuota::default(),
            anthropic: AnthropicQuota::default(),
        }
    }
}

/// A running `serve --llm`. Dropping it stops it.
#[derive(Debug)]
pub struct LlmServer {
    running: Running,
    llm: Arc<ServedLlm>,
}

fn llm_router(llm: Arc<ServedLlm>) -> Router {
    Router::new()
        .route(llm.dialect().path(), post(chat))
        .route("/stats", get(stats))
        .route("/reset", post(reset))
        .fallback(not_found)
        .with_state(llm)
}

async fn chat(State(llm): State<Arc<ServedLlm>>, body: Bytes) -> Response {
    match llm.admit(&body) {
        Admission::Taken(taken) => {
            tokio::time::sleep(taken.delay).await;
            send(llm.finish(taken))
        }
        Admission::Now(reply) => send(reply),
    }
}

async fn not_found(State(llm): State<Arc<ServedLlm>>, method: Method, uri: Uri) -> Response {
    send(Reply::not_found(llm.dialect(), method.as_str(), uri.path()))
}

async fn stats(State(llm): State<Arc<ServedLlm>>) -> Response {
    json(&llm.stats())
}

async fn reset(State(llm): State<Arc<ServedLlm>>) -> Response {
    json(&llm.reset())
}

fn send(reply: Reply) -> Response {
    (reply.status, reply.headers, reply.body).into_response()
}

impl LlmServer {
    /// Binds `options.addr` and serves in the background on the current tokio runtime; story
    /// time starts now.
    pub async fn start(options: &LlmServeOptions) -> io::Result<LlmServer> {
        let clock: Arc<dyn Clock> = Arc::new(RealClock::new());
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let llm = Arc::new(ServedLlm::new(
            clock,
            options.dialect,
            options.quota,
            options.anthropic,
            options.speed,
        ));
        let running = Running::spawn(listener, llm_router(Arc::clone(&llm)))?;
        Ok(LlmServer { running, llm })
    }

    /// The address it listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// `http://ADDR`.
    #[must_use]
    pub fn url(&self) -> String {
        self.running.url()
    }

    /// What `GET /stats` would answer now.
    #[must_use]
    pub fn stats(&self) -> LlmStats {
        self.llm.stats()
    }

    /// Stops accepting, lets requests in flight finish, and returns the final stats.
    pub async fn stop(mut self) -> LlmStats {
        self.running.stop().await;
        self.llm.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CHAT_COMPLETIONS_PATH, MESSAGES_PATH};
    use crate::serve::{DEFAULT_MAX_TOKENS, LLM_SHAPE, SERVER_NAME, prompt_tokens};
    use serde_json::{Value, json};
    use std::time::Duration;

    const SIX: [&str; 6] = [
        "x-ratelimit-limit-requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
    ];

    /// At 10×, an answer takes 0.03 s to 0.63 s and the tokens refill at a sixth of `tpm` a
    /// real second.
    async fn start(rpm: u64, tpm: u64) -> LlmServer {
        let options = LlmServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            speed: Speed::new(10.0).unwrap(),
            quota: LlmQuota {
                requests_per_minute: rpm,
                tokens_per_minute: tpm,
            },
            ..LlmServeOptions::default()
        };
        LlmServer::start(&options).await.unwrap()
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .retry(reqwest::retry::never())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
    }

    fn header(r: &reqwest::Response, name: &str) -> String {
        r.headers()[name].to_str().unwrap().to_owned()
    }

    async fn read_stats(request: reqwest::RequestBuilder) -> LlmStats {
        let body = request.send().await.unwrap().bytes().await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn llm_serve_answers_chat_completions_with_usage_and_openai_fields() {
        let server = start(60, 6_000).await;
        let http = client();
        let url = format!("{}{CHAT_COMPLETIONS_PATH}", server.url());
        let system = "You answer briefly.";
        let question = "y".repeat(15_999);
        let r = http
            .post(&url)
            .body(
                json!({
                    "model": "gpt-4o-mini",
                    "messages": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": question},
                    ],
                    "max_tokens": 800,
                })
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "content-type"), "application/json");
        assert!(r.headers().get("retry-after").is_none());
        for name in SIX {
            assert!(r.headers().contains_key(name), "{name}");
        }
        let prompt = prompt_tokens([system, question.as_str()]);
        assert_eq!(prompt, 5 + 4_000);
        assert_eq!(header(&r, "x-ratelimit-limit-requests"), "60");
        assert_eq!(header(&r, "x-ratelimit-limit-tokens"), "6000");
        assert_eq!(header(&r, "x-ratelimit-remaining-requests"), "59");
        // The reservation, prompt and max_tokens, counted when the request came.
        assert_eq!(header(&r, "x-ratelimit-remaining-tokens"), "1195");
        // 4,805 tokens refill in 48.05 story seconds: 4.805 s at 10×.
        assert_eq!(header(&r, "x-ratelimit-reset-tokens"), "4.805s");
        assert_eq!(header(&r, "x-ratelimit-reset-requests"), "100ms");
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["model"], "gpt-4o-mini");
        assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
        let choice = &body["choices"][0];
        assert_eq!(choice["message"]["role"], "assistant");
        assert_eq!(choice["finish_reason"], "stop");
        let usage = &body["usage"];
        let completion = usage["completion_tokens"].as_u64().unwrap();
        assert_eq!(usage["prompt_tokens"], prompt);
        assert!((50..=600).contains(&completion), "{completion}");
        assert_eq!(usage["total_tokens"], prompt + completion);

        // At most 6,000 - 4,055 = 1,945 tokens are left, and 1,000 more a real second: a
        // reservation of 5,002 is refused for 3 s, with OpenAI's body and fields.
        let r = http
            .post(&url)
            .body(
                json!({
                    "model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": "hello"}],
                    "max_tokens": 5_000,
                })
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429);
        assert!(r.headers().get("retry-after").is_none());
        for name in SIX {
            assert!(r.headers().contains_key(name), "{name}");
        }
        let left: u64 = header(&r, "x-ratelimit-remaining-tokens").parse().unwrap();
        assert!(left < 5_002, "{left}");
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(
            body["error"]["message"],
            "Rate limit reached for requests or tokens per min"
        );
        assert_eq!(body["error"]["type"], "tokens");
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");

        // Not a chat request: 400.
        let r = http
            .post(&url)
            .body("{\"model\": \"gpt-4o-mini\"}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["code"], Value::Null);

        // Another path: 404.
        let r = http
            .post(format!("{}/v1/completions", server.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);

        let stats = read_stats(http.get(format!("{}/stats", server.url()))).await;
        assert_eq!(
            (stats.server.as_str(), stats.shape.as_str()),
            (SERVER_NAME, LLM_SHAPE)
        );
        assert_eq!((stats.speed, stats.rpm, stats.tpm), (10.0, 60, 6_000));
        assert_eq!(
            (
                stats.accepted_requests,
                stats.throttled,
                stats.bad_requests,
                stats.tokens_used
            ),
            (1, 1, 1, prompt + completion)
        );
        assert!(
            stats.elapsed_s > 0.0 && stats.most_tokens >= 6_000.0,
            "{stats:?}"
        );
        let share = stats.tokens_used as f64 / stats.most_tokens;
        assert!((stats.token_share - share).abs() < 1e-12, "{stats:?}");

        let reset = read_stats(http.post(format!("{}/reset", server.url()))).await;
        assert_eq!(
            (
                reset.accepted_requests,
                reset.throttled,
                reset.bad_requests,
                reset.tokens_used
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(reset.token_share, 0.0);
        assert!(reset.elapsed_s < 10.0, "{reset:?}");
        // Full buckets again: the default max_tokens fits.
        let r = http
            .post(&url)
            .body(
                json!({"model": "m", "messages": [{"role": "user", "content": "abcd"}]})
                    .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let left = 6_000 - 1 - DEFAULT_MAX_TOKENS;
        assert_eq!(header(&r, "x-ratelimit-remaining-tokens"), left.to_string());
        let last = server.stop().await;
        assert_eq!(last.accepted_requests, 1);
    }

    /// At 10×, the input tokens refill at 1,000 and the output tokens at 333 a real second.
    async fn start_anthropic() -> LlmServer {
        let options = LlmServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            speed: Speed::new(10.0).unwrap(),
            dialect: LlmDialect::Anthropic,
            anthropic: AnthropicQuota {
                requests_per_minute: 60,
                input_tokens_per_minute: 6_000,
                output_tokens_per_minute: 2_000,
            },
            ..LlmServeOptions::default()
        };
        LlmServer::start(&options).await.unwrap()
    }

    fn anthropic_fields() -> Vec<String> {
        let mut names = Vec::new();
        for group in ["requests", "input-tokens", "output-tokens", "tokens"] {
            for what in ["limit", "remaining", "reset"] {
                names.push(format!("anthropic-ratelimit-{group}-{what}"));
            }
        }
        names
    }

    #[tokio::test]
    async fn llm_serve_anthropic_answers_messages_with_usage_and_anthropic_fields() {
        let server = start_anthropic().await;
        let http = client();
        let url = format!("{}{MESSAGES_PATH}", server.url());
        let system = "You answer briefly.";
        let question = "y".repeat(16_000);
        let r = http
            .post(&url)
            .header("anthropic-version", "2023-06-01")
            .body(
                json!({
                    "model": "claude-sonnet-4-5",
                    "system": system,
                    "max_tokens": 1_000,
                    "messages": [{"role": "user", "content": question}],
                })
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "content-type"), "application/json");
        for name in anthropic_fields() {
            assert!(r.headers().contains_key(name.as_str()), "{name}");
        }
        assert!(r.headers().get("x-ratelimit-remaining-tokens").is_none());
        assert!(r.headers().get("retry-after").is_none());
        let prompt = prompt_tokens([system, question.as_str()]);
        assert_eq!(prompt, 5 + 4_000);
        assert_eq!(header(&r, "anthropic-ratelimit-requests-limit"), "60");
        assert_eq!(header(&r, "anthropic-ratelimit-input-tokens-limit"), "6000");
        assert_eq!(
            header(&r, "anthropic-ratelimit-output-tokens-limit"),
            "2000"
        );
        // 1,995 input and 1,000 output tokens left, rounded down to the thousand.
        assert_eq!(
            header(&r, "anthropic-ratelimit-input-tokens-remaining"),
            "1000"
        );
        assert_eq!(
            header(&r, "anthropic-ratelimit-output-tokens-remaining"),
            "1000"
        );
        assert_eq!(header(&r, "anthropic-ratelimit-tokens-limit"), "2000");
        let reset = header(&r, "anthropic-ratelimit-input-tokens-reset");
        assert!(
            reset.len() == 20 && reset.ends_with('Z') && reset.as_bytes()[10] == b'T',
            "{reset}"
        );
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["type"], "message");
        assert_eq!(body["model"], "claude-sonnet-4-5");
        assert!(body["id"].as_str().unwrap().starts_with("msg_"));
        assert_eq!(body["stop_reason"], "end_turn");
        let output = body["usage"]["output_tokens"].as_u64().unwrap();
        assert_eq!(body["usage"]["input_tokens"], prompt);
        assert!((50..=600).contains(&output), "{output}");

        // Input tokens are not given back: at most 1,995 and 1,000 more a real second are
        // left, so 5,000 are refused for about 3 s, with Anthropic's body and fields.
        let r = http
            .post(&url)
            .body(
                json!({
                    "model": "claude-sonnet-4-5",
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": "z".repeat(20_000)}],
                })
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429);
        for name in anthropic_fields() {
            assert!(r.headers().contains_key(name.as_str()), "{name}");
        }
        let retry: u64 = header(&r, "retry-after").parse().unwrap();
        // (5,000 - at least 1,995) / 100 a story second, 30 story s, 3 real ones at most.
        assert!((1..=3).contains(&retry), "{retry}");
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "rate_limit_error");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("6000 input tokens per minute"),
            "{message}"
        );

        // Anthropic requires max_tokens: 400.
        let r = http
            .post(&url)
            .body(json!({"model": "m", "messages": [{"role": "user", "content": "a"}]}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");

        // OpenAI's endpoint is not Anthropic's: 404 in Anthropic's shape.
        let r = http
            .post(format!("{}{CHAT_COMPLETIONS_PATH}", server.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["error"]["type"], "not_found_error");

        let stats = read_stats(http.get(format!("{}/stats", server.url()))).await;
        assert_eq!(stats.dialect, "anthropic");
        assert_eq!(
            (stats.rpm, stats.itpm, stats.otpm, stats.tpm),
            (60, Some(6_000), Some(2_000), 8_000)
        );
        assert_eq!(
            (
                stats.accepted_requests,
                stats.throttled,
                stats.bad_requests,
                stats.tokens_used
            ),
            (1, 1, 1, prompt + output)
        );
        assert!(stats.most_tokens >= 8_000.0, "{stats:?}");
        let last = server.stop().await;
        assert_eq!(last.accepted_requests, 1);
    }

    #[tokio::test]
    async fn llm_serve_openai_has_no_messages_endpoint() {
        let server = start(60, 6_000).await;
        let r = client()
            .post(format!("{}{MESSAGES_PATH}", server.url()))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(server.stats().dialect, "openai");
    }
}
