//! `GET /stats` of `serve --llm`: what the served model API has counted, as JSON.

use serde::{Deserialize, Serialize};

/// The value of [`LlmStats::shape`], by which a reader tells these stats from the unit-cost
/// API's [`ServerStats`](super::ServerStats) (which has no `shape`).
pub const LLM_SHAPE: &str = "llm";

/// The body of `GET /stats` (and of `POST /reset`, after the reset) under `serve --llm`. Times
/// and limits are in story time: per story minute, story seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmStats {
    /// Always [`SERVER_NAME`](super::SERVER_NAME).
    pub server: String,
    /// Always [`LLM_SHAPE`].
    pub shape: String,
    /// Whose API it serves: `openai` or `anthropic`
    /// ([`LlmDialect::name`](crate::model::LlmDialect::name)).
    pub dialect: String,
    /// `--speed`: story time runs this many times faster than the real clock.
    pub speed: f64,
    /// `--rpm`: requests a story minute.
    pub rpm: u64,
    /// `--tpm`: tokens a story minute, prompt and answer alike; under Anthropic's limits,
    /// `itpm + otpm`.
    pub tpm: u64,
    /// `--itpm`: Anthropic's input tokens a story minute; absent under OpenAI's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itpm: Option<u64>,
    /// `--otpm`: Anthropic's output tokens a story minute; absent under OpenAI's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otpm: Option<u64>,
    /// Story seconds since the server started or was last reset.
    pub elapsed_s: f64,
    /// Requests taken (answered 200, or being written) since the start or the last reset.
    pub accepted_requests: u64,
    /// 429s answered since the start or the last reset.
    pub throttled: u64,
    /// 400s answered (a body that is not a chat request) since the start or the last reset.
    pub bad_requests: u64,
    /// The tokens of the requests that ended since the start or the last reset, input and
    /// output (OpenAI's `usage.total_tokens`, Anthropic's `input_tokens + output_tokens`); a
    /// request still being written counts only when it ends.
    pub tokens_used: u64,
    /// The most tokens the limits let through in `elapsed_s`: a full minute's at the start and
    /// the refill since, Anthropic's input and output tokens summed
    /// ([`LlmApi::most_tokens`](crate::model::LlmApi::most_tokens)).
    pub most_tokens: f64,
    /// `tokens_used / most_tokens`: the share of the token budget the clients used.
    pub token_share: f64,
}
