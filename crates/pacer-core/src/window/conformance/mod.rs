//! The conformance suite every [`WindowStore`] must pass (feature `test-util`).
//!
//! One suite, run against every store: the memory store's unit tests and `pacer-redis`'s
//! integration tests both expand [`window_conformance_tests!`](crate::window_conformance_tests)
//! with their own [`Fixture`]. The scenarios run on a [`ManualClock`] shared by the test and the
//! store, so every expected time is exact. The Redis store reads such a clock through a test
//! build of its Lua library; see `pacer-redis`.
//!
//! [`model`] holds the exact sliding log and random plans for property tests;
//! [`ReferenceWindow`] runs the algorithm on explicit times, for comparing another
//! implementation (the Lua) with it.

pub mod model;
mod reference;
mod scenarios;

pub use reference::ReferenceWindow;
pub use scenarios::*;

use crate::ManualClock;
use crate::window::WindowStore;
use std::future::Future;
use std::pin::Pin;

/// A boxed future, as the fixture returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A store under test, with the manual clock it reads.
///
/// # Example
///
/// The memory store's fixture:
///
/// ```
/// use pacer_core::conformance::{BoxFuture, Fixture};
/// use pacer_core::{ManualClock, MemoryWindowStore, WindowStore};
///
/// struct Memory {
///     clock: ManualClock,
///     store: MemoryWindowStore,
/// }
///
/// impl Fixture for Memory {
///     fn store(&self) -> &dyn WindowStore {
///         &self.store
///     }
///     fn clock(&self) -> &ManualClock {
///         &self.clock
///     }
///     fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
///         Box::pin(async move { self.store.raw(key).is_some() })
///     }
/// }
///
/// let clock = ManualClock::new();
/// let fixture = Memory { store: MemoryWindowStore::new(clock.clone()), clock };
/// # let _ = fixture.store();
/// ```
pub trait Fixture: Send + Sync {
    /// The store under test.
    fn store(&self) -> &dyn WindowStore;

    /// The manual clock the store reads.
    fn clock(&self) -> &ManualClock;

    /// Whether the store holds `key`.
    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool>;

    /// Removes what the test left behind (after a passing scenario).
    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Expands to one `#[tokio::test]` per conformance scenario. `$fixture` is an expression whose
/// value is a future of a [`Fixture`], evaluated afresh for each test.
///
/// ```
/// use pacer_core::conformance::{BoxFuture, Fixture};
/// use pacer_core::{ManualClock, MemoryWindowStore, WindowStore};
///
/// struct Memory {
///     clock: ManualClock,
///     store: MemoryWindowStore,
/// }
///
/// impl Fixture for Memory {
///     fn store(&self) -> &dyn WindowStore {
///         &self.store
///     }
///     fn clock(&self) -> &ManualClock {
///         &self.clock
///     }
///     fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
///         Box::pin(async move { self.store.raw(key).is_some() })
///     }
/// }
///
/// async fn memory() -> Memory {
///     let clock = ManualClock::new();
///     Memory { store: MemoryWindowStore::new(clock.clone()), clock }
/// }
///
/// pacer_core::window_conformance_tests!(memory());
/// ```
#[macro_export]
macro_rules! window_conformance_tests {
    ($fixture:expr) => {
        $crate::window_conformance_tests!(@each $fixture;
            recording_and_expiration,
            overflow_and_release,
            partial_filling,
            read_only_eta,
            zero_count_never_creates_a_key,
            count_above_limit_is_never,
            limit_above_capacity_is_refused,
            geometry_change_is_detected,
            limit_varies_per_call,
            events_refuse_overflow_and_keep_the_total,
            an_event_lives_n_to_n_plus_one_frames,
            now_is_the_store_clock,
            keys_are_independent,
            clear_forgets_a_key,
            a_whole_window_later_everything_has_left,
            counters_wrap_over_many_windows,
        );
    };
    (@each $fixture:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let fixture = $fixture.await;
                $crate::conformance::$name(&fixture).await;
                $crate::conformance::Fixture::cleanup(&fixture).await;
            }
        )*
    };
}
