//! The fleet store contract: two atomic calls on one fleet's key, and `leave`.
//!
//! As with windows, the trait is narrow: a store makes each call atomic and reads its own clock
//! (the fleet's one timeline). What the calls mean is fixed here and checked by one conformance
//! suite that runs against every store (`pacer_core::fleet_conformance`, feature `test-util`).
//! What a member does with the answers — the controller, the shares, the fallback when the
//! store is down — is [`FleetMember`](crate::FleetMember)'s, the same for every store.

use super::{CommitReply, CommitRequest, DrawReply, DrawRequest, SyncReply, SyncRequest};
use crate::BoxError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a [`FleetStore`] call returns.
pub type FleetFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, FleetError>> + Send + 'a>>;

/// A fleet store call failed: the store is unreachable or answered something else. A member
/// goes on with its last share and then its own controller; it never waits on the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The store could not be reached in time (refused, dropped, timed out).
    #[error("the fleet store is unavailable: {source}")]
    Unavailable {
        /// Why.
        #[source]
        source: BoxError,
    },
    /// The store has no pool ([`FleetStore::draw`]'s default): its members keep their shares.
    #[error("this fleet store has no pool")]
    NoPool,
    /// The store answered, but not as a fleet store should (a value it cannot have written, a
    /// state no Pacer wrote).
    #[error("the fleet store failed: {source}")]
    Backend {
        /// Why.
        #[source]
        source: BoxError,
    },
}

impl FleetError {
    /// An [`FleetError::Unavailable`] from any error.
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        FleetError::Unavailable {
            source: source.into(),
        }
    }

    /// A [`FleetError::Backend`] from any error.
    pub fn backend(source: impl Into<BoxError>) -> Self {
        FleetError::Backend {
            source: source.into(),
        }
    }
}

/// Where a fleet's shared state lives: in memory (tests, the simulator, one process), or in
/// Redis for every process of the fleet.
///
/// A key holds one fleet: its members (each with a lease), their last gauges, the sum of the
/// accepted units they reported since the last tick, the state (an opaque value and its
/// version) and the tick's schedule. The semantics, identical for every store:
///
/// * [`sync`](Self::sync) renews the caller's lease (`now + lease`), drops every member whose
///   lease has ended, keeps the caller's gauges, adds its accepted units to the sum, and
///   answers the store's `now`, the number of live members, the state's version and the state
///   itself when that version differs from the caller's. When a tick is due (never ticked, or
///   its `next` time reached) and no other member holds a live claim on it, the caller gets
///   the claim for `claim` and the tick's data: the sum and every live member's gauges.
/// * [`commit`](Self::commit) writes the state only over `expected_version` (0: there is none),
///   bumping the version by one; otherwise it answers the state in the store. A commit with a
///   tick also takes the tick's accepted units off the sum (what members added since stays),
///   sets the next tick's time and releases the caller's claim.
/// * [`draw`](Self::draw) takes a request's units from the fleet's pool, a bucket kept with the
///   fleet and filled at the rate the caller gives (GCRA: it answers when the request may go,
///   at most `max_wait` ahead, or takes nothing). A store without a pool answers
///   [`FleetError::NoPool`], and its members keep their shares.
/// * [`leave`](Self::leave) drops a member at once.
/// * A fleet no member syncs for a day is forgotten.
///
/// # Example
///
/// A store that counts its commits, around any other store:
///
/// ```
/// use pacer_core::{
///     CommitReply, CommitRequest, FleetFuture, FleetStore, MemoryFleetStore, SyncReply,
///     SyncRequest,
/// };
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Debug)]
/// struct Counted<S> {
///     inner: S,
///     commits: AtomicU64,
/// }
///
/// impl<S: FleetStore> FleetStore for Counted<S> {
///     fn sync<'a>(&'a self, key: &'a str, request: &'a SyncRequest) -> FleetFuture<'a, SyncReply> {
///         self.inner.sync(key, request)
///     }
///     fn commit<'a>(
///         &'a self,
///         key: &'a str,
///         request: &'a CommitRequest,
///     ) -> FleetFuture<'a, CommitReply> {
///         Box::pin(async move {
///             let reply = self.inner.commit(key, request).await?;
///             if reply.committed {
///                 self.commits.fetch_add(1, Ordering::Relaxed);
///             }
///             Ok(reply)
///         })
///     }
///     fn leave<'a>(&'a self, key: &'a str, member: &'a str) -> FleetFuture<'a, ()> {
///         self.inner.leave(key, member)
///     }
/// }
///
/// let store = Counted { inner: MemoryFleetStore::new(pacer_core::RealClock::new()), commits: AtomicU64::new(0) };
/// # let _ = store;
/// ```
pub trait FleetStore: Send + Sync + fmt::Debug {
    /// A member's periodic call (see the trait's rules).
    fn sync<'a>(&'a self, key: &'a str, request: &'a SyncRequest) -> FleetFuture<'a, SyncReply>;

    /// Writes the fleet's state over the version it was made from.
    fn commit<'a>(
        &'a self,
        key: &'a str,
        request: &'a CommitRequest,
    ) -> FleetFuture<'a, CommitReply>;

    /// Drops `member` from the fleet at once (a process that stops).
    fn leave<'a>(&'a self, key: &'a str, member: &'a str) -> FleetFuture<'a, ()>;

    /// Takes a request's units from the fleet's pool (see the trait's rules). The default has
    /// no pool: it answers [`FleetError::NoPool`].
    fn draw<'a>(&'a self, key: &'a str, request: &'a DrawRequest) -> FleetFuture<'a, DrawReply> {
        let _ = (key, request);
        Box::pin(async { Err(FleetError::NoPool) })
    }

    /// Resolves when a member commits urgently to `key` from now on (a cut, a stop): the
    /// members waiting on it sync at once instead of at their next period. The default never
    /// resolves (a store that cannot tell: members hear at their next sync).
    fn news<'a>(&'a self, key: &'a str) -> NewsFuture<'a> {
        let _ = key;
        Box::pin(std::future::pending())
    }
}

/// The future [`FleetStore::news`] returns.
pub type NewsFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

impl<S: FleetStore + ?Sized> FleetStore for Arc<S> {
    fn sync<'a>(&'a self, key: &'a str, request: &'a SyncRequest) -> FleetFuture<'a, SyncReply> {
        (**self).sync(key, request)
    }

    fn commit<'a>(
        &'a self,
        key: &'a str,
        request: &'a CommitRequest,
    ) -> FleetFuture<'a, CommitReply> {
        (**self).commit(key, request)
    }

    fn leave<'a>(&'a self, key: &'a str, member: &'a str) -> FleetFuture<'a, ()> {
        (**self).leave(key, member)
    }

    fn news<'a>(&'a self, key: &'a str) -> NewsFuture<'a> {
        (**self).news(key)
    }

    fn draw<'a>(&'a self, key: &'a str, request: &'a DrawRequest) -> FleetFuture<'a, DrawReply> {
        (**self).draw(key, request)
    }
}
