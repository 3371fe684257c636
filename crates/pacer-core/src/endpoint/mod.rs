//! Per-endpoint rate-limit state: the last [`crate::RateLimitInfo`] of each endpoint key,
//! adjusted for elapsed time on every read, in bounded memory, shared by concurrent requests.

mod shard;
mod store;
mod view;

pub use store::{EndpointStore, EndpointStoreBuilder};
pub use view::{EndpointSnapshot, EndpointView};
