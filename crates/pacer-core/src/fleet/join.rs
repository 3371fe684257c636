//! What a driver needs to make its endpoints members of a fleet.

use super::{FleetFollower, FleetHandle, FleetLink, FleetMember, FleetOptions, FleetStore};
use crate::{Clock, Controller, ControllerKind, Endpoint, LimiterOptions, Timestamp};
use std::fmt;
use std::sync::Arc;

/// A fleet every endpoint of a limiter joins: its store and its options. The middleware and
/// the tower layer hold one per limiter made with a fleet; for each new endpoint they build the
/// limiter with [`controller`](Self::controller) and then call [`join`](Self::join), which
/// spawns the member's sync task.
///
/// ```
/// use pacer_core::{Engine, Fleet, FleetLink, FleetOptions, Limiter, LimiterOptions};
/// use pacer_core::{MemoryFleetStore, RealClock, Timestamp};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = Arc::new(RealClock::new());
/// let fleet = Fleet::new(
///     Arc::new(MemoryFleetStore::new(RealClock::new())),
///     FleetOptions::default(),
/// );
/// let options = LimiterOptions::default();
/// let engine = Engine::new(1_000, Duration::from_secs(3600));
/// let link = FleetLink::new();
/// let now = Timestamp::ZERO;
/// let endpoint = engine.endpoint(
///     "https://api.example.com:443",
///     now,
///     || {
///         Limiter::builder(options.clone())
///             .controller(Fleet::controller(&options, Arc::clone(&link)))
///             .build()
///             .unwrap()
///     },
///     |_| {},
/// );
/// assert!(fleet.join("orders", &endpoint, link, &options, clock, now));
/// assert!(endpoint.fleet().is_some());
/// # }
/// ```
#[derive(Clone)]
pub struct Fleet {
    store: Arc<dyn FleetStore>,
    options: FleetOptions,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("store", &self.store)
            .field("options", &self.options)
            .finish()
    }
}

impl Fleet {
    /// A fleet in `store`, its members syncing as `options` say.
    #[must_use]
    pub fn new(store: Arc<dyn FleetStore>, options: FleetOptions) -> Self {
        Fleet { store, options }
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn FleetStore> {
        &self.store
    }

    /// The members' options.
    #[must_use]
    pub fn options(&self) -> &FleetOptions {
        &self.options
    }

    /// The controller of a member's limiter (with `options`): it follows the fleet through
    /// `link` while the fleet is in force, and runs the Pacer controller of its own (the only
    /// one a fleet runs) when it is not.
    #[must_use]
    pub fn controller(options: &LimiterOptions, link: Arc<FleetLink>) -> Box<dyn Controller> {
        let mut own = options.clone();
        own.controller = ControllerKind::Pacer;
        Box::new(FleetFollower::new(&own, link))
    }

    /// Makes `endpoint` (whose limiter's controller is [`controller`](Self::controller) of
    /// `link`) a member of the fleet `limiter : endpoint key`, and spawns the task that syncs
    /// it with the store beside the requests on the tokio runtime of the caller (it ends when
    /// the endpoint is dropped). `options` are the limiter's: the fleet's controller runs them
    /// on the whole budget, as one process would. False when the endpoint is a member already,
    /// or with no runtime to run the task on (it then keeps its own control, and says so in a
    /// warning).
    pub fn join(
        &self,
        limiter: &str,
        endpoint: &Endpoint,
        link: Arc<FleetLink>,
        options: &LimiterOptions,
        clock: Arc<dyn Clock>,
        now: Timestamp,
    ) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                limiter,
                "no tokio runtime: the endpoint keeps its own control"
            );
            return false;
        };
        let mut whole = options.clone();
        whole.instance_count = 1;
        whole.controller = ControllerKind::Pacer;
        let member = FleetMember::new(
            format!("{limiter}:{}", endpoint.key()),
            member_id(),
            self.options,
            whole,
            now,
        );
        let handle = FleetHandle::new(member, link);
        if !endpoint.join_fleet(Arc::clone(&handle)) {
            return false;
        }
        let store = Arc::clone(&self.store);
        runtime.spawn(FleetHandle::run(
            &handle,
            store,
            endpoint.limiter().clone(),
            clock,
        ));
        true
    }
}

/// A member id no other process draws: 64 bits from the OS's randomness (the seed of std's
/// hash maps), with this process's id.
fn member_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{:016x}-{}", h.finish(), std::process::id())
}
