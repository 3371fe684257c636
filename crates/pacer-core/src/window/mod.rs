//! Strict discrete (framed) sliding windows: "at most `limit` events in any span of N frames".
//!
//! The geometry ([`WindowGeometry`]) fixes the frames and the counter width; a store
//! ([`WindowStore`]) keeps one window per key and makes each operation atomic: in memory
//! ([`MemoryWindowStore`]) or in Redis (`pacer-redis`). The frame ring behind both is described in
//! `ring.rs` and in `docs/windows.md`.

#[cfg(any(test, feature = "test-util"))]
pub mod conformance;
mod error;
mod failure;
mod fallback;
mod geometry;
mod memory;
mod ops;
mod outcome;
mod ring;
mod store;
mod time;

pub use error::{BoxError, WindowError, check_limit, check_limited_call};
pub use failure::StoreFailure;
pub use fallback::FallbackWindowStore;
pub use geometry::{GeometryError, WindowGeometry};
pub use memory::MemoryWindowStore;
pub use outcome::{EtaOutcome, EventsOutcome, FillOutcome, TryOutcome};
pub use store::{WindowFuture, WindowStore};
pub use time::WindowTime;
