//! Rate controllers: they decide the next rate on each throttle and each success.

mod aimd;
mod cubic;
mod pacer;
mod rate_controller;
mod state;

pub use aimd::{Aimd, AimdOptions};
pub use cubic::{Cubic, CubicOptions};
pub use pacer::{PacerController, PacerControllerOptions};
pub use rate_controller::RateController;
pub use state::RateControllerState;
