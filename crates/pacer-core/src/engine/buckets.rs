//! Discord's buckets: routes that share one rate limit, learnt from the responses'
//! `X-RateLimit-Bucket` (Discord's docs, "Rate Limits": "the bucket … shared across routes").
//!
//! With [`KeyMode::DiscordRoute`](crate::KeyMode::DiscordRoute) each route has its key; once a
//! response names the route's bucket, the route's later requests use the endpoint of that bucket
//! with the route's major parameter, which every route of the bucket shares.

use super::key::discord_major;
use crate::{Dialect, RateLimitInfo};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Route keys and the key of the bucket each belongs to, at most `capacity` of them (past it the
/// map starts again: a route is grouped again by its next response).
#[derive(Debug)]
pub(crate) struct Buckets {
    routes: Mutex<HashMap<Box<str>, Arc<str>>>,
    capacity: usize,
}

impl Buckets {
    pub(crate) fn new(capacity: usize) -> Self {
        Buckets {
            routes: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The key a request to `route` uses: its bucket's, once a response named it.
    pub(crate) fn resolve(&self, route: &str) -> Option<Arc<str>> {
        self.routes.lock().get(route).cloned()
    }

    /// A response to a request of `route` named its bucket in `info` (Discord's): later
    /// requests of the route use the bucket's key. A route without a major parameter, or a key
    /// that is already a bucket's, is left as it is.
    pub(crate) fn learn(&self, route: &str, info: &RateLimitInfo) {
        if route.contains('#') {
            return;
        }
        let Some(bucket) = info
            .policies()
            .iter()
            .find(|p| p.dialect() == Dialect::Discord)
            .and_then(|p| p.partition_key())
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|b| !b.is_empty() && !b.contains(['#', '/']))
        else {
            return;
        };
        let major = discord_major(route).unwrap_or("");
        let origin_end = route
            .find("://")
            .and_then(|i| route[i + 3..].find('/').map(|j| i + 3 + j))
            .unwrap_or(route.len());
        let key: Arc<str> = format!("{}#{bucket}/{major}", &route[..origin_end]).into();
        let mut routes = self.routes.lock();
        if routes.get(route).is_some_and(|k| *k == key) {
            return;
        }
        if routes.len() >= self.capacity {
            routes.clear();
        }
        routes.insert(route.into(), key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;
    use std::time::SystemTime;

    fn discord(bucket: &str) -> RateLimitInfo {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("x-ratelimit-limit", "5"),
            ("x-ratelimit-remaining", "4"),
            ("x-ratelimit-reset-after", "1.0"),
            ("x-ratelimit-bucket", bucket),
        ] {
            h.insert(k, v.parse().unwrap());
        }
        RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn routes_of_one_bucket_and_one_major_parameter_share_a_key() {
        let b = Buckets::new(100);
        let edit = "https://discord.com:443/api/v10/channels/223/messages/:id";
        let post = "https://discord.com:443/api/v10/channels/223/messages";
        let other = "https://discord.com:443/api/v10/channels/999/messages";
        for route in [edit, post, other] {
            assert_eq!(b.resolve(route), None);
            b.learn(route, &discord("abcd1234"));
        }
        let shared = b.resolve(edit).unwrap();
        assert_eq!(&*shared, "https://discord.com:443#abcd1234/channels/223");
        assert_eq!(b.resolve(post), Some(Arc::clone(&shared)));
        assert_eq!(
            b.resolve(other).as_deref(),
            Some("https://discord.com:443#abcd1234/channels/999"),
            "another channel is another limit"
        );
        // Not Discord's, or a key that is a bucket's already: nothing learnt.
        b.learn("https://x.test:443/a", &RateLimitInfo::new());
        assert_eq!(b.resolve("https://x.test:443/a"), None);
        b.learn(&shared, &discord("other"));
        assert_eq!(b.resolve(&shared), None);
    }
}
