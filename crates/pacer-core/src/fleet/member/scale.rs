//! A member of a large fleet: its syncs spread so that the fleet's stay under 1,000 a second,
//! and its part in the fleet's pool (whether it draws each request's units from the store, the
//! draw it asks for, what the store's answer means for the request).

use super::{FleetMember, PERIODS_PER_WINDOW};
use crate::Timestamp;
use crate::fleet::{DrawReply, DrawRequest, FleetError};
use std::time::Duration;

/// The syncs a second one fleet's members make together, at most: past `FLEET_SYNCS_PER_SECOND`
/// × `period` members, each syncs every `members / FLEET_SYNCS_PER_SECOND` seconds instead of
/// every period ([`FleetMember::sync_period`]). The ticks keep their period (the members'
/// syncs together still come more often than the ticks fall due), so the fleet's controller
/// runs as before; what a member's own sync carries (its gauges, its accepted units, its share)
/// is older. Where the value comes from: one call a member a second at 1,000 members, and
/// what a sync costs Redis (docs/BENCHMARKS.md, "Fleets: the load on
/// Redis"): a fleet of any size then takes about a twentieth of a Redis core for its syncs.
const FLEET_SYNCS_PER_SECOND: f64 = 1000.0;

/// The most a member moves its next sync, as a fraction of its sync period, when its fleet is
/// large enough to spread its syncs ([`FleetMember::sync_period`]): members a news woke at
/// once (a cut, a stop) drift apart again within a few syncs instead of syncing in step.
const SYNC_JITTER: f64 = 0.2;

/// What a request's draw from the fleet's pool came to ([`FleetMember::on_draw`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drawn {
    /// Its units are taken: it may go at this time, on the member's clock.
    Go(Timestamp),
    /// It would wait longer than it may (until this time, on the member's clock): nothing was
    /// taken, it is refused (`WaitTooLong`).
    TooLong(Timestamp),
    /// The store did not answer (or has no pool): the request waits on the member's own
    /// limiter, at the member's last share.
    Unanswered,
}

impl FleetMember {
    /// How often this member syncs: its [`period`](Self::period), or, in a fleet so large that
    /// its members would together sync more than 1,000 times a second, every `members / 1,000`
    /// seconds (at 1,000 members once a second; its lease is then at least three of these periods
    /// and its `FallbackAfter` two, and each next sync moves by up to a fifth of it, at random,
    /// so that members woken at once drift apart). The fleet's ticks keep their period.
    #[must_use]
    pub fn sync_period(&self) -> Duration {
        self.period().mul_f64(self.spread())
    }

    /// How much longer than its period a member's syncs are spaced ([`sync_period`](Self::sync_period)):
    /// 1 up to 1,000 syncs a second for the whole fleet.
    pub(super) fn spread(&self) -> f64 {
        let period = self.period().as_secs_f64();
        (f64::from(self.members) / FLEET_SYNCS_PER_SECOND / period).max(1.0)
    }

    /// The lease this member asks for: `Lease`, or three sync periods when that is longer (a
    /// member is counted until it missed two syncs at least, however far apart they are).
    pub(super) fn lease(&self) -> Duration {
        self.options.lease.max(self.sync_period() * 3)
    }

    /// `period` moved by up to [`SYNC_JITTER`] of itself, down or up, when the fleet spreads its
    /// syncs; `period` itself otherwise (a small fleet syncs on the beat).
    pub(super) fn jittered(&self, period: Duration) -> Duration {
        if self.spread() <= 1.0 {
            return period;
        }
        // SplitMix64 of the member's id and its sync count: reproducible (the simulator's runs
        // repeat), different for each member and each sync.
        let mut z = self
            .id
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
            .wrapping_add(self.syncs.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        period.mul_f64(1.0 + SYNC_JITTER * (2.0 * unit - 1.0))
    }

    /// This member's share of the fleet's rate as a member that sends from its own queue has it
    /// (max-min fair by demand), whether or not the fleet draws from its pool.
    pub(crate) fn own_share(&self) -> Option<f64> {
        let (_, fleet) = self.fleet.as_ref()?;
        Some(fleet.share(self.members, self.demand.per_minute))
    }

    /// Whether this member draws each request's units from the store's pool: the fleet decided
    /// so (its even share is too small for a queue of its own to use: below about 50 units
    /// within `MaxWait`, docs/fleet.md), its rate is in force, and the store has a pool.
    pub(super) fn draws_from_pool(&self) -> bool {
        !self.no_pool
            && !self.pool_failed
            && self
                .fleet
                .as_ref()
                .is_some_and(|(_, f)| f.is_limiting() && f.is_pooled())
    }

    /// Whether a request at `now` draws from the fleet's pool ([`pool`](Self::pool) gives the
    /// draw): the fleet draws from one, its rate is in force, and the store has a pool.
    #[must_use]
    pub fn draws(&self, now: Timestamp) -> bool {
        self.is_in_force(now) && self.draws_from_pool()
    }

    /// The draw a request of `units` that may wait `max_wait` makes from the fleet's pool
    /// before it is sent ([`FleetStore::draw`](crate::FleetStore::draw)), when the fleet draws
    /// from its pool at `now`; `None` when the member sends from its share (a small fleet, the
    /// fleet's unlimited start, a store that has not answered for `FallbackAfter` or has no
    /// pool). The driver makes the call and hands the answer to [`on_draw`](Self::on_draw).
    #[must_use]
    pub fn pool(&self, units: u64, max_wait: Duration, now: Timestamp) -> Option<DrawRequest> {
        if !self.draws(now) {
            return None;
        }
        let (_, fleet) = self.fleet.as_ref()?;
        let rate = fleet.rate();
        let burst = rate * self.limiter.burst.as_secs_f64() / 60.0;
        // Units are handed out at most a tenth of the window ahead: a cut holds back what is
        // promised no further than that (what a tenth of the window at the old rate sends over
        // the new one), where a queue of its own would have re-paced every waiter.
        let horizon = (fleet.counting_window(&self.limiter) / PERIODS_PER_WINDOW).min(max_wait);
        let mut draw = DrawRequest::new(units as f64, rate, burst, horizon);
        draw.not_before = fleet.pause_until();
        Some(draw)
    }

    /// What the store's answer to a [`pool`](Self::pool) draw means for the request. A store
    /// without a pool is not asked again.
    pub fn on_draw(&mut self, answer: Result<DrawReply, &FleetError>) -> Drawn {
        match answer {
            Ok(reply) => {
                self.pool_waited |= reply.at != Some(reply.now);
                match reply.at {
                    Some(at) => Drawn::Go(self.to_local(at)),
                    None => Drawn::TooLong(self.to_local(reply.earliest)),
                }
            }
            Err(e) => {
                self.no_pool |= matches!(e, FleetError::NoPool);
                self.pool_failed = true;
                Drawn::Unanswered
            }
        }
    }
}
