//! The discrete-event engine that drives each instance's client on virtual time.

mod driver;
mod events;
pub(crate) mod recorder;

pub use driver::{RunResult, STORE_LATENCY, run};
pub(crate) use events::Agenda;
