//! The `fleet` mode: every instance is a member of one fleet, sharing the Pacer controller's one
//! learned rate through a store (the simulator's in memory, with a round trip of its own).

use super::limiter::signal_of;
use super::{Client, ClientSetup, LimiterClient, Mode, ModeError, Response};
use pacer_core::{
    Acquired, Changes, CommitReply, ControllerKind, Feedback, FleetCall, FleetFollower, FleetLink,
    FleetMember, FleetOptions, Gauges, LimiterCore, LimiterOptions, RejectReason, SyncReply,
    Ticket, Timestamp,
};
use std::sync::Arc;
use std::time::Duration;

/// The fleet's key in the store: one limiter, one endpoint.
pub(crate) const FLEET_KEY: &str = "pacer-sim:model-api";

/// What the store answered a member's call, as the engine hands it back.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreAnswer {
    /// A sync's answer.
    Synced(SyncReply),
    /// A commit's answer.
    Committed(CommitReply),
}

/// The `fleet` mode: the Pacer controller, one for the whole fleet, kept in the store.
#[derive(Debug, Clone)]
pub struct FleetMode {
    name: String,
    options: FleetOptions,
    /// The limiter options of its members, if not the run's (`InstanceCount` is the run's).
    limiter: Option<LimiterOptions>,
}

impl Default for FleetMode {
    fn default() -> Self {
        FleetMode {
            name: "fleet".to_owned(),
            options: FleetOptions::default(),
            limiter: None,
        }
    }
}

impl FleetMode {
    /// A fleet mode named `name` whose members sync with `options`.
    #[must_use]
    pub fn with_options(name: impl Into<String>, options: FleetOptions) -> Self {
        FleetMode {
            name: name.into(),
            options,
            limiter: None,
        }
    }

    /// `fleet-default`: a fleet whose members have the library's defaults (as `default`'s
    /// limiters): nothing configured, `QuotaWindow` a minute, an unlimited start.
    #[must_use]
    pub fn library_defaults() -> Self {
        FleetMode {
            name: "fleet-default".to_owned(),
            options: FleetOptions::default(),
            limiter: Some(LimiterOptions::default()),
        }
    }
}

impl Mode for FleetMode {
    fn name(&self) -> &str {
        &self.name
    }

    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        let mut options = match &self.limiter {
            Some(own) => {
                let mut o = own.clone();
                o.instance_count = setup.limiter.instance_count;
                o
            }
            None => setup.limiter.clone(),
        };
        options.controller = ControllerKind::Pacer;
        let invalid = |message: String| ModeError::InvalidOptions {
            name: self.name.clone(),
            message,
        };
        self.options
            .validate()
            .map_err(|e| invalid(e.to_string()))?;
        let link = FleetLink::new();
        let follower = FleetFollower::new(&options, Arc::clone(&link));
        let core = LimiterCore::with_controller(options.clone(), Box::new(follower), setup.now)
            .map_err(|e| invalid(e.to_string()))?;
        // The fleet's controller runs on the whole budget: one instance's options.
        let mut whole = options;
        whole.instance_count = 1;
        let member = FleetMember::new(
            FLEET_KEY,
            format!("instance-{}", setup.instance),
            self.options,
            whole,
            setup.now,
        );
        Ok(Box::new(FleetClient {
            limiter: LimiterClient::new(core),
            member,
            link,
            members: 0,
        }))
    }
}

/// One instance of the fleet: its own limiter (whose controller follows the fleet while the
/// store answers), and its member of the fleet.
#[derive(Debug)]
pub struct FleetClient {
    limiter: LimiterClient,
    member: FleetMember,
    link: Arc<FleetLink>,
    /// The member count last applied to the limiter.
    members: u32,
}

impl FleetClient {
    /// The member.
    #[must_use]
    pub fn member(&self) -> &FleetMember {
        &self.member
    }

    /// Puts what the member knows into the limiter ([`FleetMember::steer`]).
    fn apply(&mut self, now: Timestamp) -> Changes {
        let core = self.limiter.core_mut();
        self.member.steer(&self.link, &mut self.members, core, now)
    }
}

impl Client for FleetClient {
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        // A request that drew from the pool was counted when it drew.
        if !self.member.draws(now) {
            self.member.on_asked(units, now);
        }
        self.limiter.acquire(units, now)
    }

    /// The limiter's hold; in a fleet that draws from its pool, the fleet's stop too (a draw
    /// waits it out first, as a request waits in its own limiter's queue otherwise).
    fn hold(&mut self, now: Timestamp) -> Result<Duration, RejectReason> {
        let own = self.limiter.hold(now)?;
        let drawing = self.member.draws(now);
        match self.member.pause_until(now) {
            Some(until) if drawing && until > now => {
                let wait = own.max(until - now);
                let max_wait = self.limiter.core().options().max_wait;
                if wait > max_wait {
                    return Err(RejectReason::WaitTooLong {
                        cause: pacer_core::WaitCause::ServerStop,
                        needed: wait,
                        max_wait,
                    });
                }
                Ok(wait)
            }
            _ => Ok(own),
        }
    }

    fn sent(&mut self, now: Timestamp) {
        self.limiter.sent(now);
    }

    fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        self.limiter.pop_ready(now)
    }

    fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.limiter.next_grant_at(now)
    }

    fn refuse_expired(&mut self, now: Timestamp) -> Changes {
        self.limiter.refuse_expired(now)
    }

    fn not_sent(&mut self, now: Timestamp) {
        self.limiter.not_sent(now);
    }

    fn on_response(&mut self, response: &Response, now: Timestamp) -> Changes {
        let changes = self.limiter.on_response(response, now);
        self.member.on_response(
            &Feedback {
                units: response.units,
                sent_at: response.sent_at,
                signal: signal_of(response.verdict),
            },
            now,
        );
        changes
    }

    fn retry_delay(&self, retry_after: Duration) -> Duration {
        self.limiter.retry_delay(retry_after)
    }

    /// The fleet counts its members itself: the engine's count is not told.
    fn set_instance_count(&mut self, _count: u32, _now: Timestamp) -> Changes {
        Changes::default()
    }

    fn rate(&self) -> Option<f64> {
        self.limiter.rate()
    }

    fn next_wake_at(&self) -> Option<Timestamp> {
        Some(self.member.next_poll_at())
    }

    fn pool(&mut self, units: u64, now: Timestamp) -> Option<pacer_core::DrawRequest> {
        let max_wait = self.limiter.core().options().max_wait;
        let draw = self.member.pool(units, max_wait, now)?;
        self.member.on_asked(units, now);
        Some(draw)
    }

    fn on_draw(
        &mut self,
        answer: Result<&pacer_core::DrawReply, &pacer_core::FleetError>,
        now: Timestamp,
    ) -> (pacer_core::Drawn, Changes) {
        let drawn = self.member.on_draw(answer.copied());
        let mut changes = Changes::default();
        if drawn == pacer_core::Drawn::Unanswered {
            // Back to its share at once, not at the whole rate the pool paced.
            changes = self.apply(now);
        }
        (drawn, changes)
    }

    fn wake(&mut self, now: Timestamp) -> (Changes, Option<FleetCall>) {
        let snapshot = self.limiter.core().snapshot(now);
        let gauges = Gauges::new(
            snapshot.measured_send_rate.unwrap_or(0.0),
            snapshot.queued_units,
            snapshot.waited || snapshot.queue_len > 0,
        );
        let call = self.member.poll(gauges, now);
        // A call that timed out may have taken the fleet out of force.
        (self.apply(now), call)
    }

    fn on_news(&mut self, now: Timestamp) {
        self.member.on_news(now);
    }

    fn on_store(
        &mut self,
        answer: Option<StoreAnswer>,
        sent: Timestamp,
        now: Timestamp,
    ) -> (Changes, Option<FleetCall>) {
        let next = match answer {
            Some(StoreAnswer::Synced(reply)) => self.member.on_sync(reply, sent, now),
            Some(StoreAnswer::Committed(reply)) => self.member.on_commit(reply, now),
            None => {
                self.member.on_failure(now);
                None
            }
        };
        (self.apply(now), next)
    }
}
