//! The discrete-event engine that drives each instance's client on virtual time.

mod driver;
mod events;
mod recorder;

pub use driver::{RunResult, run};
