//! The model API: a hidden quota that accepts or refuses each request the moment it is sent.
//!
//! The quota is a sliding 60 s window of accepted units ([`SlidingWindow`]; another length with
//! [`ModelApi::with_window`], at the same pace a minute; another shape, a fixed window, a bucket,
//! GCRA, HAProxy's counter or nginx's `limit_req`, with [`ModelApi::with_shape`]), whose limit the story changes over
//! time. A request fits if the units in the window plus its own are at most the limit; then it is
//! accepted and its units enter the window. Otherwise it gets a 429 with a `Retry-After` (see
//! [`retry_after_secs`]) unless the shape ([`ServerShape::sends_retry_after`]) or the story
//! ([`Story::retry_after`]) sends none; refused requests use no quota, but in the `haproxy` shape
//! ([`ServerShape::counts_refusals`]). A noisy neighbour takes its share off the top: while it is
//! there, our clients' limit is the quota less its share (the .NET adaptive limiter's "quota drops
//! 50% for 60 s"; `docs/simulation.md` says why its units are not put in the window one by one). A
//! server stop refuses everything until it ends.
//!
//! The API knows nothing of modes or virtual time beyond the `now` it is given, so the future
//! `serve` command can put it behind a real HTTP server on the real clock unchanged.

use super::{FixedWindow, Meter, ModelHeaders, ServerShape, Story};
use pacer_core::Timestamp;
use std::time::Duration;

/// The window of the hidden quota.
pub const QUOTA_WINDOW: Duration = Duration::from_secs(60);

/// The units a sliding `window` holds of a quota of `per_minute` units a minute: the same pace.
#[must_use]
pub fn window_units(per_minute: f64, window: Duration) -> f64 {
    per_minute * (window.as_secs_f64() / QUOTA_WINDOW.as_secs_f64())
}

/// What the API answers to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: the units were counted.
    Accepted,
    /// 429 Too Many Requests, with a `Retry-After` unless the shape sends none.
    Throttled {
        /// The `Retry-After` it sent, whole seconds; `None` when it sent none.
        retry_after: Option<Duration>,
    },
}

/// The server side of a run.
#[derive(Debug, Clone)]
pub struct ModelApi {
    story: Story,
    base_quota: u64,
    shape: ServerShape,
    window: Meter,
}

/// The `Retry-After` for a request that would fit `wait` from now: the whole seconds of the wait,
/// rounded up so that a client that honours it finds room (unless someone else took it first),
/// and at least 1, since `Retry-After: 0` would invite an immediate retry.
#[must_use]
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

impl ModelApi {
    /// An API with a hidden quota of `base_quota` units per minute in a sliding
    /// [`QUOTA_WINDOW`], changed by `story`.
    #[must_use]
    pub fn new(base_quota: u64, story: Story) -> Self {
        ModelApi::with_window(base_quota, story, QUOTA_WINDOW)
    }

    /// An API whose sliding window is `window` long: it accepts `base_quota × window ÷ 60 s`
    /// units in it (rounded), the same pace per minute.
    #[must_use]
    pub fn with_window(base_quota: u64, story: Story, window: Duration) -> Self {
        ModelApi::with_shape(base_quota, story, window, ServerShape::Sliding)
    }

    /// An API of `shape` over `window`: the same pace, `base_quota × window ÷ 60 s` units per
    /// window (rounded), as the window's count, the bucket's size or GCRA's tolerance.
    #[must_use]
    pub fn with_shape(base_quota: u64, story: Story, window: Duration, shape: ServerShape) -> Self {
        ModelApi {
            story,
            base_quota,
            shape,
            window: Meter::new(shape, window),
        }
    }

    /// The same API whose fixed window was `phase` into its current window when the run began
    /// (its first boundary comes `window − phase` in; see [`FixedWindow::with_phase`]). Other
    /// shapes have no boundary, and are left as they are. Call it on a fresh API: a fixed
    /// window's count starts again from zero.
    #[must_use]
    pub fn with_phase(mut self, phase: Duration) -> Self {
        if let Meter::Fixed(w) = &self.window {
            self.window = Meter::Fixed(FixedWindow::with_phase(w.span(), phase));
        }
        self
    }

    /// The shape of the quota.
    #[must_use]
    pub fn shape(&self) -> ServerShape {
        self.shape
    }

    /// The story the API follows.
    #[must_use]
    pub fn story(&self) -> &Story {
        &self.story
    }

    /// The window's limit for our clients at `now`, in units: the hidden quota less the
    /// neighbour's share ([`Story::available_quota`]), for the window's length, rounded.
    #[must_use]
    pub fn limit_at(&self, now: Timestamp) -> u64 {
        let available = self
            .story
            .available_quota(self.base_quota as f64, now.as_duration());
        window_units(available, self.window.span()).round() as u64
    }

    /// The units of our clients in the window (or the bucket) at `now`.
    pub fn used(&mut self, now: Timestamp) -> u64 {
        let limit = self.limit_at(now);
        self.window.used(limit, now)
    }

    /// Decides a request of `units` sent at `now`.
    pub fn offer(&mut self, units: u64, now: Timestamp) -> Verdict {
        if let Some(stop) = self.story.stop_at(now.as_duration()) {
            let ends = Timestamp::from_duration(stop.at + stop.length);
            return self.throttled(ends - now);
        }
        let limit = self.limit_at(now);
        let fits = self.window.fits_at(units, limit, now);
        let accepted = fits.is_some_and(|at| at <= now);
        if accepted || self.shape.counts_refusals() {
            self.window.push(units, limit, now);
        }
        match fits {
            _ if accepted => Verdict::Accepted,
            Some(at) => self.throttled(at - now),
            // Larger than the whole quota: it never fits. Say "a window from now".
            None => self.throttled(self.window.span()),
        }
    }

    /// How long the request [`offer`](Self::offer) just accepted at `now` waits in the server
    /// before its response leaves: nginx's queue in the `nginx` shape, no time in the others.
    #[must_use]
    pub fn served_after(&self, now: Timestamp) -> Duration {
        self.window.delay(self.limit_at(now))
    }

    /// The IETF draft-11 rate-limit values the API would send with a response at `now` (after
    /// the request was decided): the policy (quota and window) and what is left of it, with the
    /// shape's reset ([`Meter::reset_at`]).
    pub fn headers(&mut self, now: Timestamp) -> ModelHeaders {
        let quota = self.limit_at(now);
        if let Some(stop) = self.story.stop_at(now.as_duration()) {
            let ends = Timestamp::from_duration(stop.at + stop.length);
            return ModelHeaders {
                quota,
                window_secs: self.window.span().as_secs(),
                remaining: 0,
                reset_secs: retry_after_secs(ends - now),
                call_limit: self.shape.sends_call_limit(),
            };
        }
        let remaining = self.window.remaining(quota, now);
        let reset_secs = self
            .window
            .reset_at(quota, now)
            .map_or(0, |at| retry_after_secs(at - now));
        ModelHeaders {
            quota,
            window_secs: self.window.span().as_secs(),
            remaining,
            reset_secs,
            call_limit: self.shape.sends_call_limit(),
        }
    }

    fn throttled(&self, wait: Duration) -> Verdict {
        Verdict::Throttled {
            retry_after: (self.shape.sends_retry_after() && self.story.retry_after)
                .then(|| Duration::from_secs(self.shape.retry_after_secs(wait))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SHAPE_NAMES;
    use crate::model::at_ms;

    fn story(name: &str) -> Story {
        Story::by_name(name).unwrap()
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up_and_at_least_one() {
        for (wait_ms, secs) in [(0, 1), (1, 1), (999, 1), (1000, 1), (1001, 2), (59_500, 60)] {
            assert_eq!(
                retry_after_secs(Duration::from_millis(wait_ms)),
                secs,
                "{wait_ms} ms"
            );
        }
    }

    #[test]
    fn accepts_up_to_the_quota_then_refuses_until_units_leave() {
        let mut api = ModelApi::new(10, story("free-run"));
        for i in 0..10 {
            assert_eq!(api.offer(1, at_ms(i * 100)), Verdict::Accepted);
        }
        // Full. The first unit (t = 0) leaves at 60 s: from 30 s that is 30 s.
        assert_eq!(
            api.offer(1, at_ms(30_000)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(30))
            }
        );
        // 2 units need the first two out: the second left at 60.1 s → 31 s (rounded up).
        assert_eq!(
            api.offer(2, at_ms(29_500)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(31))
            }
        );
        assert_eq!(api.offer(1, at_ms(60_000)), Verdict::Accepted);
        assert_eq!(api.used(at_ms(60_000)), 10);
    }

    #[test]
    fn a_shorter_window_holds_the_same_pace_and_says_its_length() {
        // 3,000 a minute in a sliding second: 50 units.
        let mut api = ModelApi::with_window(3000, story("free-run"), Duration::from_secs(1));
        assert_eq!(api.limit_at(at_ms(0)), 50);
        for i in 0..50 {
            assert_eq!(api.offer(1, at_ms(i * 10)), Verdict::Accepted);
        }
        // Full at 0.5 s; the first unit leaves at 1 s.
        assert_eq!(
            api.offer(1, at_ms(500)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(1))
            }
        );
        assert_eq!(api.offer(1, at_ms(1_000)), Verdict::Accepted);
        let h = api.headers(at_ms(1_005));
        assert_eq!((h.quota, h.window_secs, h.remaining), (50, 1, 0));
        // The noisy neighbour's half, in a 10 s window: 250 of 500.
        let api = ModelApi::with_window(3000, story("noisy-neighbour"), Duration::from_secs(10));
        assert_eq!(api.limit_at(at_ms(0)), 500);
        assert_eq!(api.limit_at(at_ms(330_000)), 250);
    }

    #[test]
    fn a_request_larger_than_the_quota_is_told_a_whole_window() {
        let mut api = ModelApi::new(3, story("free-run"));
        assert_eq!(
            api.offer(5, at_ms(0)),
            Verdict::Throttled {
                retry_after: Some(QUOTA_WINDOW)
            }
        );
    }

    #[test]
    fn the_neighbour_halves_our_limit_for_its_minute() {
        let mut api = ModelApi::new(3000, story("noisy-neighbour"));
        assert_eq!(api.limit_at(at_ms(299_999)), 3000);
        assert_eq!(api.limit_at(at_ms(300_000)), 1500);
        assert_eq!(api.limit_at(at_ms(360_000)), 3000);
        // 2,000 units at 4:50, evenly over a second: at 5:00 the limit is 1,500, so 501 must go
        // first: the 501st unit, accepted at 290.25 s, leaves at 350.25 s.
        for i in 0..2000 {
            assert_eq!(api.offer(1, at_ms(290_000 + i / 2)), Verdict::Accepted);
        }
        assert_eq!(
            api.offer(1, at_ms(300_000)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(51))
            }
        );
        assert_eq!(
            api.offer(1, at_ms(360_000)),
            Verdict::Accepted,
            "back at 6:00"
        );
    }

    #[test]
    fn a_quota_cut_refuses_until_the_window_drains_to_the_new_limit() {
        let mut api = ModelApi::new(100, story("quota-cut"));
        for i in 0..100 {
            assert_eq!(api.offer(1, at_ms(250_000 + i * 100)), Verdict::Accepted);
        }
        // At 5:00 the limit is 50; 100 inside, 51 must leave: the 51st (255.0 s) leaves at 315 s.
        assert_eq!(
            api.offer(1, at_ms(300_000)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(15))
            }
        );
    }

    #[test]
    fn a_stop_refuses_everything_with_the_time_left() {
        let mut api = ModelApi::new(3000, story("long-retry-after"));
        assert_eq!(api.offer(1, at_ms(299_000)), Verdict::Accepted);
        assert_eq!(
            api.offer(1, at_ms(300_000)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(120))
            }
        );
        assert_eq!(
            api.offer(1, at_ms(400_500)),
            Verdict::Throttled {
                retry_after: Some(Duration::from_secs(20))
            }
        );
        assert_eq!(api.offer(1, at_ms(420_000)), Verdict::Accepted);
    }

    #[test]
    fn headers_say_the_policy_and_what_is_left() {
        let mut api = ModelApi::new(10, story("free-run"));
        assert_eq!(api.offer(4, at_ms(1_000)), Verdict::Accepted);
        let h = api.headers(at_ms(2_500));
        assert_eq!(
            (h.quota, h.window_secs, h.remaining, h.reset_secs),
            (10, 60, 6, 59)
        );
        let h = ModelApi::new(10, story("free-run")).headers(at_ms(0));
        assert_eq!((h.remaining, h.reset_secs), (10, 0));
    }

    fn shaped(per_minute: u64, story_name: &str, window_s: u64, shape: &str) -> ModelApi {
        let window = Duration::from_secs(window_s);
        ModelApi::with_shape(
            per_minute,
            story(story_name),
            window,
            shape.parse().unwrap(),
        )
    }

    fn wait(secs: u64) -> Verdict {
        Verdict::Throttled {
            retry_after: Some(Duration::from_secs(secs)),
        }
    }

    fn state(api: &mut ModelApi, ms: u64) -> (u64, u64, u64) {
        let h = api.headers(at_ms(ms));
        (h.window_secs, h.remaining, h.reset_secs)
    }

    #[test]
    fn fixed_counts_from_zero_on_the_boundary_and_says_the_time_to_it() {
        // 600 a minute in 10 s windows: 100 a window.
        let mut api = shaped(600, "free-run", 10, "fixed");
        for i in 0..100 {
            assert_eq!(api.offer(1, at_ms(5_000 + i)), Verdict::Accepted);
        }
        assert_eq!(api.offer(1, at_ms(8_500)), wait(2), "1.5 s to the boundary");
        assert_eq!(state(&mut api, 8_500), (10, 0, 2));
        assert_eq!(state(&mut api, 9_999), (10, 0, 1));
        for i in 0..100 {
            assert_eq!(api.offer(1, at_ms(10_000 + i)), Verdict::Accepted);
        }
        assert_eq!(api.offer(1, at_ms(10_100)), wait(10));
        assert_eq!(state(&mut api, 12_000), (10, 0, 8));
    }

    #[test]
    fn buckets_and_gcra_refill_at_the_quota_s_pace_and_say_when_they_are_full() {
        // 3,000 a minute in 10 s: a burst of 500, 50 a second back.
        for shape in ["token-bucket", "leaky-bucket", "gcra"] {
            let mut api = shaped(3000, "free-run", 10, shape);
            assert_eq!(
                state(&mut api, 0),
                (10, 500, 0),
                "{shape}: full, nothing to wait"
            );
            assert_eq!(api.offer(500, at_ms(0)), Verdict::Accepted, "{shape}");
            let refused = api.offer(1, at_ms(0));
            assert!(matches!(refused, Verdict::Throttled { .. }), "{shape}");
            assert_eq!(api.offer(1, at_ms(19)), refused, "{shape}");
            assert_eq!(
                api.offer(1, at_ms(20)),
                Verdict::Accepted,
                "{shape}: 20 ms a unit"
            );
            // At 2 s: 100 back, less the one taken at 20 ms; full again at 10.02 s.
            assert_eq!(state(&mut api, 2_000), (10, 99, 9), "{shape}");
            assert_eq!(api.offer(99, at_ms(2_000)), Verdict::Accepted, "{shape}");
            assert_eq!(api.offer(1, at_ms(2_000)), refused, "{shape}");
            assert_eq!(api.used(at_ms(2_000)), 500, "{shape}");
        }
    }

    #[test]
    fn only_the_leaky_bucket_s_and_haproxy_s_429_have_no_retry_after() {
        for (shape, retry_after) in [
            ("sliding", Some(Duration::from_secs(10))),
            ("fixed", Some(Duration::from_secs(10))),
            ("token-bucket", Some(Duration::from_secs(1))),
            ("gcra", Some(Duration::from_secs(1))),
            // tower_governor's: the wait (20 ms, a unit's interval) rounded down.
            ("governor", Some(Duration::ZERO)),
            ("leaky-bucket", None),
            ("haproxy", None),
        ] {
            let mut api = shaped(3000, "free-run", 10, shape);
            assert_eq!(api.offer(500, at_ms(0)), Verdict::Accepted);
            assert_eq!(
                api.offer(1, at_ms(0)),
                Verdict::Throttled { retry_after },
                "{shape}"
            );
        }
        // Nor during a stop.
        let mut api = shaped(3000, "long-retry-after", 60, "leaky-bucket");
        assert_eq!(
            api.offer(1, at_ms(300_000)),
            Verdict::Throttled { retry_after: None }
        );
    }

    #[test]
    fn haproxy_counts_the_requests_it_refuses() {
        // 600 a minute counted over 10 s: 100 a period.
        let mut api = shaped(600, "free-run", 10, "haproxy");
        for i in 0..100 {
            assert_eq!(api.offer(1, at_ms(i * 10)), Verdict::Accepted);
        }
        // Refused, and counted: 50 more refusals in the first period...
        for i in 0..50 {
            let refused = api.offer(1, at_ms(2_000 + i * 100));
            assert_eq!(refused, Verdict::Throttled { retry_after: None });
        }
        assert_eq!(api.used(at_ms(9_000)), 150);
        // ...weigh on the next: at 12 s the previous period counts for 80 % of its 150.
        assert_eq!(api.used(at_ms(12_000)), 120);
        assert!(matches!(
            api.offer(1, at_ms(12_000)),
            Verdict::Throttled { .. }
        ));
        // Where refusals do not count, the same requests leave the window empty by 11 s.
        let mut sliding = shaped(600, "free-run", 10, "sliding");
        for i in 0..100 {
            assert_eq!(sliding.offer(1, at_ms(i * 10)), Verdict::Accepted);
        }
        for i in 0..50 {
            let _ = sliding.offer(1, at_ms(2_000 + i * 100));
        }
        assert_eq!(sliding.used(at_ms(9_000)), 100);
        assert_eq!(sliding.offer(1, at_ms(12_000)), Verdict::Accepted);
    }

    #[test]
    fn the_leaky_bucket_also_sends_shopify_s_call_limit() {
        let mut api = shaped(3000, "free-run", 10, "leaky-bucket");
        assert_eq!(api.offer(500, at_ms(0)), Verdict::Accepted);
        let h = api.headers(at_ms(2_000));
        assert!(h.call_limit);
        assert_eq!(h.call_limit_field(), "400/500");
        assert_eq!(h.fields().len(), 3);
        assert!(
            !shaped(3000, "free-run", 10, "token-bucket")
                .headers(at_ms(0))
                .call_limit
        );
    }

    #[test]
    fn the_neighbour_halves_every_shape_s_burst() {
        // 3,000 a minute in 10 s is 500; the neighbour leaves 250 from 5:00 to 6:00.
        for shape in SHAPE_NAMES {
            let mut api = shaped(3000, "noisy-neighbour", 10, shape);
            assert_eq!(api.offer(250, at_ms(330_000)), Verdict::Accepted, "{shape}");
            if shape == "nginx" {
                // nginx answers one request of a drained key at once, beside its burst.
                assert_eq!(api.offer(1, at_ms(330_000)), Verdict::Accepted, "{shape}");
            }
            let refused = api.offer(1, at_ms(330_000));
            assert!(matches!(refused, Verdict::Throttled { .. }), "{shape}");
            assert_eq!(state(&mut api, 330_000).1, 0, "{shape}");
        }
    }
}
