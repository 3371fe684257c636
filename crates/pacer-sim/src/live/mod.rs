//! `pacer-sim live`: real reqwest clients with Pacer's middleware, driving `compare`'s demand
//! against a real HTTP target, a `pacer-sim serve` or anyone's API.
//!
//! Each instance is one `reqwest::Client` with its own `PacerMiddleware` (`InstanceCount` = the
//! number of instances), as one process of a fleet. The demand is `compare`'s very
//! [`Arrivals`](crate::Arrivals) for the story, seed and options, each arrival one request whose
//! cost goes in the `x-cost` header, played on the real clock at the run's
//! [`Speed`](crate::Speed). A probe middleware inside Pacer's sees every attempt as it is sent,
//! so the columns are counted as `compare` counts them, in story time.

mod args;
mod context;
mod instance;
mod options;
mod probe;
mod progress;
mod record;
mod session;
mod target;

pub use args::{LiveArgs, execute};
pub use options::{LIVE_MODE_NAMES, LiveMode, LiveOptions, parse_duration};
pub use progress::ProgressStyle;
pub use session::{LiveRun, LiveSession, ModeRun, run_live};
