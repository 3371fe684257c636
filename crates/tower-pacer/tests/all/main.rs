//! tower-pacer's tests: the layer against a loopback server, and the layer beside the reqwest
//! middleware on the same manual clock.

mod bodies;
mod fleet;
mod layer;
mod max_concurrent;
mod metrics;
mod same_times;
mod settlement;
mod support;
#[cfg(feature = "tonic")]
mod tonic;
