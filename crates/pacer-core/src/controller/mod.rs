//! Rate controllers: they decide the next rate on each throttle and each success.

mod aimd;
#[allow(clippy::module_inception)] // the trait of the module, as `limiter::limiter` would be
mod controller;
mod cubic;
mod pacer;
mod paused;
mod pure;
mod rate_controller;
mod state;

pub use aimd::{Aimd, AimdOptions};
pub use controller::{Controller, ControllerContext, ControllerFactory};
pub use cubic::{Cubic, CubicOptions};
pub use pacer::{PacerController, PacerControllerOptions};
pub use pure::PureController;
pub use rate_controller::RateController;
pub use state::RateControllerState;
