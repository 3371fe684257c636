//! Pacer's algorithms, free of HTTP clients, Redis and sleeping.
//!
//! Every algorithm here is a pure function of `(state, now, input)` that returns a decision: a
//! rate, a delay, an ETA. The thin async shells read an injected [`Clock`], ask the algorithm,
//! and sleep. The simulator runs the very same code on virtual time.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;

#[cfg(any(test, feature = "test-util"))]
pub use clock::ManualClock;
pub use clock::{Clock, RealClock, Sleep, Timestamp};

// Strict discrete sliding windows (seed 004).
mod window;
#[cfg(any(test, feature = "test-util"))]
pub use window::conformance;
pub use window::{
    BoxError, EtaOutcome, EventsOutcome, FallbackWindowStore, FillOutcome, GeometryError,
    HEADER_BYTES, MAX_COUNTER_WIDTH_BITS, MAX_FRAMES, MAX_WINDOW_MICROS, MemoryWindowStore,
    TryOutcome, WindowError, WindowFuture, WindowGeometry, WindowStore, WindowTime, check_limit,
    check_limited_call,
};
