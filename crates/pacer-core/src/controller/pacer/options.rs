//! The options of Pacer's controller (`Pacer.*` in configuration), their defaults and their
//! checks.

use crate::validation::{Checker, InvalidOptions, format_duration};
use std::time::Duration;

/// Options of the [`PacerController`](super::PacerController) (`Pacer.*` in configuration).
///
/// Rates here are fractions of the limit estimate, so nothing depends on the size of the quota.
/// Durations for probing are for one instance: with `InstanceCount` = n, each process waits n
/// times as long before it probes (each probe costs every instance a 429 or so, so the whole
/// budget probes at one pace).
///
/// The defaults suit a server that counts its quota per minute (`QuotaWindow` = 1 min). The
/// controller's fixed timings (a second between two increases, a probe's step doubling every
/// 15 s, a Retry-After of 5 s or more counting as long, a fallen limit remembered 10 minutes)
/// do not follow `QuotaWindow`, and neither should these durations: they are about round trips
/// and `Retry-After` seconds, which do not shrink with the window. In the simulator with a 10 s
/// window (`pacer-sim --window 10`) they take more of the quota with far fewer 429s as they are
/// than scaled to the window (docs/research/controllers-experiments.md has the figures). Windows
/// longer than a minute are not measured.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PacerControllerOptions {
    /// `Pacer.HoldMargin`: the rate holds this fraction under the limit estimate. Default 0.015;
    /// strictly between 0 and 1.
    pub hold_margin: f64,
    /// `Pacer.CutMargin`: a throttle near the estimate sets the rate this fraction under the new
    /// estimate. Default 0.05; strictly between 0 and 1.
    pub cut_margin: f64,
    /// `Pacer.DecreaseFactor`: a throttle far above the estimate (a climb that ran ahead of the
    /// server's window) multiplies the rate by this, or cuts to the estimate less `CutMargin` if
    /// that is lower. Default 0.7 (AIMD's); strictly between 0 and 1.
    pub decrease_factor: f64,
    /// `Pacer.StartGrowth`: while no limit is known, the rate grows by this fraction each second
    /// that requests wait … Default 0.25; greater than 0.
    pub start_growth: f64,
    /// `Pacer.Lead`: … but never to more than this many times the units per minute the server
    /// accepted over the last `QuotaWindow` (in the first window, the units since the start,
    /// scaled to a whole window).
    /// Default 1.25; greater than 1.
    pub lead: f64,
    /// `Pacer.ProbeAfter`: how long the rate holds without a throttle before it probes above the
    /// estimate, for one instance. Default 2 min.
    pub probe_after: Duration,
    /// `Pacer.MaxProbeAfter`: each probe that finds no more room doubles the hold before the
    /// next, up to this, for one instance. Default 15 min.
    pub max_probe_after: Duration,
    /// `Pacer.RecoveryProbeAfter`: after the limit fell (the estimate dropped by a fifth or more,
    /// or by 30 % in steps from a level held a minute), how long the rate holds before it probes
    /// back toward the limit it had, for one instance (`√n` times this for n instances).
    /// Default 40 s.
    pub recovery_probe_after: Duration,
    /// `Pacer.RecoveryTime`: how long a climb back takes: to the hold after a cut (in a line),
    /// and to the remembered limit when probing after a fall. Default 30 s.
    pub recovery_time: Duration,
    /// How many times faster than the real clock the limiter's clock runs (1, and not a
    /// configuration key: see [`with_time_scale`](Self::with_time_scale)).
    pub(crate) time_scale: f64,
}

impl Default for PacerControllerOptions {
    fn default() -> Self {
        PacerControllerOptions {
            hold_margin: 0.015,
            cut_margin: 0.05,
            decrease_factor: 0.7,
            start_growth: 0.25,
            lead: 1.25,
            probe_after: Duration::from_secs(120),
            max_probe_after: Duration::from_secs(900),
            recovery_probe_after: Duration::from_secs(40),
            recovery_time: Duration::from_secs(30),
            time_scale: 1.0,
        }
    }
}

impl PacerControllerOptions {
    /// Checks every option; the error names each one that is out of range (as `HoldMargin`; the
    /// limiter's options prefix it with `Pacer.`).
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        c.fraction("HoldMargin", self.hold_margin);
        c.fraction("CutMargin", self.cut_margin);
        c.fraction("DecreaseFactor", self.decrease_factor);
        c.positive("StartGrowth", self.start_growth);
        if self.lead.is_finite() {
            c.relation(
                self.lead > 1.0,
                "Lead",
                self.lead,
                "must be greater than 1".into(),
            );
        } else {
            c.positive("Lead", self.lead);
        }
        c.nonzero_duration("ProbeAfter", self.probe_after);
        c.relation(
            self.max_probe_after >= self.probe_after,
            "MaxProbeAfter",
            format_duration(self.max_probe_after),
            format!(
                "must be at least ProbeAfter ({})",
                format_duration(self.probe_after)
            ),
        );
        c.nonzero_duration("RecoveryProbeAfter", self.recovery_probe_after);
        c.nonzero_duration("RecoveryTime", self.recovery_time);
        c.positive("TimeScale", self.time_scale);
        c.finish()
    }

    /// The options for a clock that runs `k` times faster than the real one: the controller's
    /// fixed timings (a second between two increases, a probe's step doubling every 15 s, a
    /// `Retry-After` of 5 s or more counting as long, a second throttle within 10 s, a fallen
    /// limit remembered 10 minutes) are divided by `k`. Only a simulator needs it
    /// (`pacer-sim live --speed K` plays a story K times faster); scale the durations above and
    /// `StartGrowth` with it too. A real server with a short quota window does not: those
    /// timings are about round trips and `Retry-After` seconds, which do not shrink with the
    /// window. `k` must be finite and above 0 ([`validate`](Self::validate) says so).
    #[must_use]
    pub fn with_time_scale(mut self, k: f64) -> Self {
        self.time_scale = k;
        self
    }

    /// How many times faster than the real clock the controller's fixed timings run (1 unless
    /// set with [`with_time_scale`](Self::with_time_scale)).
    #[must_use]
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }
}
