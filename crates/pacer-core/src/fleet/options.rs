//! How a member talks to its fleet's store.

use crate::validation::{Checker, InvalidOptions, format_duration};
use std::time::Duration;

/// How often a member syncs with its fleet's store, how long it counts as alive, and when it
/// goes on alone.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct FleetOptions {
    /// How often each member syncs (renews its lease, reports, reads the fleet's rate), and how
    /// often the fleet's controller ticks. Default 250 ms: a cut one member commits reaches the
    /// others within it. A member also syncs at once when one of its requests is throttled. A
    /// fleet whose window is short syncs more often: every tenth of the window its controller
    /// counts over when that is shorter than `period`, but not under 50 ms
    /// ([`FleetMember::period`](crate::FleetMember::period)).
    pub period: Duration,
    /// How long a member counts as alive without a sync: one that stops is gone from the
    /// count this long after its last sync. Default 3 s; at least twice `period`.
    pub lease: Duration,
    /// The longest a store call may take before it counts as failed. Default 100 ms. No
    /// request waits on a store call: they run beside the requests.
    pub timeout: Duration,
    /// How long a member goes on with its last share when the store does not answer, before it
    /// runs its own controller (its share of the fleet's estimate first). Default 2 s.
    pub fallback_after: Duration,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            period: Duration::from_millis(250),
            lease: Duration::from_secs(3),
            timeout: Duration::from_millis(100),
            fallback_after: Duration::from_secs(2),
        }
    }
}

impl FleetOptions {
    /// Checks every option; the error names each one out of range.
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        c.nonzero_duration("Period", self.period);
        c.nonzero_duration("Timeout", self.timeout);
        c.nonzero_duration("FallbackAfter", self.fallback_after);
        c.relation(
            self.lease >= self.period * 2,
            "Lease",
            format_duration(self.lease),
            format!(
                "must be at least twice Period ({})",
                format_duration(self.period)
            ),
        );
        c.finish()
    }
}
