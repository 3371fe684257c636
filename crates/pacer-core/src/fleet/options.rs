//! How a member talks to its fleet's store.

use crate::validation::{Checker, InvalidOptions, format_duration};
use std::time::Duration;

/// The shortest `Period`: a member syncs no more often, whatever its window
/// ([`FleetMember::period`](crate::FleetMember::period)'s floor).
pub(crate) const LEAST_PERIOD: Duration = Duration::from_millis(50);

/// The longest `Lease`: a member that stops is counted for its lease; past an hour it holds its
/// share from the others for longer than any deploy takes to replace it.
const MOST_LEASE: Duration = Duration::from_secs(3600);

/// How often a member syncs with its fleet's store, how long it counts as alive, and when it
/// goes on alone.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct FleetOptions {
    /// How often each member syncs (renews its lease, reports, reads the fleet's rate), and how
    /// often the fleet's controller ticks. Default 250 ms, at least 50 ms: a cut one member commits reaches the
    /// others within it. A member also syncs at once when one of its requests is throttled. A
    /// fleet whose window is short syncs more often: every tenth of the window its controller
    /// counts over when that is shorter than `period`, but not under 50 ms
    /// ([`FleetMember::period`](crate::FleetMember::period)).
    pub period: Duration,
    /// How long a member counts as alive without a sync: one that stops is gone from the
    /// count this long after its last sync. Default 3 s; at least twice `period`, at most an
    /// hour.
    pub lease: Duration,
    /// The longest a store call may take before it counts as failed. Default 100 ms, at most
    /// `lease`. No request waits on a store call: they run beside the requests.
    pub timeout: Duration,
    /// How long a member goes on with its last share when the store does not answer, before it
    /// runs its own controller (its share of the fleet's estimate first). Default 2 s, at most
    /// an hour.
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
        c.relation(
            self.period >= LEAST_PERIOD,
            "Period",
            format_duration(self.period),
            format!(
                "must be at least {}: a member syncs no more often (a shorter period spends the \
                 store's time on syncs)",
                format_duration(LEAST_PERIOD)
            ),
        );
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
        c.relation(
            self.lease <= MOST_LEASE,
            "Lease",
            format_duration(self.lease),
            format!(
                "must be at most {}: a member that stopped holds its share from the others \
                 until its lease ends",
                format_duration(MOST_LEASE)
            ),
        );
        c.relation(
            self.timeout <= self.lease,
            "Timeout",
            format_duration(self.timeout),
            format!(
                "must be at most Lease ({}): a member waiting longer on one call has lost its \
                 place in the fleet",
                format_duration(self.lease)
            ),
        );
        c.relation(
            self.fallback_after <= MOST_LEASE,
            "FallbackAfter",
            format_duration(self.fallback_after),
            format!(
                "must be at most {}: a member cut off from the store that long runs on a share \
                 the others no longer know",
                format_duration(MOST_LEASE)
            ),
        );
        c.finish()
    }
}
