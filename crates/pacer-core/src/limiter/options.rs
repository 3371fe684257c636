//! The adaptive limiter's options, with the .NET adaptive limiter's names and Pacer's defaults.

use crate::controller::{
    Aimd, AimdOptions, Controller, Cubic, CubicOptions, PacerController, PacerControllerOptions,
};
use crate::validation::{Checker, InvalidOptions, format_duration};
use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

/// Which built-in controller a limiter uses (`Controller` in configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ControllerKind {
    /// [`Aimd`]: additive increase, multiplicative decrease.
    Aimd,
    /// [`Cubic`]: the RFC 8312 curve with the AWS SDK's constants.
    Cubic,
    /// [`PacerController`]: Pacer's own, which finds the limit, holds just under it and probes
    /// rarely. The default: in the simulator's sweep (docs/controllers.md) it has at least
    /// AIMD's share of the quota with at most its 429s in all but one seeded run with 2 and 4
    /// instances.
    #[default]
    Pacer,
}

impl ControllerKind {
    /// The name as written in configuration: `Aimd`, `Cubic`, `Pacer`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ControllerKind::Aimd => "Aimd",
            ControllerKind::Cubic => "Cubic",
            ControllerKind::Pacer => "Pacer",
        }
    }

    /// Every built-in kind, for help texts and suggestions.
    pub const ALL: [ControllerKind; 3] = [
        ControllerKind::Aimd,
        ControllerKind::Cubic,
        ControllerKind::Pacer,
    ];
}

impl fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not the name of a built-in controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {0:?}: expected one of Aimd, Cubic, Pacer")]
pub struct UnknownController(pub String);

impl FromStr for ControllerKind {
    type Err = UnknownController;

    /// Case-insensitive: `aimd`, `AIMD` and `Aimd` are the same.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ControllerKind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownController(s.to_owned()))
    }
}

/// Options of an adaptive limiter. Rates are in units per minute **for the whole budget**; each
/// process takes `1 / InstanceCount` of `Initial`, `Min`, `Max`, the AIMD step and the CUBIC scale
/// constant.
///
/// Names follow the .NET adaptive limiter's configuration (`InitialUnitsPerMinute`, …) so an existing
/// `appsettings.json` section loads unchanged. Start from [`LimiterOptions::default`] and set the
/// fields you need; [`LimiterOptions::validate`] (called by every constructor that takes options)
/// reports every option out of range at once.
///
/// ```
/// use pacer_core::LimiterOptions;
/// use std::time::Duration;
///
/// let mut options = LimiterOptions::default();
/// options.initial_units_per_minute = Some(600.0);
/// options.min_units_per_minute = 60.0;
/// options.max_units_per_minute = 1200.0;
/// options.decrease_cooldown = Duration::from_secs(5);
/// options.validate().unwrap();
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LimiterOptions {
    /// `Enabled`: when false the limiter never holds a request back, but still tracks its rate,
    /// pauses and metrics. Default true.
    pub enabled: bool,
    /// `Controller`: the built-in controller. Default [`ControllerKind::Pacer`]. A controller
    /// given in code replaces it.
    pub controller: ControllerKind,
    /// `InitialUnitsPerMinute`: the rate a new limiter starts at. Must lie between the minimum
    /// and the maximum. Changing it on a running limiter has no effect.
    ///
    /// Default `None`: **no limit until the first throttle signal**. The limiter starts at
    /// `MaxUnitsPerMinute` and holds nothing back until the server says "slow down" — a throttle
    /// ([`Signal::Throttled`](crate::Signal::Throttled): a 429 or 503, with or without a
    /// `Retry-After`), a pause ([`LimiterCore::pause_until`](super::LimiterCore::pause_until)),
    /// or rate-limit numbers that say the quota is nearly spent
    /// ([`LimiterCore::follow_server`](super::LimiterCore::follow_server)). From then on the rate
    /// starts from the measured send rate (what the endpoint was really sent), as the AWS SDK's
    /// adaptive retry starts from `measured_tx_rate` at its first throttle; a throttle then has
    /// the controller cut it. `Some(rate)` starts at `rate` and limits from the first request.
    pub initial_units_per_minute: Option<f64>,
    /// `MinUnitsPerMinute`: the rate never goes below this. Default 60; must be greater than 0.
    pub min_units_per_minute: f64,
    /// `MaxUnitsPerMinute`: the rate never goes above this. Default
    /// [`LimiterOptions::DEFAULT_MAX_UNITS_PER_MINUTE`] (a billion: no ceiling a client would
    /// meet); must be at least the minimum.
    pub max_units_per_minute: f64,
    /// `Burst`: the bucket holds `rate × Burst` units, so after a quiet spell this much can go at
    /// once. Default 1 s; must be greater than 0.
    pub burst: Duration,
    /// `QueueLimit`: how many requests may wait for units; one more is rejected at once.
    /// Default 1,000. 0 means a request that cannot go now is rejected.
    pub queue_limit: usize,
    /// `MaxWait`: the longest a request may wait before it is sent, for everything it waits for
    /// (a pause, a window, the proactive delay, the queue). A request that would wait longer is
    /// rejected at once, without being sent. Default 30 s. It also bounds what one request may
    /// cost, so that no request leaves a debt that outlasts it
    /// ([`LimiterCore::max_cost`](super::LimiterCore::max_cost)).
    pub max_wait: Duration,
    /// `DecreaseCooldown`: the least time between two cuts. Default 5 s.
    pub decrease_cooldown: Duration,
    /// `InstanceCount`: the number of processes that share the budget. Default 1; at least 1.
    pub instance_count: u32,
    /// `QuotaWindow`: the window the server counts its quota over (most count a minute). The
    /// limiter counts the units the server accepted over the last window
    /// ([`RateControllerState::accepted_per_minute`]), which the Pacer controller takes as the
    /// limit at a throttle, and the Pacer controller's fixed timings are fractions of it.
    /// Default 1 min; must be greater than 0. A new value starts the count again.
    ///
    /// [`RateControllerState::accepted_per_minute`]: crate::RateControllerState::accepted_per_minute
    pub quota_window: Duration,
    /// `Aimd.*`: the AIMD controller's options.
    pub aimd: AimdOptions,
    /// `Cubic.*`: the CUBIC controller's options.
    pub cubic: CubicOptions,
    /// `Pacer.*`: the Pacer controller's options.
    pub pacer: PacerControllerOptions,
    /// `MaxRetryAfter`: the longest pause a server's `Retry-After` can order. Default 5 min; must
    /// be greater than 0.
    pub max_retry_after: Duration,
    /// `PauseWithoutRetryAfter`: how long a throttle that came without a `Retry-After` (a bare
    /// 429 or 503, one whose `Retry-After` could not be read, or a `Retry-After: 0`, which says
    /// only that the wait is under a second, rounded down) holds every request of its endpoint
    /// back, as a `Retry-After` of that length would. Default 1 s (the first wait of
    /// the usual retry loops); 0 sends on at once at the cut rate. Capped by `MaxRetryAfter`,
    /// and, for a throttle with no `Retry-After` or one that could not be read (not a
    /// `Retry-After: 0`), by a quarter of the window the server counts over (`QuotaWindow`, or
    /// the one the controller learnt,
    /// [`Controller::server_window`](crate::Controller::server_window)): against a window of a
    /// second, a pause of the whole second is a whole window.
    ///
    /// Without it, the requests sent in the second after a bare throttle meet the same full
    /// window or bucket: a server that does not say when to come back (nginx's `limit_req`, a
    /// leaky bucket, a fixed window that is spent) refuses every one of them. The controller
    /// still sees a throttle without `Retry-After` (its rules for bare throttles apply).
    pub pause_without_retry_after: Duration,
    /// `MaxConcurrent`: the most requests of each endpoint in flight at once — granted and not
    /// yet answered, failed or given up — **in this process** (it is not divided by
    /// `InstanceCount`). A request that would be one more waits in the queue, in its place,
    /// until one lands ([`LimiterCore::landed`](super::LimiterCore::landed)), within the same
    /// `MaxWait` as everything else; past it, it is refused
    /// ([`RejectReason::WaitTooLong`](crate::RejectReason::WaitTooLong), cause
    /// [`WaitCause::Concurrency`](crate::WaitCause::Concurrency)). Default `None`: no cap, only
    /// the rate. A request may ask for a lower cap of its own
    /// ([`MaxConcurrent`](crate::MaxConcurrent)). With `Enabled = false` it holds nothing back.
    ///
    /// ```
    /// use pacer_core::LimiterOptions;
    /// use std::num::NonZeroU32;
    ///
    /// let mut options = LimiterOptions::default();
    /// options.max_concurrent = NonZeroU32::new(4); // Stripe's 4 in flight, say
    /// options.validate().unwrap();
    /// ```
    pub max_concurrent: Option<NonZeroU32>,
}

/// The most of the server's window a throttle with no readable `Retry-After` pauses for: a server
/// whose window is a second gives room back within it, and a pause of the whole second was a
/// whole window (docs/limiter.md, "A throttle without `Retry-After`").
pub(crate) const BARE_PAUSE_PER_WINDOW: f64 = 0.25;

impl Default for LimiterOptions {
    fn default() -> Self {
        LimiterOptions {
            enabled: true,
            controller: ControllerKind::default(),
            initial_units_per_minute: None,
            min_units_per_minute: 60.0,
            max_units_per_minute: Self::DEFAULT_MAX_UNITS_PER_MINUTE,
            burst: Duration::from_secs(1),
            queue_limit: 1000,
            max_wait: Duration::from_secs(30),
            decrease_cooldown: Duration::from_secs(5),
            instance_count: 1,
            quota_window: Duration::from_secs(60),
            aimd: AimdOptions::default(),
            cubic: CubicOptions::default(),
            pacer: PacerControllerOptions::default(),
            max_retry_after: Duration::from_secs(300),
            pause_without_retry_after: Duration::from_secs(1),
            max_concurrent: None,
        }
    }
}

impl LimiterOptions {
    /// The default `MaxUnitsPerMinute`: a billion units a minute (about 16.7 million a second),
    /// a ceiling no client meets, so that the defaults never limit a server that does not
    /// throttle. It is finite so that the bucket's arithmetic stays finite.
    pub const DEFAULT_MAX_UNITS_PER_MINUTE: f64 = 1e9;

    /// The rate, for the whole budget, a new limiter starts at: `InitialUnitsPerMinute`, or
    /// `MaxUnitsPerMinute` when it is unset (no limit until the first throttle signal).
    #[must_use]
    pub fn rate_at_start(&self) -> f64 {
        self.initial_units_per_minute
            .unwrap_or(self.max_units_per_minute)
    }

    /// Checks every option, and the rules between them; the error lists each problem with the
    /// option's name, its value and the allowed range.
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        if let Some(initial) = self.initial_units_per_minute {
            c.positive("InitialUnitsPerMinute", initial);
        }
        c.positive("MinUnitsPerMinute", self.min_units_per_minute);
        c.positive("MaxUnitsPerMinute", self.max_units_per_minute);
        let (min, max, initial) = (
            self.min_units_per_minute,
            self.max_units_per_minute,
            self.rate_at_start(),
        );
        if min.is_finite() && max.is_finite() && min > 0.0 && max > 0.0 {
            c.relation(
                max >= min,
                "MaxUnitsPerMinute",
                max,
                format!("must be at least MinUnitsPerMinute ({min})"),
            );
            if max >= min && initial.is_finite() && initial > 0.0 {
                c.relation(
                    (min..=max).contains(&initial),
                    "InitialUnitsPerMinute",
                    initial,
                    format!(
                        "must be between MinUnitsPerMinute ({min}) and MaxUnitsPerMinute ({max})"
                    ),
                );
            }
        }
        c.nonzero_duration("Burst", self.burst);
        c.at_least("InstanceCount", u64::from(self.instance_count), 1);
        c.nonzero_duration("QuotaWindow", self.quota_window);
        c.nonzero_duration("MaxRetryAfter", self.max_retry_after);
        c.nested(self.aimd.validate().map_err(|e| e.prefixed("Aimd")));
        c.nested(self.cubic.validate().map_err(|e| e.prefixed("Cubic")));
        c.nested(self.pacer.validate().map_err(|e| e.prefixed("Pacer")));
        c.finish()
    }

    /// A new instance of the built-in controller these options select.
    #[must_use]
    pub fn build_controller(&self) -> Box<dyn Controller> {
        match self.controller {
            ControllerKind::Aimd => Box::new(Aimd::new(self.aimd).unwrap_or_default()),
            ControllerKind::Cubic => Box::new(Cubic::new(self.cubic).unwrap_or_default()),
            ControllerKind::Pacer => Box::new(PacerController::new(self.pacer).unwrap_or_default()),
        }
    }

    /// How long a throttle holds its endpoint back: the server's `Retry-After` (at most
    /// `MaxRetryAfter`), or `PauseWithoutRetryAfter` when it sent none and `bare` says to take
    /// it; `None` for no pause. A throttle with no `Retry-After` (or one that could not be
    /// read: `retry_after` is `None`, not zero) pauses at most
    /// [`BARE_PAUSE_PER_WINDOW`] of `window`, the window the server counts over as far as the
    /// controller knows.
    pub(crate) fn throttle_pause(
        &self,
        retry_after: Option<Duration>,
        bare: BarePause,
        window: Duration,
    ) -> Option<Duration> {
        let pause = match (retry_after, bare) {
            (Some(r), _) if !r.is_zero() => return Some(r.min(self.max_retry_after)),
            (_, BarePause::ServerSaidWhen) => return None,
            // A `Retry-After` of 0 on a throttle says only that the wait is under a second:
            // servers round it down (tower_governor does), and resending at once meets the same
            // refusal.
            (Some(_), BarePause::Take) => self.pause_without_retry_after,
            // With none at all, a server whose window is a second gives room back within it: a
            // pause of the whole second is a whole window.
            (None, BarePause::Take) => self
                .pause_without_retry_after
                .min(window.mul_f64(BARE_PAUSE_PER_WINDOW)),
        };
        Some(pause.min(self.max_retry_after)).filter(|p| !p.is_zero())
    }

    /// The share of one process of a whole-budget rate.
    pub(crate) fn share(&self, whole_budget: f64, instance_count: u32) -> f64 {
        whole_budget / f64::from(instance_count.max(1))
    }
}

impl fmt::Display for LimiterOptions {
    /// A one-line summary for logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}..{} (initial {}) units/min, burst {}, queue {}, max wait {}, {} instance(s)",
            self.controller,
            self.min_units_per_minute,
            self.max_units_per_minute,
            match self.initial_units_per_minute {
                Some(initial) => initial.to_string(),
                None => "unlimited until throttled".to_owned(),
            },
            format_duration(self.burst),
            self.queue_limit,
            format_duration(self.max_wait),
            self.instance_count
        )?;
        match self.max_concurrent {
            Some(cap) => write!(f, ", at most {cap} in flight"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        LimiterOptions::default().validate().unwrap();
    }

    #[test]
    fn every_rule_names_the_option_the_value_and_the_range() {
        type Change = fn(&mut LimiterOptions);
        let table: Vec<(Change, &str)> = vec![
            (
                |o| o.min_units_per_minute = 0.0,
                "MinUnitsPerMinute = 0: must be greater than 0",
            ),
            (
                |o| o.max_units_per_minute = 30.0,
                "MaxUnitsPerMinute = 30: must be at least MinUnitsPerMinute (60)",
            ),
            (
                |o| {
                    o.initial_units_per_minute = Some(10_000.0);
                    o.max_units_per_minute = 6000.0;
                },
                "InitialUnitsPerMinute = 10000: must be between MinUnitsPerMinute (60) and MaxUnitsPerMinute (6000)",
            ),
            (
                |o| o.initial_units_per_minute = Some(f64::NAN),
                "InitialUnitsPerMinute = NaN: must be a finite number",
            ),
            (
                |o| o.burst = Duration::ZERO,
                "Burst = 0s: must be greater than 0",
            ),
            (
                |o| o.instance_count = 0,
                "InstanceCount = 0: must be at least 1",
            ),
            (
                |o| o.quota_window = Duration::ZERO,
                "QuotaWindow = 0s: must be greater than 0",
            ),
            (
                |o| o.max_retry_after = Duration::ZERO,
                "MaxRetryAfter = 0s: must be greater than 0",
            ),
            (
                |o| o.aimd.decrease_factor = 0.0,
                "Aimd.DecreaseFactor = 0: must be greater than 0 and less than 1",
            ),
            (
                |o| o.cubic.scale_constant = -0.4,
                "Cubic.ScaleConstant = -0.4: must be greater than 0",
            ),
            (
                |o| o.pacer.hold_margin = 1.5,
                "Pacer.HoldMargin = 1.5: must be greater than 0 and less than 1",
            ),
            (
                |o| o.pacer.probe_after = Duration::ZERO,
                "Pacer.ProbeAfter = 0s: must be greater than 0",
            ),
        ];
        for (change, message) in table {
            let mut o = LimiterOptions::default();
            change(&mut o);
            assert_eq!(o.validate().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn all_errors_are_reported_not_only_the_first() {
        let o = LimiterOptions {
            min_units_per_minute: -1.0,
            instance_count: 0,
            aimd: AimdOptions {
                increase_step: 0.0,
                ..AimdOptions::default()
            },
            ..LimiterOptions::default()
        };
        let e = o.validate().unwrap_err();
        let options: Vec<_> = e.errors().iter().map(|e| e.option.as_str()).collect();
        assert_eq!(
            options,
            ["MinUnitsPerMinute", "InstanceCount", "Aimd.IncreaseStep"]
        );
    }

    #[test]
    fn controller_names_parse_without_regard_to_case() {
        assert_eq!("cubic".parse::<ControllerKind>(), Ok(ControllerKind::Cubic));
        assert_eq!(" AIMD ".parse::<ControllerKind>(), Ok(ControllerKind::Aimd));
        assert_eq!("Pacer".parse::<ControllerKind>(), Ok(ControllerKind::Pacer));
        assert_eq!(ControllerKind::Pacer.to_string(), "Pacer");
        assert_eq!(
            "vegas".parse::<ControllerKind>().unwrap_err().to_string(),
            "unknown controller \"vegas\": expected one of Aimd, Cubic, Pacer"
        );
    }
}

/// Whether a throttle without `Retry-After` pauses its endpoint for `PauseWithoutRetryAfter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarePause {
    /// It does: the server said nothing of when to come back.
    Take,
    /// It does not: the response's rate-limit fields said when its quota is back (a policy or
    /// a token budget with nothing left and a reset), and the server's own stop holds the
    /// endpoint until then.
    ServerSaidWhen,
}
