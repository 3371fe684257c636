//! The adaptive limiter: a token bucket of units per minute whose rate a controller moves, a FIFO
//! queue with a bounded wait, and the Retry-After pause.

pub(crate) mod accepted;
mod bucket;
pub(crate) mod control;
mod core;
mod cost_ceiling;
mod feedback;
mod memory;
mod options;
mod outcome;
mod queue;
mod refill;
mod send_rate;
mod server;
mod server_quota;
mod shell;
mod slack;
mod slots;
mod snapshot;

pub use self::core::LimiterCore;
pub use memory::{ControllerMemory, LimiterMemory};
pub(crate) use options::BarePause;
pub use options::{ControllerKind, LimiterOptions, UnknownController};
pub use outcome::{Acquired, Changes, Feedback, RateChange, RateChangeReason, Signal};
pub use queue::{INTERACTIVE_PER_BATCH, Priority, Ticket};
pub use server_quota::ServerQuota;
pub use shell::{Acquire, Limiter, LimiterBuilder, Permit};
pub use snapshot::{LimiterSnapshot, LimiterStats};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod shell_slot_tests;
#[cfg(test)]
mod shell_tests;
#[cfg(test)]
mod tests;
