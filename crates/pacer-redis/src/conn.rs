//! One connection type for a single Redis and for a Redis Cluster.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to a single Redis (a `redis` [`ConnectionManager`], which reconnects by itself)
/// or to a Redis Cluster (the `redis` crate's [`ClusterConnection`], which routes each call by
/// its key's slot and `FUNCTION LOAD` to every primary). Cheap to clone: both share one
/// multiplexed connection.
///
/// Both stores of this crate call through it; [`RedisWindowStore::connection`](crate::RedisWindowStore::connection)
/// hands it out for commands of one's own (`redis::cmd(..).query_async(&mut conn)`).
#[derive(Clone)]
#[non_exhaustive]
pub enum RedisConnection {
    /// One Redis (or Valkey) server.
    Single(ConnectionManager),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RedisConnection::Single(_) => "RedisConnection::Single",
            RedisConnection::Cluster(_) => "RedisConnection::Cluster",
        })
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConnection::Single(c) => c.req_packed_command(cmd),
            RedisConnection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConnection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            RedisConnection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConnection::Single(c) => c.get_db(),
            RedisConnection::Cluster(c) => c.get_db(),
        }
    }
}
