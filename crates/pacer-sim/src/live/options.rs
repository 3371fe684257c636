//! What a live run does: the target, the demand, the modes.

use crate::modes::LimiterMode;
use crate::{ConfiguredLimiter, SimError, Speed, sim_limiter_defaults};
use pacer_core::{ControllerKind, LimiterOptions};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A mode of `live`: real reqwest clients, with Pacer's middleware or without.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveMode {
    /// Plain reqwest and a retry loop that sleeps each `Retry-After`, up to `MaxAttempts`
    /// attempts: `compare`'s `none`.
    None,
    /// The middleware with `Min = Max = Initial`: `compare`'s `fixed`.
    Fixed,
    /// The middleware with the AIMD controller.
    Aimd,
    /// The middleware with the CUBIC controller.
    Cubic,
    /// The middleware with Pacer's own controller.
    Pacer,
    /// The middleware's instances share one learned rate through a fleet store: Redis with
    /// `--redis URL` (so that processes started apart form one fleet), else a store in this
    /// process's memory shared by its instances.
    Fleet,
    /// The middleware with the library's defaults, [`LimiterOptions::default`]: `compare`'s
    /// `default` (no limit until the first throttle; only the instance count is the run's).
    Default,
    /// The middleware with Pacer's own controller and the profile for buckets: `compare`'s
    /// `pacer-buckets`.
    PacerBuckets,
    /// The middleware with a limiter of a configuration file (`--config FILE --limiter NAME`),
    /// every setting of it; its row is named after the limiter.
    Configured(Box<ConfiguredLimiter>),
}

/// The longest run, minutes: a day, as `compare`'s `--minutes`.
const MAX_MINUTES: u64 = 24 * 60;

/// The modes `live` knows, in table order.
pub const LIVE_MODE_NAMES: [&str; 8] = [
    "none",
    "fixed",
    "aimd",
    "cubic",
    "pacer",
    "fleet",
    "default",
    "pacer-buckets",
];

impl FromStr for LiveMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(LiveMode::None),
            "fixed" => Ok(LiveMode::Fixed),
            "aimd" => Ok(LiveMode::Aimd),
            "cubic" => Ok(LiveMode::Cubic),
            "pacer" => Ok(LiveMode::Pacer),
            "fleet" => Ok(LiveMode::Fleet),
            "default" => Ok(LiveMode::Default),
            "pacer-buckets" => Ok(LiveMode::PacerBuckets),
            "headers" => Err(format!(
                "mode \"headers\" is not available in live: expected one of {}. The middleware \
                 follows a server's rate-limit fields in every limiter mode, so run `pacer` \
                 against a target that sends them (`pacer-sim serve --headers draft11`)",
                LIVE_MODE_NAMES.join(", ")
            )),
            _ => Err(format!(
                "mode {s:?} is not available in live: expected one of {}",
                LIVE_MODE_NAMES.join(", ")
            )),
        }
    }
}

impl fmt::Display for LiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl LiveMode {
    /// The name in the output, the same as `compare`'s.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            LiveMode::None => "none",
            LiveMode::Fixed => "fixed",
            LiveMode::Aimd => "aimd",
            LiveMode::Cubic => "cubic",
            LiveMode::Pacer => "pacer",
            LiveMode::Fleet => "fleet",
            LiveMode::Default => "default",
            LiveMode::PacerBuckets => "pacer-buckets",
            LiveMode::Configured(c) => &c.name,
        }
    }

    /// The limiter options of this mode in story time, from the run's, exactly as `compare`'s
    /// mode of the same name derives them; `None` for `none`.
    #[must_use]
    pub fn limiter_options(&self, run: &LimiterOptions) -> Option<LimiterOptions> {
        let mode = match self {
            LiveMode::None => return None,
            LiveMode::Fixed => LimiterMode::fixed(),
            LiveMode::Aimd => LimiterMode::builtin(ControllerKind::Aimd),
            LiveMode::Cubic => LimiterMode::builtin(ControllerKind::Cubic),
            LiveMode::Pacer | LiveMode::Fleet => LimiterMode::builtin(ControllerKind::Pacer),
            LiveMode::Default => LimiterMode::library_defaults(),
            LiveMode::PacerBuckets => LimiterMode::pacer_buckets(),
            LiveMode::Configured(c) => {
                LimiterMode::with_options(c.name.clone(), c.settings.options.clone())
            }
        };
        Some(mode.options_for(run))
    }
}

/// The settings of `live`. Times, rates and quotas are in story time; `speed` turns them into
/// real ones.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// The URL every request goes to (`http://` only: the simulator is built without TLS).
    pub target: String,
    /// Client instances at the start, each with its own reqwest client and middleware.
    pub instances: u32,
    /// Demand per instance, units per story minute.
    pub demand: f64,
    /// Length of each mode's run in story time, whole minutes.
    pub duration: Duration,
    /// The random seed of the arrivals.
    pub seed: u64,
    /// What each request costs, in the `x-cost` header and the limiter's units.
    pub costs: crate::model::Costs,
    /// The speed; `None`: the target's own if it is a `pacer-sim serve`, else 1.
    pub speed: Option<Speed>,
    /// The story; `None`: the target's own if it is a `pacer-sim serve`, else `free-run`.
    pub story: Option<String>,
    /// The quota to measure the share against when the target does not say it (`/stats`).
    pub quota: Option<u64>,
    /// The modes, run one after the other.
    pub modes: Vec<LiveMode>,
    /// The limiter options every limiter mode starts from, in story time.
    pub limiter: LimiterOptions,
    /// The Redis the `fleet` mode's instances share their fleet through (`--redis`); `None`:
    /// a store in this process's memory.
    pub redis: Option<String>,
}

impl LiveOptions {
    /// A live run of `aimd` against `target` with `compare`'s defaults: 2 instances of 2,000
    /// units per minute for 15 minutes, seed 42, the simulator's limiter defaults.
    #[must_use]
    pub fn new(target: impl Into<String>) -> Self {
        LiveOptions {
            target: target.into(),
            instances: 2,
            demand: 2000.0,
            duration: Duration::from_secs(15 * 60),
            seed: 42,
            costs: crate::model::Costs::SharePoint,
            speed: None,
            story: None,
            quota: None,
            modes: vec![LiveMode::Aimd],
            limiter: sim_limiter_defaults(),
            redis: None,
        }
    }

    /// The run's length in whole minutes; an error unless it is one.
    pub fn minutes(&self) -> Result<u32, SimError> {
        let secs = self.duration.as_secs();
        if secs == 0 && self.duration.subsec_nanos() == 0 {
            return Err(SimError::Options(format!(
                "--duration 0: must be from 1 to {MAX_MINUTES} minutes (a day): a run of no time \
                 measures nothing"
            )));
        }
        if self.duration.subsec_nanos() != 0 || !secs.is_multiple_of(60) {
            return Err(SimError::Options(format!(
                "--duration {}s: must be a whole number of minutes, {} s is not (the table's \
                 throughput is per minute): write e.g. 2m or 120s",
                self.duration.as_secs_f64(),
                self.duration.as_secs_f64()
            )));
        }
        let minutes = secs / 60;
        if minutes > MAX_MINUTES {
            return Err(SimError::Options(format!(
                "--duration {minutes}m: must be from 1 to {MAX_MINUTES} minutes (a day)"
            )));
        }
        Ok(u32::try_from(minutes).expect("at most a day"))
    }
}

/// Parses a story duration: `15m`, `900s`, `900` (seconds), `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const RULE: &str =
        "a whole number with one unit, s, m or h (15m, 900s, 1h), or seconds alone (900)";
    let t = s.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("duration {s:?}: expected {RULE}"))?;
    let unit_secs = match unit.trim() {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        other if other.contains(|c: char| c.is_ascii_digit()) => {
            return Err(format!(
                "duration {s:?}: one unit only, not a sum of several: expected {RULE}"
            ));
        }
        _ => {
            return Err(format!(
                "duration {s:?}: unknown unit {unit:?}: expected {RULE}"
            ));
        }
    };
    Ok(Duration::from_secs(n.saturating_mul(unit_secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_refuse_the_ones_live_has_not() {
        assert_eq!("AIMD".parse(), Ok(LiveMode::Aimd));
        assert_eq!("none".parse(), Ok(LiveMode::None));
        assert_eq!("default".parse(), Ok(LiveMode::Default));
        assert_eq!("Pacer-Buckets".parse(), Ok(LiveMode::PacerBuckets));
        let e = "turbo".parse::<LiveMode>().unwrap_err();
        assert!(
            e.contains(
                "not available in live: expected one of none, fixed, aimd, cubic, pacer, fleet, \
                 default, pacer-buckets"
            ),
            "{e}"
        );
        let e = "headers".parse::<LiveMode>().unwrap_err();
        assert!(
            e.contains("run `pacer` against a target that sends them"),
            "{e}"
        );
    }

    #[test]
    fn modes_derive_their_options_as_compare_s_do() {
        let run = sim_limiter_defaults();
        assert_eq!(LiveMode::None.limiter_options(&run), None);
        let fixed = LiveMode::Fixed.limiter_options(&run).unwrap();
        assert_eq!(
            Some(fixed.max_units_per_minute),
            fixed.initial_units_per_minute
        );
        let cubic = LiveMode::Cubic.limiter_options(&run).unwrap();
        assert_eq!(cubic.controller, ControllerKind::Cubic);
        assert_eq!(
            LiveMode::PacerBuckets.limiter_options(&run),
            Some(LimiterMode::pacer_buckets().options_for(&run))
        );
    }

    #[test]
    fn durations_parse_and_must_be_whole_minutes() {
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("900"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("15 parsecs").is_err());
        assert!(parse_duration("m").is_err());
        let mut o = LiveOptions::new("http://127.0.0.1:8080");
        assert_eq!(o.minutes().unwrap(), 15);
        o.duration = Duration::from_secs(90);
        assert!(
            o.minutes()
                .unwrap_err()
                .to_string()
                .contains("whole number of minutes")
        );
    }
}
