//! `pacer-sim serve`: the model API of `compare` over real HTTP, on the real clock.
//!
//! The very [`ModelApi`](crate::model::ModelApi) the simulator runs, behind an axum server: each
//! request costs its `x-cost` header (default 1), the hidden quota is a sliding window of 60 s
//! of story time, a story plays from the server's start (or its last `POST /reset`), and
//! `--speed K` runs it all K times faster ([`Speed`](crate::Speed) says exactly how time and
//! quotas scale). `--quirk` adds the odd headers some real servers send.
//!
//! `--llm` serves another shape: a model API ([`LlmServer`]), the
//! [`LlmApi`](crate::model::LlmApi) of `compare --story llm-batch`, so that a real client with
//! Pacer's token budgets can be run against limits it cannot see. `--llm` (or `--llm openai`)
//! has OpenAI's limits and fields (requests and tokens a minute, a request's prompt and
//! `max_tokens` reserved when it comes) behind `POST /v1/chat/completions`; `--llm anthropic`
//! has Anthropic's ([`LlmDialect`](crate::model::LlmDialect): requests, input tokens and output tokens a minute, the
//! prompt taken from the input tokens and `max_tokens` reserved from the output tokens, given
//! back at the end above what was written; `anthropic-ratelimit-*` fields with RFC 3339 resets,
//! `retry-after` on a 429) behind `POST /v1/messages`. Both speak their vendor's bodies and
//! errors, so an SDK-shaped client works unchanged. `--speed` applies to both.

mod args;
mod dialect;
mod junk;
mod llm;
mod llm_server;
mod llm_stats;
mod model;
mod quirk;
mod server;
mod stats;

pub use args::{ServeArgs, execute};
pub use dialect::HeaderDialect;
pub use junk::{HUGE_POLICY_BYTES, Junk, REPEATED_REMAINING_LINES};
pub use llm::{BYTES_PER_TOKEN, DEFAULT_MAX_TOKENS, prompt_tokens};
pub use llm_server::{LlmServeOptions, LlmServer};
pub use llm_stats::{LLM_SHAPE, LlmStats};
pub use model::{Answer, ServedModel};
pub use quirk::{
    JUNK_EVERY, QUIRK_NAMES, Quirk, Quirks, RETRY_AFTER_EVERY, SUCCESS_RETRY_AFTER_SECS,
};
pub use server::{COST_HEADER, ServeOptions, Server, router};
pub use stats::{SERVER_NAME, ServerStats};
