//! One window on explicit times: the reference the Redis store's Lua is compared with, byte for
//! byte, including on a clock that steps back (which no `Clock`-driven store can show).

use crate::window::{
    EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowGeometry, WindowTime,
    ops,
};

/// The window algorithm of the memory store on a single key, with `now` passed to each call.
///
/// ```
/// use pacer_core::conformance::ReferenceWindow;
/// use pacer_core::{WindowGeometry, WindowTime};
/// use std::time::Duration;
///
/// let g = WindowGeometry::new(3, Duration::from_millis(1), 8)?;
/// let mut w = ReferenceWindow::new(g);
/// let t = WindowTime::from_micros(10_000);
/// assert_eq!(w.try_take(t, 2, 2)?.taken, 2);
/// assert_eq!(w.try_take(t, 2, 1)?.eta, WindowTime::from_micros(14_000));
/// assert_eq!(w.bytes().len(), g.key_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ReferenceWindow {
    geometry: WindowGeometry,
    data: Vec<u8>,
}

impl ReferenceWindow {
    /// An empty window (no key).
    #[must_use]
    pub fn new(geometry: WindowGeometry) -> Self {
        ReferenceWindow {
            geometry,
            data: Vec::new(),
        }
    }

    /// The key's bytes (empty: no key), in the layout the Redis store keeps.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// `try_take` at `now`.
    ///
    /// # Errors
    ///
    /// As [`WindowStore::try_take`](crate::WindowStore::try_take).
    pub fn try_take(
        &mut self,
        now: WindowTime,
        limit: u64,
        count: u64,
    ) -> Result<TryOutcome, WindowError> {
        Ok(ops::try_take(&self.geometry, &mut self.data, now, limit, count)?.0)
    }

    /// `fill` at `now`.
    ///
    /// # Errors
    ///
    /// As [`WindowStore::fill`](crate::WindowStore::fill).
    pub fn fill(
        &mut self,
        now: WindowTime,
        limit: u64,
        count: u64,
    ) -> Result<FillOutcome, WindowError> {
        Ok(ops::fill(&self.geometry, &mut self.data, now, limit, count)?.0)
    }

    /// `events` at `now`.
    ///
    /// # Errors
    ///
    /// As [`WindowStore::events`](crate::WindowStore::events).
    pub fn events(&mut self, now: WindowTime, count: u64) -> Result<EventsOutcome, WindowError> {
        Ok(ops::events(&self.geometry, &mut self.data, now, count)?.0)
    }

    /// `eta` at `now`.
    ///
    /// # Errors
    ///
    /// As [`WindowStore::eta`](crate::WindowStore::eta).
    pub fn eta(&self, now: WindowTime, limit: u64, count: u64) -> Result<EtaOutcome, WindowError> {
        ops::eta(&self.geometry, &self.data, now, limit, count)
    }
}
