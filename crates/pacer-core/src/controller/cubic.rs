//! CUBIC: the window curve of RFC 8312 applied to a rate, with the AWS SDK's constants.

use super::paused::PausedTime;
use super::{Controller, ControllerContext, RateController, RateControllerState};
use crate::Timestamp;
use crate::validation::{Checker, InvalidOptions};
use std::time::Duration;

/// Options of the [`Cubic`] controller (`Cubic.*` in configuration).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CubicOptions {
    /// `Cubic.Beta` (β): on a throttle the rate becomes `W × β`. Default 0.7 (RFC 8312 and the
    /// AWS SDK adaptive retry mode); must lie strictly between 0 and 1.
    pub beta: f64,
    /// `Cubic.ScaleConstant` (C), in units per second per second³, **for the whole budget**; each
    /// process uses `C / InstanceCount`. Default 0.4 (the AWS SDK's `SCALE_CONSTANT`); must be
    /// greater than 0.
    pub scale_constant: f64,
}

impl Default for CubicOptions {
    fn default() -> Self {
        CubicOptions {
            beta: 0.7,
            scale_constant: 0.4,
        }
    }
}

impl CubicOptions {
    /// Checks every option; the error names each one that is out of range.
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        c.fraction("Beta", self.beta);
        c.positive("ScaleConstant", self.scale_constant);
        c.finish()
    }
}

/// The CUBIC controller.
///
/// - On a throttle, `W` is set to the current rate, or to the measured send rate if it is lower.
///   The new rate is `W × β`.
/// - On a success after a wait, the rate follows the curve, in units per second:
///   `K = ∛(W × (1 − β) / C)`, `rate = C × (t − K)³ + W`, where `t` is the time since the last
///   cut without the Retry-After pauses. The rate never goes above two times the measured send
///   rate, and never goes down on a success.
/// - Before the first throttle the curve starts when the limiter was created, with `W` equal to
///   the initial rate: the rate holds for `K` seconds, then climbs.
///
/// CUBIC finds the maximum within seconds and stays there, so set `MaxUnitsPerMinute` close to,
/// and below, the real limit when you use it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Cubic {
    /// Not kept with the state: a fleet's controller takes each member's own.
    #[serde(skip)]
    options: CubicOptions,
    /// `W`, units per minute for this process, from the last cut; `None` before the first cut.
    last_max_rate: Option<f64>,
    /// The time paused since the last cut, which `t` leaves out (as a [`Controller`]).
    paused: PausedTime,
}

impl Cubic {
    /// A CUBIC controller with validated options.
    pub fn new(options: CubicOptions) -> Result<Self, InvalidOptions> {
        options.validate()?;
        Ok(Cubic {
            options,
            last_max_rate: None,
            paused: PausedTime::default(),
        })
    }

    /// The controller's options.
    #[must_use]
    pub fn options(&self) -> &CubicOptions {
        &self.options
    }

    /// Replaces the options (they are valid), keeping the state.
    pub(crate) fn set_options(&mut self, options: CubicOptions) {
        self.options = options;
    }

    /// `W` in units per minute for this process: the rate of the last cut, or `initial_rate`
    /// before the first one.
    #[must_use]
    pub fn last_max_rate(&self, initial_rate: f64) -> f64 {
        self.last_max_rate.unwrap_or(initial_rate)
    }

    /// `K`: how long after a cut the curve is back at `W`.
    #[must_use]
    pub fn k(&self, initial_rate: f64, instance_count: u32) -> Duration {
        let w = self.last_max_rate(initial_rate) / 60.0;
        Duration::from_secs_f64(self.k_secs(w, self.scale(instance_count)))
    }

    /// The curve at `t` after the last cut, in units per minute for this process, before the caps.
    #[must_use]
    pub fn curve(&self, t: Duration, initial_rate: f64, instance_count: u32) -> f64 {
        let w = self.last_max_rate(initial_rate) / 60.0;
        let c = self.scale(instance_count);
        let dt = t.as_secs_f64() - self.k_secs(w, c);
        (c * dt * dt * dt + w) * 60.0
    }

    fn scale(&self, instance_count: u32) -> f64 {
        self.options.scale_constant / f64::from(instance_count.max(1))
    }

    fn k_secs(&self, w_per_sec: f64, c: f64) -> f64 {
        (w_per_sec.max(0.0) * (1.0 - self.options.beta) / c).cbrt()
    }
}

impl Cubic {
    fn cut(&mut self, rate: f64, min_rate: f64, measured: Option<f64>) -> f64 {
        let w = match measured {
            Some(measured) => rate.min(measured),
            None => rate,
        };
        self.last_max_rate = Some(w);
        (w * self.options.beta).max(min_rate)
    }

    /// The curve at `t` (since the cut, without pauses), capped at twice the measured send
    /// rate and the maximum, if above the rate.
    fn climb(&self, at: Climb, t: Duration) -> Option<f64> {
        if !at.waited {
            return None;
        }
        let mut rate = self.curve(t, at.initial_rate, at.instance_count);
        if let Some(measured) = at.measured_send_rate {
            rate = rate.min(2.0 * measured);
        }
        rate = rate.min(at.max_rate);
        (rate > at.rate).then_some(rate)
    }
}

/// What a climb reads of the limiter, from either contract.
#[derive(Clone, Copy)]
struct Climb {
    rate: f64,
    max_rate: f64,
    initial_rate: f64,
    instance_count: u32,
    measured_send_rate: Option<f64>,
    waited: bool,
}

impl From<&ControllerContext> for Climb {
    fn from(cx: &ControllerContext) -> Self {
        Climb {
            rate: cx.rate,
            max_rate: cx.max_rate,
            initial_rate: cx.initial_rate,
            instance_count: cx.instance_count,
            measured_send_rate: cx.measured_send_rate,
            waited: cx.waited,
        }
    }
}

impl From<&RateControllerState> for Climb {
    fn from(s: &RateControllerState) -> Self {
        Climb {
            rate: s.rate,
            max_rate: s.max_rate,
            initial_rate: s.initial_rate,
            instance_count: s.instance_count,
            measured_send_rate: s.measured_send_rate,
            waited: s.waited,
        }
    }
}

/// As a [`Controller`], CUBIC keeps the time paused since its last cut itself.
impl Controller for Cubic {
    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.paused.on_pause(from, until);
    }

    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        let rate = self.cut(cx.rate, cx.min_rate, cx.measured_send_rate);
        self.paused.on_cut(cx);
        rate
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        self.climb(cx.into(), self.paused.unpaused_since_cut(cx))
    }
}

impl RateController for Cubic {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        self.cut(state.rate, state.min_rate, state.measured_send_rate)
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        self.climb(state.into(), state.since_last_decrease_unpaused)
    }
}

#[cfg(test)]
mod tests {
    // The pure contract: the state in, a rate out (the `Controller` side is tested through
    // the limiter).
    use super::{Cubic, CubicOptions, Duration, RateController, RateControllerState};

    fn waited(rate: f64, min: f64, max: f64) -> RateControllerState {
        let mut s = RateControllerState::new(rate, min, max);
        s.waited = true;
        s
    }

    /// The AWS SDK's golden vectors (aws-sdk-go-v2 `adaptive_ratelimit_test.go`, ported to
    /// smithy-rs): last max rate 10 requests/s, throttle at t = 5, successes at t = 5..11. Pacer's
    /// rates are per minute, so each figure is × 60.
    #[test]
    fn reproduces_the_aws_golden_vectors() {
        let mut cubic = Cubic::default();
        let at_throttle = waited(600.0, 1.0, 1e9);
        assert!(
            (cubic.on_throttled(&at_throttle) - 420.0).abs() < 1e-9,
            "cubic_throttle(10) = 7"
        );
        let expected = [7.0, 9.6489, 10.00003, 10.4533, 13.4087, 21.2663, 36.4260];
        for (t, want) in expected.iter().enumerate() {
            let mut s = waited(1.0, 1.0, 1e9);
            s.since_last_decrease_unpaused = Duration::from_secs(t as u64);
            let got = cubic.on_success(&s).unwrap() / 60.0;
            assert!((got - want).abs() < 1e-3, "t={t}: got {got}, want {want}");
        }
    }

    #[test]
    fn k_is_about_four_seconds_after_a_cut_at_the_dotnet_limiter_s_maximum() {
        // One of 2 instances, MaxUnitsPerMinute 5,625 → 2,812.5 per instance; C = 0.4 / 2.
        let mut cubic = Cubic::default();
        let mut s = waited(2812.5, 30.0, 2812.5);
        s.instance_count = 2;
        let cut = cubic.on_throttled(&s);
        assert!((cut - 2812.5 * 0.7).abs() < 1e-9);
        let k = cubic.k(750.0, 2).as_secs_f64();
        assert!((k - 4.127).abs() < 0.01, "K = {k}");
        // At t = K the curve is back at W.
        let at_k = cubic.curve(Duration::from_secs_f64(k), 750.0, 2);
        assert!((at_k - 2812.5).abs() < 1e-6);
    }

    #[test]
    fn before_the_first_throttle_the_curve_starts_at_creation_with_the_initial_rate() {
        // Initial 1,500 for the budget → 750 per instance; maximum 2,812.5.
        let mut cubic = Cubic::default();
        let rate_at = |cubic: &mut Cubic, secs: f64, rate: f64| {
            let mut s = waited(rate, 30.0, 2812.5);
            s.instance_count = 2;
            s.initial_rate = 750.0;
            s.since_last_decrease_unpaused = Duration::from_secs_f64(secs);
            cubic.on_success(&s)
        };
        let k = cubic.k(750.0, 2).as_secs_f64();
        assert!((k - 2.657).abs() < 0.01, "K = {k}");
        assert_eq!(rate_at(&mut cubic, k - 0.01, 750.0), None, "holds until K");
        let above = rate_at(&mut cubic, k + 1.0, 750.0).unwrap();
        assert!(above > 750.0 && above < 800.0, "{above}");
        // Reaches the maximum about 8.2 s after creation.
        assert!(rate_at(&mut cubic, 8.1, 750.0).unwrap() < 2812.5);
        assert_eq!(rate_at(&mut cubic, 8.3, 750.0), Some(2812.5));
    }

    #[test]
    fn w_is_the_measured_send_rate_when_it_is_lower() {
        let mut cubic = Cubic::default();
        let mut s = waited(1000.0, 10.0, 6000.0);
        s.measured_send_rate = Some(400.0);
        assert!((cubic.on_throttled(&s) - 280.0).abs() < 1e-9);
        assert_eq!(cubic.last_max_rate(600.0), 400.0);
    }

    #[test]
    fn never_above_twice_the_measured_send_rate_and_never_down_on_a_success() {
        let mut cubic = Cubic::default();
        let _ = cubic.on_throttled(&waited(600.0, 1.0, 1e9));
        let mut s = waited(100.0, 1.0, 1e9);
        s.since_last_decrease_unpaused = Duration::from_secs(6); // curve ≈ 2,185/min
        s.measured_send_rate = Some(300.0);
        assert_eq!(cubic.on_success(&s), Some(600.0));
        s.rate = 700.0;
        assert_eq!(
            cubic.on_success(&s),
            None,
            "the cap is below the rate: no change"
        );
        s.measured_send_rate = None;
        s.since_last_decrease_unpaused = Duration::ZERO; // curve = 420 < 700
        assert_eq!(cubic.on_success(&s), None);
    }

    #[test]
    fn no_increase_without_a_wait() {
        let mut cubic = Cubic::default();
        let mut s = RateControllerState::new(100.0, 1.0, 1e9);
        s.since_last_decrease_unpaused = Duration::from_secs(60);
        assert_eq!(cubic.on_success(&s), None);
    }

    #[test]
    fn invalid_options_are_named() {
        let e = Cubic::new(CubicOptions {
            beta: 0.0,
            scale_constant: f64::INFINITY,
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Beta = 0: must be greater than 0 and less than 1; ScaleConstant = inf: must be a finite number"
        );
    }
}
