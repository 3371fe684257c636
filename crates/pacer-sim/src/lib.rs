//! `pacer-sim`: Pacer's real limiter against a model API with a hidden quota, on virtual time.
//!
//! `docs/simulation.md` describes the model and every assumption in it.

pub mod model;
mod options;

pub use model::{Arrivals, Story};
pub use options::{
    SIM_INITIAL_UNITS_PER_MINUTE, SIM_MAX_UNITS_PER_MINUTE, SIM_MAX_WAIT, SIM_QUEUE_LIMIT,
    SimOptions, sim_limiter_defaults,
};
