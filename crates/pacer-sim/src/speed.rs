//! `--speed K`: story time runs K times faster than the real clock, for `serve` and `live`.
//!
//! A story of 15 minutes against a quota of 3,000 units per minute is a long thing to watch on
//! the real clock. At speed K, one second of story (model) time lasts 1/K s of real time, and
//! everything measured in time shrinks with it, so that a run at speed K is, on the story's
//! clock, the very run at speed 1:
//!
//! | what | story time | real time at speed K |
//! |---|---|---|
//! | the quota window | 60 s | 60/K s |
//! | the quota | Q units per window | Q units per 60/K s, i.e. Q·K units per real minute |
//! | a story's minute m | m min | m/K min from the server's start (or reset) |
//! | a `Retry-After` | R s | R/K s, sent with millisecond decimals when K ≠ 1 |
//! | demand | D units per minute | D·K units per real minute |
//! | a limiter's rates (`Initial`, `Min`, `Max`, the AIMD step) | r units per minute | r·K |
//! | a limiter's durations (`Burst`, `MaxWait`, `DecreaseCooldown`, `QuotaWindow`, `MaxRetryAfter`, `PauseWithoutRetryAfter`, AIMD `IncreaseInterval`, Pacer's `ProbeAfter`, `MaxProbeAfter`, `RecoveryProbeAfter`, `RecoveryTime`) | d | d/K |
//! | Pacer's `StartGrowth` (a fraction per second) | g | g·K |
//! | CUBIC's `ScaleConstant` C (units/s per s³) | C | C·K⁴ (so that `K_cubic` shrinks by K and the curve's rates grow by K) |
//!
//! Units (a request's cost) do not scale: a request of 2 units costs 2 units at every speed.
//! `live` converts what it measures back to story time, so its table reads in the story's units
//! per minute and seconds at any speed.
//!
//! What cannot scale: the network's round trip, tokio's 1 ms timer, the scheduler's delays, and
//! the limiter's own measuring period for the send rate (0.5 s of real time, used by CUBIC), so
//! at speed K each of them weighs K times more in story time. Keep frames ≫ 1 ms: at 30× a
//! story second is 33 ms.

use pacer_core::LimiterOptions;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The largest speed accepted: at 1,000× a story second is 1 ms of real time, tokio's timer tick.
pub const MAX_SPEED: f64 = 1000.0;

/// How many times faster than the real clock story time runs. At least 1/1000 and at most
/// [`MAX_SPEED`]; the default is 1.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Speed(f64);

impl Default for Speed {
    fn default() -> Self {
        Speed(1.0)
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Speed {
    type Err = String;

    /// `30`, `30x`, `2.5`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_end_matches(['x', 'X', '×']);
        let k: f64 = t
            .parse()
            .map_err(|_| format!("speed {s:?}: expected a number such as 1, 10 or 30"))?;
        Speed::new(k)
    }
}

impl Speed {
    /// Real time.
    pub const REAL_TIME: Speed = Speed(1.0);

    /// A speed of `k`; the error says the range.
    pub fn new(k: f64) -> Result<Speed, String> {
        if k.is_finite() && (1.0 / MAX_SPEED..=MAX_SPEED).contains(&k) {
            Ok(Speed(k))
        } else {
            Err(format!("speed {k}: must be from 0.001 to {MAX_SPEED}"))
        }
    }

    /// The factor K.
    #[must_use]
    pub fn get(self) -> f64 {
        self.0
    }

    /// The real duration of `story` time.
    #[must_use]
    pub fn to_real(self, story: Duration) -> Duration {
        story.div_f64(self.0)
    }

    /// The story time that `real` time stands for.
    #[must_use]
    pub fn to_story(self, real: Duration) -> Duration {
        real.mul_f64(self.0)
    }

    /// A `Retry-After` of `story_secs` story seconds in real seconds: the whole number at speed
    /// 1, else the real delay rounded *up* to the millisecond, with three decimals (`0.834`).
    /// Pacer's parser and many others read fractional seconds, though RFC 9110's
    /// `delay-seconds` is an integer.
    #[must_use]
    pub fn retry_after_value(self, story_secs: u64) -> String {
        if self.0 == 1.0 {
            return story_secs.to_string();
        }
        let millis = (story_secs as f64 * 1000.0 / self.0).ceil() as u64;
        format!("{}.{:03}", millis / 1000, millis % 1000)
    }

    /// A whole number of story seconds as whole real seconds, rounded up, for headers whose
    /// grammar has no fractions (draft-11 `w` and `t`, GitHub's reset). `minimum` keeps a
    /// window from becoming 0.
    #[must_use]
    pub fn whole_real_secs(self, story_secs: u64, minimum: u64) -> u64 {
        ((story_secs as f64 / self.0).ceil() as u64).max(minimum)
    }

    /// Limiter options meant for story time, turned into the options that behave the same on
    /// the real clock at this speed (see the module docs): rates × K, durations ÷ K, CUBIC's
    /// scale constant × K⁴. Everything else is kept.
    #[must_use]
    pub fn limiter_options(self, story: &LimiterOptions) -> LimiterOptions {
        let k = self.0;
        let mut o = story.clone();
        o.initial_units_per_minute = story.initial_units_per_minute.map(|r| r * k);
        o.min_units_per_minute *= k;
        o.max_units_per_minute *= k;
        o.burst = story.burst.div_f64(k);
        o.max_wait = story.max_wait.div_f64(k);
        o.decrease_cooldown = story.decrease_cooldown.div_f64(k);
        o.max_retry_after = story.max_retry_after.div_f64(k);
        o.pause_without_retry_after = story.pause_without_retry_after.div_f64(k);
        o.quota_window = story.quota_window.div_f64(k);
        o.aimd.increase_interval = story.aimd.increase_interval.div_f64(k);
        o.aimd.increase_step *= k;
        o.cubic.scale_constant *= k.powi(4);
        o.pacer.probe_after = story.pacer.probe_after.div_f64(k);
        o.pacer.max_probe_after = story.pacer.max_probe_after.div_f64(k);
        o.pacer.recovery_probe_after = story.pacer.recovery_probe_after.div_f64(k);
        o.pacer.recovery_time = story.pacer.recovery_time.div_f64(k);
        o.pacer.start_growth *= k;
        o.pacer = o.pacer.with_time_scale(story.pacer.time_scale() * k);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_limiter_defaults;
    use pacer_core::{Cubic, RateController as _, RateControllerState};

    #[test]
    fn speeds_parse_with_or_without_an_x_and_stay_in_range() {
        assert_eq!("30".parse::<Speed>().unwrap().get(), 30.0);
        assert_eq!("2.5x".parse::<Speed>().unwrap().get(), 2.5);
        assert!(
            "0".parse::<Speed>()
                .unwrap_err()
                .contains("from 0.001 to 1000")
        );
        assert!("fast".parse::<Speed>().is_err());
        assert!(Speed::new(f64::INFINITY).is_err());
        assert_eq!(Speed::default(), Speed::REAL_TIME);
    }

    #[test]
    fn time_shrinks_by_the_speed() {
        let k = Speed::new(30.0).unwrap();
        assert_eq!(k.to_real(Duration::from_secs(60)), Duration::from_secs(2));
        assert_eq!(
            k.to_story(Duration::from_millis(100)),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn retry_after_is_whole_at_real_time_and_rounded_up_to_the_millisecond_otherwise() {
        assert_eq!(Speed::REAL_TIME.retry_after_value(25), "25");
        let k = Speed::new(30.0).unwrap();
        assert_eq!(k.retry_after_value(25), "0.834");
        assert_eq!(k.retry_after_value(60), "2.000");
        assert_eq!(k.retry_after_value(120), "4.000");
        assert_eq!(Speed::new(0.5).unwrap().retry_after_value(3), "6.000");
        assert_eq!(k.whole_real_secs(60, 1), 2);
        assert_eq!(k.whole_real_secs(25, 1), 1);
        assert_eq!(k.whole_real_secs(0, 0), 0);
    }

    #[test]
    fn limiter_options_scale_rates_up_and_durations_down() {
        let story = sim_limiter_defaults();
        let o = Speed::new(10.0).unwrap().limiter_options(&story);
        assert_eq!(o.initial_units_per_minute, Some(15_000.0));
        assert_eq!(o.max_units_per_minute, 56_250.0);
        assert_eq!(o.min_units_per_minute, 600.0);
        assert_eq!(o.burst, Duration::from_millis(100));
        assert_eq!(o.max_wait, Duration::from_secs(12));
        assert_eq!(o.decrease_cooldown, Duration::from_millis(500));
        assert_eq!(o.aimd.increase_interval, Duration::from_secs(1));
        assert_eq!(o.aimd.increase_step, 1200.0);
        assert_eq!(o.max_retry_after, Duration::from_secs(30));
        assert_eq!(o.pause_without_retry_after, Duration::from_millis(100));
        assert_eq!(o.quota_window, Duration::from_secs(6));
        assert_eq!(o.pacer.probe_after, Duration::from_secs(12));
        assert_eq!(
            o.pacer.time_scale(),
            10.0,
            "Pacer's fixed timings run 10 times faster"
        );
        assert!((o.cubic.scale_constant - 4000.0).abs() < 1e-9);
        assert_eq!(o.queue_limit, story.queue_limit);
        o.validate().unwrap();
    }

    /// CUBIC at speed K: the curve at real time t/K is K times the curve at story time t.
    #[test]
    fn cubic_s_curve_is_the_same_curve_at_every_speed() {
        let story = sim_limiter_defaults();
        let k = 30.0;
        let fast = Speed::new(k).unwrap().limiter_options(&story);
        let mut slow_c = Cubic::new(story.cubic).unwrap();
        let mut fast_c = Cubic::new(fast.cubic).unwrap();
        // A cut from 3,000 (story) sets W; compare the curves after it.
        let state = |rate: f64| RateControllerState::new(rate, 60.0, rate * 2.0);
        let _ = slow_c.on_throttled(&state(3000.0));
        let _ = fast_c.on_throttled(&state(3000.0 * k));
        for secs in [0.0, 5.0, 12.0, 30.0] {
            let slow = slow_c.curve(Duration::from_secs_f64(secs), 1500.0, 2);
            let fast = fast_c.curve(Duration::from_secs_f64(secs / k), 1500.0 * k, 2);
            assert!(
                (fast / k - slow).abs() < 1e-6 * slow.abs().max(1.0),
                "{secs}"
            );
        }
    }
}
