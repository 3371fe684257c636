//! `pacer-sim serve`: the model API of `compare` over real HTTP, on the real clock.
//!
//! The very [`ModelApi`](crate::model::ModelApi) the simulator runs, behind an axum server: each
//! request costs its `x-cost` header (default 1), the hidden quota is a sliding window of 60 s
//! of story time, a story plays from the server's start (or its last `POST /reset`), and
//! `--speed K` runs it all K times faster ([`Speed`](crate::Speed) says exactly how time and
//! quotas scale). `--quirk` adds the odd headers some real servers send.

mod args;
mod dialect;
mod junk;
mod model;
mod quirk;
mod server;
mod stats;

pub use args::{ServeArgs, execute};
pub use dialect::HeaderDialect;
pub use junk::{HUGE_POLICY_BYTES, Junk, REPEATED_REMAINING_LINES};
pub use model::{Answer, ServedModel};
pub use quirk::{
    JUNK_EVERY, QUIRK_NAMES, Quirk, Quirks, RETRY_AFTER_EVERY, SUCCESS_RETRY_AFTER_SECS,
};
pub use server::{COST_HEADER, ServeOptions, Server, router};
pub use stats::{SERVER_NAME, ServerStats};
