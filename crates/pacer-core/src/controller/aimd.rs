//! AIMD: additive increase, multiplicative decrease.

use super::{Controller, ControllerContext, RateController, RateControllerState};
use crate::validation::{Checker, InvalidOptions};
use std::time::Duration;

/// Options of the [`Aimd`] controller (`Aimd.*` in configuration).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AimdOptions {
    /// `Aimd.DecreaseFactor`: the rate is multiplied by this on a throttle. Default 0.7; must lie
    /// strictly between 0 and 1.
    pub decrease_factor: f64,
    /// `Aimd.IncreaseInterval`: the least time between two increases. Default 10 s.
    pub increase_interval: Duration,
    /// `Aimd.IncreaseStep`: units per minute **for the whole budget** added on an increase; each
    /// process adds its share (`step / InstanceCount`). Default 120; must be greater than 0.
    pub increase_step: f64,
}

impl Default for AimdOptions {
    fn default() -> Self {
        AimdOptions {
            decrease_factor: 0.7,
            increase_interval: Duration::from_secs(10),
            increase_step: 120.0,
        }
    }
}

impl AimdOptions {
    /// Checks every option; the error names each one that is out of range (as `DecreaseFactor`;
    /// the limiter's options prefix it with `Aimd.`).
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        c.fraction("DecreaseFactor", self.decrease_factor);
        c.positive("IncreaseStep", self.increase_step);
        c.finish()
    }
}

/// The AIMD controller (`Controller = "Aimd"`).
///
/// - On a throttle, the rate is multiplied by `DecreaseFactor` (0.7), down to the minimum.
/// - On a success, if `IncreaseInterval` (10 s) has passed since the last change and requests had
///   to wait in it, the rate goes up by this process's share of `IncreaseStep` (120 units per
///   minute for the whole budget), up to the maximum.
///
/// With the defaults the whole budget climbs by at most 720 units per minute in each minute: slow
/// and predictable, and the rate spends most of its time just below the limit (a saw tooth).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Aimd {
    /// Not kept with the state: a fleet's controller takes each member's own.
    #[serde(skip)]
    options: AimdOptions,
}

impl Aimd {
    /// An AIMD controller with validated options.
    pub fn new(options: AimdOptions) -> Result<Self, InvalidOptions> {
        options.validate()?;
        Ok(Aimd { options })
    }

    /// The controller's options.
    #[must_use]
    pub fn options(&self) -> &AimdOptions {
        &self.options
    }

    /// Replaces the options (they are valid).
    pub(crate) fn set_options(&mut self, options: AimdOptions) {
        self.options = options;
    }
}

impl Aimd {
    fn cut(&self, rate: f64, min_rate: f64) -> f64 {
        (rate * self.options.decrease_factor).max(min_rate)
    }

    fn climb(
        &self,
        rate: f64,
        max_rate: f64,
        waited: bool,
        since_last_increase: Duration,
        instance_count: u32,
    ) -> Option<f64> {
        if !waited || since_last_increase < self.options.increase_interval {
            return None;
        }
        let step = self.options.increase_step / f64::from(instance_count.max(1));
        Some((rate + step).min(max_rate))
    }
}

/// AIMD needs nothing but the limiter's own bookkeeping: it keeps no state.
impl Controller for Aimd {
    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        self.cut(cx.rate, cx.min_rate)
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        self.climb(
            cx.rate,
            cx.max_rate,
            cx.waited,
            cx.since_last_increase,
            cx.instance_count,
        )
    }
}

impl RateController for Aimd {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        self.cut(state.rate, state.min_rate)
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        self.climb(
            state.rate,
            state.max_rate,
            state.waited,
            state.since_last_increase,
            state.instance_count,
        )
    }
}

#[cfg(test)]
mod tests {
    // The pure contract: the state in, a rate out (the `Controller` side is tested through
    // the limiter).
    use super::{Aimd, AimdOptions, Duration, RateController, RateControllerState};

    fn state(rate: f64, instances: u32) -> RateControllerState {
        let mut s = RateControllerState::new(rate, 60.0 / f64::from(instances), 6000.0);
        s.instance_count = instances;
        s
    }

    #[test]
    fn a_throttle_cuts_by_the_factor_down_to_the_minimum() {
        let mut aimd = Aimd::default();
        for (rate, min, expected) in [
            (1000.0, 60.0, 700.0),
            (100.0, 60.0, 70.0),
            (80.0, 60.0, 60.0),
            (60.0, 60.0, 60.0),
        ] {
            let mut s = RateControllerState::new(rate, min, 6000.0);
            s.waited = true;
            assert!((aimd.on_throttled(&s) - expected).abs() < 1e-9, "{rate}");
        }
    }

    #[test]
    fn an_increase_needs_the_interval_and_a_wait() {
        let mut aimd = Aimd::default();
        let table = [
            // (waited, since_last_increase s, expected)
            (false, 10, None),
            (true, 9, None),
            (true, 10, Some(720.0)),
            (true, 60, Some(720.0)),
        ];
        for (waited, since, expected) in table {
            let mut s = state(600.0, 1);
            s.waited = waited;
            s.since_last_increase = Duration::from_secs(since);
            assert_eq!(
                aimd.on_success(&s),
                expected,
                "waited={waited} since={since}"
            );
        }
    }

    #[test]
    fn each_of_two_instances_steps_by_60_so_the_budget_climbs_720_per_minute() {
        let mut aimd = Aimd::default();
        let mut rate = 750.0;
        // One step per 10 s interval, for a minute: six steps of 60 per instance.
        for _ in 0..6 {
            let mut s = state(rate, 2);
            s.waited = true;
            s.since_last_increase = Duration::from_secs(10);
            let next = aimd.on_success(&s).unwrap();
            assert!((next - rate - 60.0).abs() < 1e-9);
            rate = next;
        }
        assert!(
            (rate - 750.0 - 360.0).abs() < 1e-9,
            "2 instances × 360 = 720 per minute"
        );
    }

    #[test]
    fn the_increase_stops_at_the_maximum() {
        let mut aimd = Aimd::default();
        let mut s = RateControllerState::new(5950.0, 60.0, 6000.0);
        s.waited = true;
        s.since_last_increase = Duration::from_secs(10);
        assert_eq!(aimd.on_success(&s), Some(6000.0));
    }

    #[test]
    fn invalid_options_are_named() {
        let e = Aimd::new(AimdOptions {
            decrease_factor: 1.0,
            increase_step: -1.0,
            ..AimdOptions::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "DecreaseFactor = 1: must be greater than 0 and less than 1; IncreaseStep = -1: must be greater than 0"
        );
    }
}
