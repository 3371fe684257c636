//! One fleet, one budget: processes that call the same API with the same key share one learned
//! rate through a store (Redis, or memory for tests and the simulator), with live membership.
//!
//! Each process's limiter of an endpoint is a **member** of the fleet `limiter name × endpoint
//! key`. Members sync with the store every [`FleetOptions::period`] (and at once after a
//! throttle): a sync renews the member's lease (the live count replaces `InstanceCount`),
//! reports what it measured, and reads the fleet's state. The fleet runs **one** controller for
//! the whole budget, kept in the store with what it remembers ([`FleetMember`]): a throttle any
//! member sees cuts the fleet's rate once; each period one member, picked by the store, runs the
//! controller's tick on what all of them reported. Each member sends its share of the fleet's
//! rate: a member that asks for less than an even share takes what it asks and some room, the
//! others split the rest.
//!
//! Nothing here does IO: a driver (the simulator on virtual time, `pacer-redis`'s task beside a
//! middleware) asks [`FleetMember::poll`] what to send, sends it to a [`FleetStore`], hands the
//! answer back and applies [`FleetMember::share`] to the limiter, whose controller is a
//! [`FleetFollower`]. No request waits on the store.

#[cfg(any(test, feature = "test-util"))]
pub mod conformance;
mod follower;
mod handle;
mod join;
mod limiter;
mod member;
mod memory;
mod options;
mod protocol;
mod store;

pub use follower::{FleetFollower, FleetLink};
pub use handle::{FleetHandle, Steered};
pub use join::Fleet;
pub use member::{Drawn, FleetCall, FleetMember};
pub use memory::MemoryFleetStore;
pub use options::FleetOptions;
pub use protocol::{
    CommitReply, CommitRequest, DrawReply, DrawRequest, Gauges, SyncReply, SyncRequest, TickData,
};
pub use store::{FleetError, FleetFuture, FleetStore, NewsFuture};
