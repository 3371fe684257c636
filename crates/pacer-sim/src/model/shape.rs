//! `--server`: the shape of the model API's quota, and the memory each shape keeps.
//!
//! Every shape admits the same pace, the quota's units a minute, with the window's quota as its
//! burst; they differ in how a burst comes back, in what they tell a client and (`haproxy`) in
//! whether a refused request counts. `haproxy` and `governor` are the real servers of those names
//! as they answer by default. `sliding` is the simulator's original model and the default.

use super::{Bucket, FixedWindow, Gcra, LimitReq, SlidingCounter, SlidingWindow};
use pacer_core::Timestamp;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The names `--server` takes, in the order the docs list them.
pub const SHAPE_NAMES: [&str; 8] = [
    "sliding",
    "fixed",
    "token-bucket",
    "leaky-bucket",
    "gcra",
    "haproxy",
    "governor",
    "nginx",
];

/// How the model API counts its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerShape {
    /// An exact sliding window: each accepted unit counts for one window after it.
    #[default]
    Sliding,
    /// A fixed window that counts from zero on each boundary (`k × window`, less the run's
    /// phase).
    Fixed,
    /// A token bucket of the window's quota, refilled continuously at the quota's pace.
    TokenBucket,
    /// Shopify's leaky bucket: the window's quota as its size, leaking at the quota's pace;
    /// refuses without `Retry-After` and says `X-Shopify-Shop-Api-Call-Limit: used/size`.
    LeakyBucket,
    /// The generic cell rate algorithm: interval `window ÷ quota`, a tolerance of a window.
    Gcra,
    /// HAProxy's stick-table rate (`http_req_rate(<window>)` with `deny if … gt N`): a
    /// sliding-window counter ([`SlidingCounter`]) of every request, the refused ones too, that
    /// refuses with a bare 429 and sends no rate-limit fields.
    Haproxy,
    /// tower_governor (the governor crate's GCRA as a tower layer) as it answers by default:
    /// `gcra`'s meter, a 429 whose `Retry-After` is the wait's whole seconds rounded down (0
    /// while it is under a second), and no rate-limit fields.
    Governor,
    /// nginx's `limit_req` as a site leaves it ([`LimitReq`]): a burst of the window's quota,
    /// **queued** (a request over the pace waits in the server, no `nodelay`), and a refusal
    /// over it a bare 503 (its default `limit_req_status`) with no rate-limit fields.
    Nginx,
}

impl ServerShape {
    /// The kind of limiter Pacer's model of the server names this shape:
    /// HAProxy's counter is a sliding window, every meter that drains is a bucket.
    #[must_use]
    pub fn kind(self) -> pacer_core::LimiterKind {
        use pacer_core::LimiterKind;
        match self {
            ServerShape::Sliding | ServerShape::Haproxy => LimiterKind::SlidingWindow,
            ServerShape::Fixed => LimiterKind::FixedWindow,
            ServerShape::TokenBucket
            | ServerShape::LeakyBucket
            | ServerShape::Gcra
            | ServerShape::Governor
            | ServerShape::Nginx => LimiterKind::Bucket,
        }
    }

    /// Whether the shape's 429 carries a `Retry-After`. A leaky bucket's does not, as nginx's
    /// `limit_req` and many gateway buckets send none, nor HAProxy's `deny`.
    #[must_use]
    pub fn sends_retry_after(self) -> bool {
        !matches!(
            self,
            ServerShape::LeakyBucket | ServerShape::Haproxy | ServerShape::Nginx
        )
    }

    /// Whether the shape sends rate-limit fields (IETF draft-11, and Shopify's call limit where
    /// [`sends_call_limit`](Self::sends_call_limit)) to a client that follows them. HAProxy's
    /// `deny` sends none, nor tower_governor by default.
    #[must_use]
    pub fn sends_fields(self) -> bool {
        !matches!(
            self,
            ServerShape::Haproxy | ServerShape::Governor | ServerShape::Nginx
        )
    }

    /// The status of a refusal: 503 for nginx's `limit_req` (its default `limit_req_status`),
    /// 429 for the others.
    #[must_use]
    pub fn refusal_status(self) -> http::StatusCode {
        match self {
            ServerShape::Nginx => http::StatusCode::SERVICE_UNAVAILABLE,
            _ => http::StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// The `Retry-After` of a 429 for a request that would fit `wait` from now, in whole
    /// seconds: [`retry_after_secs`](super::retry_after_secs) (rounded up, at least 1), or for
    /// tower_governor the wait's whole seconds rounded down, as it sends them.
    #[must_use]
    pub fn retry_after_secs(self, wait: Duration) -> u64 {
        match self {
            ServerShape::Governor => wait.as_secs(),
            _ => super::retry_after_secs(wait),
        }
    }

    /// Whether a refused request counts against the quota as an accepted one does.
    #[must_use]
    pub fn counts_refusals(self) -> bool {
        self == ServerShape::Haproxy
    }

    /// Whether the shape also sends Shopify's `X-Shopify-Shop-Api-Call-Limit`.
    #[must_use]
    pub fn sends_call_limit(self) -> bool {
        self == ServerShape::LeakyBucket
    }
}

impl FromStr for ServerShape {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sliding" => Ok(ServerShape::Sliding),
            "fixed" => Ok(ServerShape::Fixed),
            "token-bucket" => Ok(ServerShape::TokenBucket),
            "leaky-bucket" => Ok(ServerShape::LeakyBucket),
            "gcra" => Ok(ServerShape::Gcra),
            "haproxy" => Ok(ServerShape::Haproxy),
            "governor" => Ok(ServerShape::Governor),
            "nginx" => Ok(ServerShape::Nginx),
            _ => Err(format!(
                "unknown server shape {s:?}: expected one of {}",
                SHAPE_NAMES.join(", ")
            )),
        }
    }
}

impl fmt::Display for ServerShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerShape::Sliding => SHAPE_NAMES[0],
            ServerShape::Fixed => SHAPE_NAMES[1],
            ServerShape::TokenBucket => SHAPE_NAMES[2],
            ServerShape::LeakyBucket => SHAPE_NAMES[3],
            ServerShape::Gcra => SHAPE_NAMES[4],
            ServerShape::Haproxy => SHAPE_NAMES[5],
            ServerShape::Governor => SHAPE_NAMES[6],
            ServerShape::Nginx => SHAPE_NAMES[7],
        })
    }
}

/// The memory of one shape, asked the same questions whatever the shape.
#[derive(Debug, Clone)]
pub enum Meter {
    /// `sliding`.
    Sliding(SlidingWindow),
    /// `fixed`.
    Fixed(FixedWindow),
    /// `token-bucket` and `leaky-bucket`.
    Bucket(Bucket),
    /// `gcra` and `governor`.
    Gcra(Gcra),
    /// `haproxy`.
    Counter(SlidingCounter),
    /// `nginx`.
    LimitReq(LimitReq),
}

impl Meter {
    /// An empty meter of `shape` over `window`.
    #[must_use]
    pub fn new(shape: ServerShape, window: Duration) -> Self {
        match shape {
            ServerShape::Sliding => Meter::Sliding(SlidingWindow::new(window)),
            ServerShape::Fixed => Meter::Fixed(FixedWindow::new(window)),
            ServerShape::TokenBucket | ServerShape::LeakyBucket => {
                Meter::Bucket(Bucket::new(window))
            }
            ServerShape::Gcra | ServerShape::Governor => Meter::Gcra(Gcra::new(window)),
            ServerShape::Haproxy => Meter::Counter(SlidingCounter::new(window)),
            ServerShape::Nginx => Meter::LimitReq(LimitReq::new(window)),
        }
    }

    /// The window.
    #[must_use]
    pub fn span(&self) -> Duration {
        match self {
            Meter::Sliding(w) => w.span(),
            Meter::Fixed(w) => w.span(),
            Meter::Bucket(b) => b.span(),
            Meter::Gcra(g) => g.span(),
            Meter::Counter(c) => c.span(),
            Meter::LimitReq(l) => l.span(),
        }
    }

    /// When `units` would first fit under `limit` (`None`: never).
    pub fn fits_at(&mut self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        match self {
            Meter::Sliding(w) => w.fits_at(units, limit, now),
            Meter::Fixed(w) => w.fits_at(units, limit, now),
            Meter::Bucket(b) => b.fits_at(units, limit, now),
            Meter::Gcra(g) => g.fits_at(units, limit, now),
            Meter::Counter(c) => c.fits_at(units, limit, now),
            Meter::LimitReq(l) => l.fits_at(units, limit, now),
        }
    }

    /// Counts `units` accepted at `now` under `limit` (or refused, where the shape
    /// [counts refusals](ServerShape::counts_refusals)).
    pub fn push(&mut self, units: u64, limit: u64, now: Timestamp) {
        match self {
            Meter::Sliding(w) => w.push(units, now),
            Meter::Fixed(w) => w.push(units, now),
            Meter::Bucket(b) => b.push(units, limit, now),
            Meter::Gcra(g) => g.push(units, limit, now),
            Meter::Counter(c) => c.push(units, now),
            Meter::LimitReq(l) => l.push(units, limit, now),
        }
    }

    /// How long the request just counted waits in the server before it is served: nginx's
    /// queue under `limit`; no time for the other shapes, which answer at once.
    #[must_use]
    pub fn delay(&self, limit: u64) -> Duration {
        match self {
            Meter::LimitReq(l) => l.delay(limit),
            _ => Duration::ZERO,
        }
    }

    /// The units counted against `limit` at `now`.
    pub fn used(&mut self, limit: u64, now: Timestamp) -> u64 {
        match self {
            Meter::Sliding(w) => w.used(now),
            Meter::Fixed(w) => w.used(now),
            Meter::Bucket(b) => b.used(limit, now),
            Meter::Gcra(g) => g.used(limit, now),
            Meter::Counter(c) => c.used(now),
            Meter::LimitReq(l) => l.used(limit, now),
        }
    }

    /// The whole units a request could take now.
    pub fn remaining(&mut self, limit: u64, now: Timestamp) -> u64 {
        match self {
            Meter::Bucket(b) => b.remaining(limit, now),
            Meter::Gcra(g) => g.remaining(limit, now),
            _ => limit.saturating_sub(self.used(limit, now)),
        }
    }

    /// The shape's reset: when the oldest unit leaves a sliding window, the next boundary of a
    /// fixed one, when a bucket is full again (of tokens; empty, for a leaky one), when HAProxy's
    /// counter reads zero. `None` when nothing is counted.
    pub fn reset_at(&mut self, limit: u64, now: Timestamp) -> Option<Timestamp> {
        match self {
            Meter::Sliding(w) => w.next_departure(now),
            Meter::Fixed(w) => Some(w.boundary(now)),
            Meter::Bucket(b) => b.empty_at(limit, now),
            Meter::Gcra(g) => g.full_at(now),
            Meter::Counter(c) => c.empty_at(now),
            Meter::LimitReq(l) => l.empty_at(limit, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_by_name_and_print_it() {
        for name in SHAPE_NAMES {
            assert_eq!(name.parse::<ServerShape>().unwrap().to_string(), name);
        }
        assert_eq!(ServerShape::default(), ServerShape::Sliding);
        let e = "window".parse::<ServerShape>().unwrap_err();
        assert!(
            e.contains(
                "expected one of sliding, fixed, token-bucket, leaky-bucket, gcra, haproxy, governor, nginx"
            ),
            "{e}"
        );
    }

    #[test]
    fn only_the_leaky_bucket_haproxy_and_nginx_refuse_without_retry_after() {
        for name in SHAPE_NAMES {
            let shape: ServerShape = name.parse().unwrap();
            let bare = ["leaky-bucket", "haproxy", "nginx"].contains(&name);
            assert_eq!(shape.sends_retry_after(), !bare);
            assert_eq!(shape.sends_call_limit(), name == "leaky-bucket");
            assert_eq!(
                shape.sends_fields(),
                !["haproxy", "governor", "nginx"].contains(&name)
            );
            assert_eq!(shape.counts_refusals(), name == "haproxy");
            assert_eq!(
                shape.refusal_status().as_u16(),
                if name == "nginx" { 503 } else { 429 }
            );
        }
    }

    #[test]
    fn governor_s_retry_after_is_rounded_down_the_others_up_and_at_least_one() {
        for (wait_ms, governor, others) in [(80, 0, 1), (999, 0, 1), (1000, 1, 1), (1500, 1, 2)] {
            let wait = Duration::from_millis(wait_ms);
            assert_eq!(
                ServerShape::Governor.retry_after_secs(wait),
                governor,
                "{wait_ms} ms"
            );
            assert_eq!(
                ServerShape::Gcra.retry_after_secs(wait),
                others,
                "{wait_ms} ms"
            );
        }
    }
}
