//! The model API on the real clock: the very [`ModelApi`] of `compare`, whose `now` is the real
//! time since the start (or the last reset) times the speed.

use super::{HeaderDialect, Quirks, SERVER_NAME, ServerStats};
use crate::Speed;
use crate::model::{ModelApi, QUOTA_WINDOW, ServerShape, Story, Verdict};
use http::{HeaderMap, HeaderValue, StatusCode};
use pacer_core::{Clock, Timestamp};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The served model: one [`ModelApi`] behind a lock, and the counters of `/stats`.
#[derive(Debug)]
pub struct ServedModel {
    clock: Arc<dyn Clock>,
    speed: Speed,
    dialect: HeaderDialect,
    quirks: Quirks,
    base_quota: u64,
    story: Story,
    shape: ServerShape,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    api: ModelApi,
    /// The real moment story time 0 stands for.
    origin: Timestamp,
    accepted_units: u64,
    accepted_requests: u64,
    throttled: u64,
    bad_requests: u64,
}

impl State {
    fn new(base_quota: u64, story: &Story, shape: ServerShape, origin: Timestamp) -> Self {
        State {
            api: ModelApi::with_shape(base_quota, story.clone(), QUOTA_WINDOW, shape),
            origin,
            accepted_units: 0,
            accepted_requests: 0,
            throttled: 0,
            bad_requests: 0,
        }
    }
}

/// One answer of the model API, ready to send.
#[derive(Debug)]
pub struct Answer {
    /// 200, 429 (503 in the `nginx` shape), or 400 for a bad cost; 202 for some accepted
    /// requests under
    /// `retry-after-on-success`.
    pub status: StatusCode,
    /// `Retry-After` on a 429, the dialect's fields, and what the quirks add.
    pub headers: HeaderMap,
    /// How long the server holds the answer before it sends it (real time): nginx's queue in
    /// the `nginx` shape, none in the others.
    pub delay: Duration,
}

impl ServedModel {
    /// A model of `base_quota` units per story minute playing `story` at `speed`, whose story
    /// time starts now on `clock`, sending the `dialect`'s fields and the `quirks`.
    pub fn new(
        clock: Arc<dyn Clock>,
        base_quota: u64,
        story: Story,
        speed: Speed,
        dialect: HeaderDialect,
        quirks: Quirks,
    ) -> Self {
        let origin = clock.now();
        ServedModel {
            state: Mutex::new(State::new(base_quota, &story, ServerShape::Sliding, origin)),
            clock,
            speed,
            dialect,
            quirks,
            base_quota,
            story,
            shape: ServerShape::Sliding,
        }
    }

    /// The model with its quota of `shape` (a sliding window unless set), story time starting
    /// over now.
    #[must_use]
    pub fn with_shape(mut self, shape: ServerShape) -> Self {
        self.shape = shape;
        self.state = Mutex::new(State::new(
            self.base_quota,
            &self.story,
            shape,
            self.clock.now(),
        ));
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only counters half-updated: keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Story time now. The clock is read under the lock, so the window sees times in order.
    fn story_now(&self, state: &State) -> Timestamp {
        let real = self.clock.now() - state.origin;
        Timestamp::from_duration(self.speed.to_story(real))
    }

    /// Decides a request that costs `cost` (the `x-cost` header: `None` when absent, which
    /// costs 1; `Some(Err)` when it is not a whole number).
    pub fn answer(&self, cost: Option<Result<u64, ()>>) -> Answer {
        let mut headers = HeaderMap::new();
        let units = match cost {
            None => 1,
            Some(Ok(units)) => units,
            Some(Err(())) => {
                self.lock().bad_requests += 1;
                return Answer {
                    status: StatusCode::BAD_REQUEST,
                    headers,
                    delay: Duration::ZERO,
                };
            }
        };
        let mut state = self.lock();
        let now = self.story_now(&state);
        let verdict = state.api.offer(units, now);
        let values = self.dialect.sends_headers().then(|| state.api.headers(now));
        let mut accepted = None;
        let mut status = match verdict {
            Verdict::Accepted => {
                state.accepted_units += units;
                state.accepted_requests += 1;
                accepted = Some(state.accepted_requests);
                StatusCode::OK
            }
            Verdict::Throttled { retry_after } => {
                state.throttled += 1;
                if let Some(retry_after) = retry_after {
                    let value = self.speed.retry_after_value(retry_after.as_secs());
                    headers.insert(
                        http::header::RETRY_AFTER,
                        HeaderValue::try_from(value).expect("digits and a dot"),
                    );
                }
                state.api.shape().refusal_status()
            }
        };
        let delay = match verdict {
            Verdict::Accepted => self.speed.to_real(state.api.served_after(now)),
            Verdict::Throttled { .. } => Duration::ZERO,
        };
        drop(state);
        if let Some(values) = values {
            self.dialect
                .write(&values, self.speed, self.clock.system_now(), &mut headers);
        }
        if let Some(nth) = accepted {
            self.quirks
                .dress(nth, self.speed, &mut status, &mut headers);
        }
        Answer {
            status,
            headers,
            delay,
        }
    }

    /// The counters and the quota now.
    pub fn stats(&self) -> ServerStats {
        let mut state = self.lock();
        let now = self.story_now(&state);
        let quota = if self.story.stop_at(now.as_duration()).is_some() {
            0
        } else {
            state.api.limit_at(now)
        };
        ServerStats {
            server: SERVER_NAME.to_owned(),
            story: self.story.name.to_owned(),
            speed: self.speed.get(),
            headers: self.dialect.to_string(),
            quirks: self.quirks.names(),
            base_quota: self.base_quota,
            quota,
            window_s: QUOTA_WINDOW.as_secs(),
            elapsed_s: now.as_secs_f64(),
            used_units: state.api.used(now),
            accepted_units: state.accepted_units,
            accepted_requests: state.accepted_requests,
            throttled: state.throttled,
            bad_requests: state.bad_requests,
        }
    }

    /// Starts over: story time 0 is now, the window is empty, the counters are zero.
    pub fn reset(&self) -> ServerStats {
        {
            let mut state = self.lock();
            *state = State::new(self.base_quota, &self.story, self.shape, self.clock.now());
        }
        self.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::Quirk;
    use pacer_core::ManualClock;
    use std::time::Duration;

    fn served(
        quota: u64,
        story: &str,
        speed: f64,
        dialect: HeaderDialect,
    ) -> (ManualClock, ServedModel) {
        served_with(quota, story, speed, dialect, Quirks::none())
    }

    fn served_with(
        quota: u64,
        story: &str,
        speed: f64,
        dialect: HeaderDialect,
        quirks: Quirks,
    ) -> (ManualClock, ServedModel) {
        let clock = ManualClock::new();
        let model = ServedModel::new(
            Arc::new(clock.clone()),
            quota,
            Story::by_name(story).unwrap(),
            Speed::new(speed).unwrap(),
            dialect,
            quirks,
        );
        (clock, model)
    }

    fn all_quirks() -> Quirks {
        [Quirk::RetryAfterOnSuccess, Quirk::Junk]
            .into_iter()
            .collect()
    }

    #[test]
    fn quirks_never_change_what_the_quota_accepts() {
        for dialect in [
            HeaderDialect::None,
            HeaderDialect::Draft11,
            HeaderDialect::Github,
        ] {
            let (plain_clock, plain) = served(150, "quota-cut", 10.0, dialect);
            let (quirky_clock, quirky) = served_with(150, "quota-cut", 10.0, dialect, all_quirks());
            for i in 0..1000 {
                let cost = [1, 2, 5][i % 3];
                let a = plain.answer(Some(Ok(cost)));
                let b = quirky.answer(Some(Ok(cost)));
                let throttled = a.status == StatusCode::TOO_MANY_REQUESTS;
                assert_eq!(
                    throttled,
                    b.status == StatusCode::TOO_MANY_REQUESTS,
                    "{dialect} request {i}"
                );
                if throttled {
                    assert_eq!(a.headers, b.headers, "{dialect}: a 429 is never dressed");
                } else {
                    assert!(b.status.is_success(), "{dialect} request {i}");
                }
                plain_clock.advance(Duration::from_millis(20));
                quirky_clock.advance(Duration::from_millis(20));
            }
            let mut b = quirky.stats();
            assert_eq!(b.quirks, ["retry-after-on-success", "junk"]);
            b.quirks.clear();
            let a = plain.stats();
            assert_eq!(a, b, "{dialect}");
            assert!(a.accepted_requests >= 100 && a.throttled >= 100, "{a:?}");
        }
    }

    #[test]
    fn quirks_count_accepted_requests_only_and_start_over_on_reset() {
        let q: Quirks = [Quirk::RetryAfterOnSuccess].into_iter().collect();
        let (_clock, m) = served_with(49, "free-run", 1.0, HeaderDialect::None, q);
        for _ in 0..49 {
            assert!(m.answer(None).headers.is_empty());
        }
        for _ in 0..5 {
            let a = m.answer(None);
            assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(
                a.headers[http::header::RETRY_AFTER],
                "60",
                "the model's own"
            );
        }
        assert_eq!(m.answer(Some(Err(()))).status, StatusCode::BAD_REQUEST);
        m.reset();
        for _ in 0..49 {
            assert!(m.answer(None).headers.is_empty());
        }
        let s = m.reset();
        assert_eq!(s.quirks, ["retry-after-on-success"]);
        let (_clock, m) = served_with(
            50,
            "free-run",
            1.0,
            HeaderDialect::None,
            [Quirk::RetryAfterOnSuccess].into_iter().collect(),
        );
        for _ in 0..49 {
            m.answer(None);
        }
        let a = m.answer(None);
        assert_eq!(
            (a.status, &a.headers[http::header::RETRY_AFTER]),
            (StatusCode::OK, &HeaderValue::from_static("120")),
            "the 50th accepted request"
        );
    }

    #[test]
    fn accepts_up_to_the_quota_then_says_when_in_real_seconds() {
        let (clock, m) = served(10, "free-run", 30.0, HeaderDialect::None);
        assert_eq!(m.answer(Some(Ok(8))).status, StatusCode::OK);
        assert_eq!(m.answer(None).status, StatusCode::OK, "no x-cost costs 1");
        // 9 of 10 used; 2 more must wait for the first 8 to leave: 60 story s = 2 real s.
        clock.advance(Duration::from_millis(500)); // 15 story s
        let a = m.answer(Some(Ok(2)));
        assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(a.headers[http::header::RETRY_AFTER], "1.500");
        let s = m.stats();
        assert_eq!(
            (
                s.accepted_units,
                s.accepted_requests,
                s.throttled,
                s.used_units
            ),
            (9, 2, 1, 9)
        );
        assert!((s.elapsed_s - 15.0).abs() < 1e-9);
        clock.advance(Duration::from_millis(1500)); // 60 story s: the 8 units leave
        assert_eq!(m.answer(Some(Ok(2))).status, StatusCode::OK);
    }

    #[test]
    fn a_bad_cost_is_a_400_and_uses_nothing() {
        let (_clock, m) = served(10, "free-run", 1.0, HeaderDialect::None);
        assert_eq!(m.answer(Some(Err(()))).status, StatusCode::BAD_REQUEST);
        let s = m.stats();
        assert_eq!((s.bad_requests, s.used_units), (1, 0));
    }

    #[test]
    fn the_story_plays_on_the_scaled_clock_and_reset_starts_it_over() {
        let (clock, m) = served(3000, "noisy-neighbour", 60.0, HeaderDialect::None);
        assert_eq!(m.stats().quota, 3000);
        clock.advance(Duration::from_secs(5)); // 5 story minutes: the neighbour is there
        assert_eq!(m.stats().quota, 1500);
        assert_eq!(m.answer(Some(Ok(1))).status, StatusCode::OK);
        let s = m.reset();
        assert_eq!((s.quota, s.accepted_units, s.used_units), (3000, 0, 0));
        assert!(s.elapsed_s.abs() < 1e-9);
    }

    #[test]
    fn a_stop_leaves_no_quota_and_says_the_time_left() {
        let (clock, m) = served(3000, "long-retry-after", 30.0, HeaderDialect::Draft11);
        clock.advance(Duration::from_secs(10)); // 5:00 story
        assert_eq!(m.stats().quota, 0);
        let a = m.answer(None);
        assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(a.headers[http::header::RETRY_AFTER], "4.000", "120 story s");
        assert_eq!(a.headers["ratelimit"], "\"default\";r=0;t=4");
    }

    #[test]
    fn real_time_retry_after_is_whole_seconds() {
        let (_clock, m) = served(1, "free-run", 1.0, HeaderDialect::Github);
        assert_eq!(m.answer(None).status, StatusCode::OK);
        let a = m.answer(None);
        assert_eq!(a.headers[http::header::RETRY_AFTER], "60");
        assert_eq!(a.headers["x-ratelimit-remaining"], "0");
    }
}
