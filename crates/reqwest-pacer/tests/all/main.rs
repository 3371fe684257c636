//! The middleware end to end, over wiremock, with short real durations. No test asserts an upper
//! bound on elapsed time (the machines are shared); lower bounds are safe, a sleep never ends
//! early.
#![allow(clippy::disallowed_methods)] // tests measure elapsed real time (lower bounds only)

mod support;

mod cancellation;
mod classifier;
mod concurrency;
mod cost_and_keys;
mod defaults;
mod dialects;
mod fleet;
mod github;
mod headers;
mod hostile;
mod live_updates;
mod load;
mod max_concurrent;
mod memory;
mod observability;
mod per_request;
mod query_cost;
mod real_servers;
mod refusals;
mod rejection;
mod retry_after;
mod settlement;
mod streaming;
mod units;
mod windows;
