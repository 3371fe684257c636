//! The modes a comparison runs: how each client instance decides when its requests go.

mod exchange;
mod fleet;
mod headers;
mod limiter;
mod mode;
mod none;
mod registry;

pub use crate::engine::STORE_LATENCY;
pub use exchange::{Answered, ExchangeClient, Settled};
pub(crate) use fleet::FLEET_KEY;
pub use fleet::{FleetClient, FleetMode, StoreAnswer};
pub use headers::{HeadersMode, header_map, server_quota};
pub use limiter::{LimiterClient, LimiterMode, OptionsAdjust, WindowsFn, signal_of};
pub use mode::{Client, ClientSetup, Mode, ModeError, NO_RETRY_AFTER_DELAY, Response};
pub use none::NoLimiter;
pub use registry::{
    LIBRARY_DEFAULT_MODES, MODE_NAMES, NAMED_ONLY_MODES, default_modes, mode_by_name,
};
