//! The fleet's side of the event loop: the members' store calls (syncs and commits, on their
//! wakes) and the draws from the fleet's pool, each a round trip of [`STORE_LATENCY`] each way.

use super::{Engine, STORE_LATENCY};
use crate::engine::events::EventKind;
use crate::modes::{FLEET_KEY, StoreAnswer};
use pacer_core::{Drawn, FleetCall, FleetError, Timestamp};

impl Engine<'_> {
    /// A scheduled wake: the client's store call, if it has one to make.
    pub(super) fn wake(&mut self, instance: u32, now: Timestamp) {
        let i = instance as usize;
        if self.woken[i] != Some(now) {
            return; // A later wake superseded this one.
        }
        self.woken[i] = None;
        if self.stopped[i] {
            return;
        }
        let (changes, call) = self.clients[i].wake(now);
        self.apply(instance, changes);
        if let Some(call) = call {
            self.call_store(instance, call, now);
        }
        self.arm(instance, now, now);
        self.arm_wake(instance, now);
    }

    /// Sends a store call: it reaches the store after [`STORE_LATENCY`].
    pub(super) fn call_store(&mut self, instance: u32, call: FleetCall, now: Timestamp) {
        let event = EventKind::StoreCall {
            instance,
            call,
            sent: now,
        };
        self.agenda.push(now + STORE_LATENCY, event);
    }

    /// A call reaches the store: answered at once (the answer back after [`STORE_LATENCY`]),
    /// or lost while the store is down.
    pub(super) fn store_call(
        &mut self,
        instance: u32,
        call: FleetCall,
        sent: Timestamp,
        now: Timestamp,
    ) {
        if self.story.store_down(now.as_duration()) {
            return; // The member's timeout notices.
        }
        let answer = match call {
            FleetCall::Sync(request) => {
                StoreAnswer::Synced(self.store.sync_at(FLEET_KEY, &request, now))
            }
            FleetCall::Commit(request) => {
                let reply = self.store.commit_at(FLEET_KEY, &request, now);
                if reply.committed && request.urgent {
                    // The store publishes it: every other member hears of it.
                    for other in 0..self.clients.len() as u32 {
                        if other != instance {
                            self.agenda
                                .push(now + STORE_LATENCY, EventKind::News { instance: other });
                        }
                    }
                }
                StoreAnswer::Committed(reply)
            }
            // A call of a kind added later: the simulator does not know it.
            _ => return,
        };
        let event = EventKind::StoreAnswer {
            instance,
            answer: Some(answer),
            sent,
        };
        self.agenda.push(now + STORE_LATENCY, event);
    }

    /// Schedules the instance's next wake, if it wants one.
    pub(super) fn arm_wake(&mut self, instance: u32, now: Timestamp) {
        let i = instance as usize;
        let Some(at) = self.clients[i].next_wake_at() else {
            return;
        };
        let at = at.max(now);
        if self.woken[i] != Some(at) {
            self.woken[i] = Some(at);
            self.agenda.push(at, EventKind::Wake { instance });
        }
    }

    /// An attempt asks its instance's client for units: first from its fleet's pool, when the
    /// fleet draws from one (a round trip to the store, and the wait the store gives), then from
    /// its own limiter.
    pub(super) fn queue(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        if self.stopped[instance as usize] {
            self.recorder.rejected();
            return;
        }
        let units = self.requests[request as usize].units;
        let client = &mut self.clients[instance as usize];
        if let Some(draw) = client.pool(units, now) {
            let at_store = now + STORE_LATENCY;
            let answer = if self.story.store_down(at_store.as_duration()) {
                Err(FleetError::unavailable("the store is down"))
            } else {
                Ok(self.store.draw_at(FLEET_KEY, &draw, at_store))
            };
            let back = at_store + STORE_LATENCY;
            let (drawn, changes) = client.on_draw(answer.as_ref(), now);
            self.apply(instance, changes);
            match drawn {
                Drawn::Go(at) => {
                    let drawn = EventKind::Drawn {
                        instance,
                        request,
                        attempt,
                    };
                    self.agenda.push(at.max(back), drawn);
                    return;
                }
                Drawn::TooLong(_) => {
                    self.recorder.rejected();
                    return;
                }
                _ => {}
            }
        }
        self.acquire(instance, request, attempt, now);
    }

    /// An attempt's drawn units are due: it goes through its own limiter, unless a stop the
    /// server ordered since holds it; then it waits the stop out and draws again (the units it
    /// drew are spent: a thousand members' draws, held through a stop and sent when it ends,
    /// would be one burst).
    pub(super) fn drawn(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        self.after_hold(instance, request, attempt, now, Self::acquire);
    }
}
