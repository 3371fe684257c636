//! The command line of `live`.

use super::{LiveMode, LiveOptions, LiveSession, ProgressStyle, parse_duration};
use crate::arg_values::{demand, one_story, whole};
use crate::report::{Format, render};
use crate::{ConfiguredLimiter, SimError, Speed};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// The options of `pacer-sim live`.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// The URL to send the requests to (http:// only). A `pacer-sim serve` there is recognised
    /// by its GET /stats: its story, speed and quota are then the run's, and it is reset before
    /// each mode.
    #[arg(long, value_name = "URL")]
    pub target: String,
    /// Client instances, each a reqwest client with its own middleware (InstanceCount = N).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<u32>(1, 64))]
    pub instances: u32,
    /// Demand per instance, units per story minute.
    #[arg(long, default_value_t = 2000.0, allow_negative_numbers = true, value_parser = demand)]
    pub demand: f64,
    /// Story time of each mode's run, whole minutes: 15m, 900s or 900. Real time is this
    /// divided by the speed.
    #[arg(long, default_value = "15m", value_parser = parse_duration)]
    pub duration: Duration,
    /// Story time runs this many times faster than the real clock. Default: the target's own if
    /// it is a pacer-sim serve, else 1.
    #[arg(long, allow_negative_numbers = true)]
    pub speed: Option<Speed>,
    /// The story whose demand to generate (and whose quota to measure the share against).
    /// Default: the target's own if it is a pacer-sim serve, else free-run.
    #[arg(long, value_parser = one_story)]
    pub story: Option<String>,
    /// The target's quota, units per story minute, when it does not say it (GET /stats): the
    /// share is measured against it; without it, the share is n/a.
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub quota: Option<u64>,
    /// A mode to run (repeat for more; each runs for the whole duration, one after the other):
    /// none, fixed, aimd, cubic, pacer, fleet (the instances share one learned rate; through
    /// `--redis`, with every other process that does), default (the library's defaults).
    /// Default: aimd.
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<LiveMode>,
    /// The Redis (`redis://`, `rediss://`) the `fleet` mode shares its fleet through, so that
    /// `live` processes started apart (one `--instances 1` each) form one fleet. Without it the
    /// fleet is this process's instances.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// The random seed of the arrivals.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = whole::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// What each request costs: sharepoint (1, 2 or 5 units) or one (every request 1 unit, for
    /// a server that counts requests, as nginx's limit_req and express-rate-limit do).
    #[arg(long, value_name = "COSTS", default_value = "sharepoint")]
    pub costs: crate::model::Costs,
    /// Output format: table, csv or json.
    #[arg(long, default_value = "table")]
    pub format: Format,
    /// Also draw each mode's rate and accepted units against the quota into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// A configuration file (appsettings.json or TOML) with a limiter to run as one more mode;
    /// `PACER__…` environment variables override it, as the library reads them.
    #[arg(long, value_name = "FILE", requires = "limiter")]
    pub config: Option<PathBuf>,
    /// The limiter of `--config` to run (its row is named after it; `--instances` replaces its
    /// `InstanceCount`).
    #[arg(long, value_name = "NAME", requires = "config")]
    pub limiter: Option<String>,
    /// Show nothing on standard error while the modes run: no progress, no line on the session
    /// or on each mode's end (a mode whose requests ended in errors still says so).
    #[arg(long, short)]
    pub quiet: bool,
}

impl LiveArgs {
    /// The run's settings.
    pub fn options(&self) -> Result<LiveOptions, SimError> {
        let mut modes: Vec<LiveMode> = Vec::new();
        for m in &self.modes {
            if !modes.contains(m) {
                modes.push(m.clone());
            }
        }
        let configured = match (&self.config, &self.limiter) {
            (Some(file), Some(name)) => Some(LiveMode::Configured(Box::new(
                ConfiguredLimiter::load(file, name)?,
            ))),
            _ => None,
        };
        if modes.is_empty() && configured.is_none() {
            modes.push(LiveMode::Aimd);
        }
        modes.extend(configured);
        if self.redis.is_some() && !modes.contains(&LiveMode::Fleet) {
            return Err(SimError::Options(
                "--redis: only the fleet mode uses it (add --mode fleet, or leave --redis out)"
                    .to_owned(),
            ));
        }
        Ok(LiveOptions {
            instances: self.instances,
            demand: self.demand,
            duration: self.duration,
            seed: self.seed,
            costs: self.costs,
            speed: self.speed,
            story: self.story.clone(),
            quota: self.quota,
            modes,
            redis: self.redis.clone(),
            ..LiveOptions::new(self.target.clone())
        })
    }
}

/// Runs every mode against the target and returns the table (or CSV, JSON) of `compare`; says
/// what it does, each mode's progress (rewritten in place on a terminal, a plain line every ten
/// story seconds elsewhere), and each mode's errors and the server's own count, on standard
/// error; with `--quiet`, only a mode's errors.
pub fn execute(args: &LiveArgs) -> Result<String, SimError> {
    let options = args.options()?;
    if let Some(path) = &args.plot {
        crate::plot::check_writable(path)?;
    }
    let runtime = crate::runtime::runtime()?;
    let run = runtime.block_on(async {
        let style = ProgressStyle::choose(args.quiet, std::io::stderr().is_terminal());
        let mut session = LiveSession::connect(&options).await?.with_progress(style);
        if !args.quiet {
            eprintln!("{}", session.describe());
        }
        for mode in &options.modes {
            let run = session.run(mode.clone()).await?;
            if args.quiet && run.errors == 0 {
                continue;
            }
            let server = run.server.as_ref().map_or(String::new(), |s| {
                format!(
                    ", the server accepted {} units and answered {} 429s",
                    s.accepted_units, s.throttled
                )
            });
            let first = run
                .first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (the first: {e})"));
            eprintln!(
                "live: {mode} done in {:.1} s, {} errors{first}{server}",
                run.wall.as_secs_f64(),
                run.errors
            );
        }
        Ok::<_, SimError>(session.finish())
    })?;
    let output = render(&run.comparison, args.format);
    let output = match &args.plot {
        Some(path) => crate::plot::write_after_run(&run.comparison, path, output)?,
        None => output,
    };
    // A mode none of whose requests got an answer measured nothing of the target: say so, and
    // fail, after the table.
    let failed: Vec<String> = run
        .runs
        .iter()
        .zip(&run.comparison.rows)
        .filter(|(r, row)| r.errors > 0 && row.metrics.succeeded == 0)
        .map(|(r, _)| {
            let first = r.first_error.as_deref().unwrap_or("no answer");
            format!("{}: every request failed ({first})", r.mode)
        })
        .collect();
    if failed.is_empty() {
        Ok(output)
    } else {
        Err(SimError::FailedRun {
            output,
            message: failed.join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn live(args: &[&str]) -> Result<LiveArgs, clap::Error> {
        let cli = Cli::try_parse_from(
            ["pacer-sim", "live"]
                .into_iter()
                .chain(args.iter().copied()),
        )?;
        match cli.command {
            Some(Command::Live(a)) => Ok(a),
            other => panic!("live, not {other:?}"),
        }
    }

    #[test]
    fn live_needs_a_target_and_defaults_to_aimd_for_15_minutes() {
        assert!(live(&[]).is_err());
        let o = live(&["--target", "http://127.0.0.1:8080"])
            .unwrap()
            .options()
            .unwrap();
        assert_eq!(o, LiveOptions::new("http://127.0.0.1:8080"));
        assert_eq!(o.modes, [LiveMode::Aimd]);
        assert_eq!(o.duration, Duration::from_secs(900));
        assert_eq!((o.speed, o.story.as_deref(), o.quota), (None, None, None));
        let a = live(&["--target", "u"]).unwrap();
        assert!(!a.quiet, "progress is shown unless asked not to");
        assert!(live(&["--target", "u", "--quiet"]).unwrap().quiet);
        assert!(live(&["--target", "u", "-q"]).unwrap().quiet);
    }

    #[test]
    fn live_takes_compare_s_flags_and_its_own() {
        let a = live(&[
            "--target",
            "http://h:1/x",
            "--instances",
            "3",
            "--demand",
            "1500",
            "--duration",
            "8m",
            "--speed",
            "30x",
            "--story",
            "scale-out",
            "--quota",
            "6000",
            "--mode",
            "cubic",
            "--mode",
            "none",
            "--mode",
            "cubic",
            "--seed",
            "7",
            "--format",
            "json",
        ])
        .unwrap();
        assert_eq!(a.format, Format::Json);
        let o = a.options().unwrap();
        assert_eq!((o.instances, o.demand, o.seed), (3, 1500.0, 7));
        assert_eq!(o.duration, Duration::from_secs(480));
        assert_eq!(o.speed, Some(Speed::new(30.0).unwrap()));
        assert_eq!(
            (o.story.as_deref(), o.quota),
            (Some("scale-out"), Some(6000))
        );
        assert_eq!(
            o.modes,
            [LiveMode::Cubic, LiveMode::None],
            "in order, each once"
        );
    }

    #[test]
    fn bad_live_flags_are_refused() {
        let e = live(&["--target", "u", "--mode", "headers"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not available in live"), "{e}");
        let e = live(&["--target", "u", "--duration", "soon"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a whole number with one unit"), "{e}");
        assert!(live(&["--target", "u", "--config", "pacer.toml"]).is_err());
        let a = live(&[
            "--target",
            "u",
            "--config",
            "pacer.toml",
            "--limiter",
            "orders",
        ])
        .unwrap();
        let e = a.options().unwrap_err().to_string();
        assert!(e.contains("pacer.toml"), "{e}");
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/pacer.toml");
        let a = live(&[
            "--target",
            "u",
            "--config",
            sample,
            "--limiter",
            "orders-api",
        ])
        .unwrap();
        let modes = a.options().unwrap().modes;
        assert_eq!(modes.len(), 1);
        assert_eq!(modes[0].name(), "orders-api");
        let a = live(&["--target", "u", "--duration", "90s"]).unwrap();
        let e = execute(&a).unwrap_err().to_string();
        assert!(e.contains("whole number of minutes"), "{e}");
    }

    #[test]
    fn live_messages_name_live_s_own_flags() {
        let a = live(&["--target", "u", "--duration", "100000m"]).unwrap();
        let e = a.options().unwrap().minutes().unwrap_err().to_string();
        assert!(
            e.contains("--duration 100000m: must be from 1 to 1440 minutes"),
            "{e}"
        );
        assert!(!e.contains("--minutes"), "live has no --minutes: {e}");
        let e = execute(&a).unwrap_err().to_string();
        assert!(e.contains("--duration 100000m"), "{e}");
        let e = live(&["--target", "u", "--instances", "-1"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'--instances <INSTANCES>': must be from 1 to 64"),
            "{e}"
        );
        let e = live(&["--target", "u", "--speed", "-1"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be from 0.001 to 1000"), "{e}");
        let e = live(&["--target", "u", "--quota", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be at least 1"), "{e}");
        let e = live(&["--target", "u", "--story", "all"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plays one story at a time, not all: expected one of"),
            "{e}"
        );
    }
}
