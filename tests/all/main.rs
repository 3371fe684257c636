//! End-to-end tests across the crates: the middleware with strict windows kept in a real Redis
//! (found at `REDIS_URL` or started by `pacer_redis::testing`), under faults; the `prometheus`
//! example's exporter. Lower bounds on elapsed time only; never an upper bound.
#![allow(clippy::disallowed_methods)] // tests measure elapsed real time (lower bounds only)

#[cfg(feature = "metrics")]
mod prometheus;
#[cfg(feature = "redis")]
mod redis_fleet;
#[cfg(feature = "redis")]
mod redis_security;
#[cfg(feature = "redis")]
mod redis_windows;
