//! The world the limiters run in: the model API with its hidden quota, the stories that change
//! it, the demand, and the network's latency.

mod api;
mod bucket;
mod counter;
mod demand;
mod fixed;
mod gcra;
mod headers;
mod latency;
mod limit_req;
mod llm;
mod shape;
mod story;
mod window;

pub use api::{ModelApi, QUOTA_WINDOW, Verdict, retry_after_secs, window_units};
pub use bucket::Bucket;
pub use counter::SlidingCounter;
pub use demand::{Arrivals, COST_MIX, COSTS_NAMES, Costs, Request, mean_cost, splitmix64};
pub use fixed::FixedWindow;
pub use gcra::Gcra;
pub use headers::{ModelHeaders, POLICY_NAME};
pub use latency::{MAX_LATENCY, MIN_LATENCY, latency};
pub use limit_req::LimitReq;
pub use llm::{
    AnthropicQuota, CHAT_COMPLETIONS_PATH, LlmAnswer, LlmApi, LlmDialect, LlmQuota, MESSAGES_PATH,
    go_duration,
};
pub use shape::{Meter, SHAPE_NAMES, ServerShape};
pub use story::{
    DEFAULT_STORY, DemandBurst, Join, Leave, MORE_STORY_NAMES, Neighbour, QuotaDrop, QuotaStep,
    STORY_NAMES, ServerStop, StoreOutage, Story,
};
pub use window::SlidingWindow;

use pacer_core::Timestamp;
use std::time::Duration;

/// A moment as the exact meters keep it: integer nanoseconds since time 0.
fn nanos(t: Timestamp) -> u128 {
    t.as_duration().as_nanos()
}

/// The moment `nanos` nanoseconds after time 0 (the last one a `Timestamp` holds, past it).
fn at_nanos(nanos: u128) -> Timestamp {
    Timestamp::ZERO + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The moment `ms` milliseconds after time 0, for the models' tests.
#[cfg(test)]
fn at_ms(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}
