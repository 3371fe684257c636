//! Pacer's Redis backend: strict discrete sliding windows shared by many processes.
//!
//! [`RedisWindowStore`] implements [`pacer_core::WindowStore`] with Pacer's own Lua function
//! library ([`LIBRARY_SOURCE`], Redis 7 or later): each operation is one atomic call on the Redis
//! server's clock, so every process that shares a Redis shares each window exactly, whatever
//! their own clocks say. The library is loaded by itself on first use and again after a restart
//! or a flush. `docs/windows.md` describes the guarantee, the library and the key layout.
//!
//! Why a function library and not `EVALSHA`: functions survive in Redis's own persistence and
//! replication, are called by name, and can be marked read-only (`FCALL_RO` for `eta` and `now`,
//! so those may go to replicas).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
mod builder;
mod circuit;
mod conn;
mod error;
mod fleet;
mod key;
mod library;
mod store;
#[cfg(feature = "test-util")]
pub mod testing;

pub use builder::RedisWindowStoreBuilder;
pub use circuit::{DEFAULT_DOWN_BACKOFF, DEFAULT_MAX_DOWN_BACKOFF};
pub use conn::RedisConnection;
pub use error::RedisWindowError;
pub use fleet::{DEFAULT_FLEET_PREFIX, RedisFleetStore};
pub use key::{DEFAULT_KEY_PREFIX, KeyFormat, MAX_LITERAL_KEY_BYTES, MAX_PREFIX_BYTES};
pub use library::{FLEET_LIBRARY_NAME, FLEET_LIBRARY_SOURCE, LIBRARY_NAME, LIBRARY_SOURCE};
pub use store::RedisWindowStore;
