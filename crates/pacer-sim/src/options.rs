//! A run's settings, and the simulator's own limiter defaults.
//!
//! The simulator's limiter defaults are not the library's: they are what the .NET adaptive limiter's table implies
//! its simulator used, so that our rows compare with the .NET adaptive limiter's (`docs/simulation.md` gives the
//! reasoning for each). The library's defaults stay as they are.

use crate::model::{Costs, QUOTA_WINDOW, ServerShape, window_units};
use pacer_core::LimiterOptions;
use std::num::NonZeroU32;
use std::time::Duration;

/// `InitialUnitsPerMinute` in the simulator: the .NET adaptive limiter's fixed row accepted 1,516 units per minute,
/// so its limiter started at about 1,500 for the whole budget (also the .NET adaptive limiter's SharePoint preset).
pub const SIM_INITIAL_UNITS_PER_MINUTE: f64 = 1500.0;
/// `MaxUnitsPerMinute` in the simulator: the .NET adaptive limiter gives one of 2 instances a maximum of 2,812.5.
pub const SIM_MAX_UNITS_PER_MINUTE: f64 = 5625.0;
/// `QueueLimit` in the simulator: the fixed row's p95 wait of 70.4 s at 750 units/min per instance
/// is a queue of about 880 units, that is about 500 requests of 1.8 units.
pub const SIM_QUEUE_LIMIT: usize = 500;
/// `MaxWait` in the simulator: above the fixed row's p95 wait of 70.4 s, so that the queue limit,
/// not `MaxWait`, bounds the waits, as the .NET adaptive limiter's waits of 44–70 s suggest.
pub const SIM_MAX_WAIT: Duration = Duration::from_secs(120);

/// The limiter options every limiter mode starts from: the library's defaults with the four
/// simulator values above. The rest are the library's: `MinUnitsPerMinute` 60, `Burst` 1 s,
/// `DecreaseCooldown` 5 s, AIMD 0.7 / 10 s / 120, CUBIC 0.7 / 0.4,
/// `MaxRetryAfter` 5 min, `PauseWithoutRetryAfter` 1 s.
#[must_use]
pub fn sim_limiter_defaults() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(SIM_INITIAL_UNITS_PER_MINUTE);
    o.max_units_per_minute = SIM_MAX_UNITS_PER_MINUTE;
    o.queue_limit = SIM_QUEUE_LIMIT;
    o.max_wait = SIM_MAX_WAIT;
    o
}

/// The settings of one comparison. The default is the .NET adaptive limiter's run: 2 instances of 2,000 units per
/// minute against a hidden quota of 3,000, for 15 minutes, seed 42.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// Client instances at the start (`--instances`).
    pub instances: u32,
    /// The hidden quota in units per minute before the story changes it (`--quota`).
    pub quota: u64,
    /// Demand per instance in units per minute (`--demand`).
    pub demand: f64,
    /// Length of the run in minutes (`--minutes`).
    pub minutes: u32,
    /// The random seed of the arrivals and latencies (`--seed`).
    pub seed: u64,
    /// The options each limiter mode starts from (its `InstanceCount` is set per run).
    pub limiter: LimiterOptions,
    /// The window of the hidden quota (`--window`): the model API accepts at most
    /// `quota × window ÷ 60 s` units in any sliding `window`, and says `w` of it in its
    /// draft-11 fields. Whole seconds, 1 s to 60 s; 60 s unless set. Pacer's estimate counts
    /// over the limiters' `QuotaWindow`, which should be set to it (the command line does).
    pub window: Duration,
    /// The shape of the hidden quota (`--server`): a sliding window unless set; a fixed window,
    /// a token or leaky bucket, or GCRA, each of the window's quota at the same pace.
    pub server: ServerShape,
    /// What each request costs (`--costs`): SharePoint's 1, 2 or 5 units unless set.
    pub costs: Costs,
    /// How many times a client sends a throttled request in all, counting the first: the
    /// middleware's `MaxAttempts`, for every mode. 4 unless set.
    pub max_attempts: NonZeroU32,
    /// The share of each round trip spent on the way to the server (`--forward`), from 0 to 1:
    /// the server counts and decides a request that long after it is sent, and the response
    /// takes the rest of the round trip back. 0 unless set: the server decides at the send.
    /// Round trips vary from 50 to 200 ms, so at 0.5 the arrivals are 25 to 100 ms after the
    /// sends, and an even pace reaches the server uneven.
    pub forward: f64,
    /// How far into its current window the `fixed` server was when the run began (`--phase`):
    /// its first boundary comes `window − phase` in, then every `window`. Less than the window
    /// (checked whatever the shape); 0 unless set, the windows starting with the run. A real
    /// server's windows do not start when a client does. The other shapes have no boundary and
    /// ignore it.
    pub phase: Duration,
    /// Whether the server says `Retry-After` with its 429s where its shape and the story do
    /// (`--no-retry-after` sets it false). False answers every 429 bare, as nginx's
    /// `limit_req`, HAProxy's counter and many APIs do, in every story: a rule that reads a run
    /// of bare throttles meets them against a sliding or fixed window too, not only at a cold
    /// start. True unless set.
    pub sends_retry_after: bool,
    /// Whether a process that replaces one that stopped (the `restart` story) starts from what
    /// that one learnt, as a client that saved `PacerMiddleware::remember` and `recall`s it
    /// does (`--restore`). False unless set.
    pub restore: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            instances: 2,
            quota: 3000,
            demand: 2000.0,
            minutes: 15,
            seed: 42,
            limiter: sim_limiter_defaults(),
            window: QUOTA_WINDOW,
            server: ServerShape::Sliding,
            costs: Costs::SharePoint,
            max_attempts: pacer_core::Rules::DEFAULT_MAX_ATTEMPTS,
            forward: 0.0,
            phase: Duration::ZERO,
            sends_retry_after: true,
            restore: false,
        }
    }
}

impl SimOptions {
    /// The length of the run.
    #[must_use]
    pub fn duration(&self) -> Duration {
        Duration::from_secs(u64::from(self.minutes) * 60)
    }

    /// Checks the settings; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), String> {
        if self.instances == 0 || self.instances > 1000 {
            return Err(format!(
                "--instances {}: must be from 1 to 1000",
                self.instances
            ));
        }
        if self.quota == 0 {
            return Err("--quota 0: must be at least 1".to_owned());
        }
        if !(self.demand.is_finite() && self.demand >= 0.0 && self.demand <= 1e6) {
            return Err(format!(
                "--demand {}: must be from 0 to 1,000,000",
                self.demand
            ));
        }
        if self.minutes == 0 || self.minutes > 24 * 60 {
            return Err(format!(
                "--minutes {}: must be from 1 to 1440",
                self.minutes
            ));
        }
        let w = self.window;
        if w.subsec_nanos() != 0 || w.is_zero() || w > QUOTA_WINDOW {
            return Err(format!(
                "--window {}: must be whole seconds from 1 to {}",
                w.as_secs_f64(),
                QUOTA_WINDOW.as_secs()
            ));
        }
        if !(0.0..=1.0).contains(&self.forward) {
            return Err(format!("--forward {}: must be from 0 to 1", self.forward));
        }
        if self.phase >= w {
            return Err(format!(
                "--phase {}: must be less than --window {}",
                self.phase.as_secs_f64(),
                w.as_secs()
            ));
        }
        if window_units(self.quota as f64, w).round() < 1.0 {
            return Err(format!(
                "--quota {} with --window {}: the window would hold no unit (it holds quota × \
                 window ÷ 60 s, rounded)",
                self.quota,
                w.as_secs()
            ));
        }
        self.limiter.validate().map_err(|e| e.to_string())
    }

    /// The settings with the hidden quota's window `window`, configured for it as
    /// `docs/configuration.md` advises: the limiters' `QuotaWindow` set to it, and their `Burst`
    /// at most a tenth of it (a burst of a second's units would fill a 1 s window at once).
    #[must_use]
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self.limiter.quota_window = window;
        self.limiter.burst = self.limiter.burst.min(window / 10);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_dotnet_limiter_s_run_and_valid() {
        let o = SimOptions::default();
        o.validate().unwrap();
        assert_eq!(
            (o.instances, o.quota, o.demand, o.minutes, o.seed),
            (2, 3000, 2000.0, 15, 42)
        );
        assert_eq!(o.limiter.max_units_per_minute / 2.0, 2812.5);
        assert_eq!(o.duration(), Duration::from_secs(900));
    }

    #[test]
    fn the_window_is_whole_seconds_up_to_a_minute_and_sets_quota_window() {
        let o = SimOptions::default().with_window(Duration::from_secs(10));
        o.validate().unwrap();
        assert_eq!(
            (o.window, o.limiter.quota_window, o.limiter.burst),
            (
                Duration::from_secs(10),
                Duration::from_secs(10),
                Duration::from_secs(1)
            )
        );
        let one = SimOptions::default().with_window(Duration::from_secs(1));
        assert_eq!(
            one.limiter.burst,
            Duration::from_millis(100),
            "a tenth of the window"
        );
        assert_eq!(SimOptions::default().window, Duration::from_secs(60));
        for bad in [
            Duration::ZERO,
            Duration::from_secs(61),
            Duration::from_millis(1500),
        ] {
            let e = SimOptions::default()
                .with_window(bad)
                .validate()
                .unwrap_err();
            assert!(e.contains("must be whole seconds from 1 to 60"), "{e}");
        }
        for bad in [-0.1, 1.5, f64::NAN] {
            let e = SimOptions {
                forward: bad,
                ..SimOptions::default()
            }
            .validate()
            .unwrap_err();
            assert!(e.contains("must be from 0 to 1"), "{e}");
        }
        let phased = SimOptions {
            phase: Duration::from_millis(9_500),
            ..SimOptions::default()
        }
        .with_window(Duration::from_secs(10));
        phased.validate().unwrap();
        let e = SimOptions {
            phase: Duration::from_secs(10),
            ..phased
        }
        .validate()
        .unwrap_err();
        assert_eq!(e, "--phase 10: must be less than --window 10");
        let tiny = SimOptions {
            quota: 20,
            ..SimOptions::default()
        }
        .with_window(Duration::from_secs(1));
        let e = tiny.validate().unwrap_err();
        assert!(e.contains("the window would hold no unit"), "{e}");
    }

    #[test]
    fn out_of_range_settings_are_named() {
        let bad = SimOptions {
            instances: 0,
            ..SimOptions::default()
        };
        assert_eq!(
            bad.validate().unwrap_err(),
            "--instances 0: must be from 1 to 1000"
        );
        let bad = SimOptions {
            demand: f64::NAN,
            ..SimOptions::default()
        };
        assert!(bad.validate().unwrap_err().starts_with("--demand NaN"));
    }
}
