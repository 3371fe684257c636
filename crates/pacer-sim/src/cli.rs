//! The command line: `pacer-sim [compare] [--story NAME|all] [--mode NAME]… [--format …] …`.
//!
//! `compare` is the default command. `serve` puts the model API behind a real HTTP server
//! ([`crate::serve`]), and `live` drives real reqwest clients with the middleware against it or
//! any URL ([`crate::live`]).

use crate::arg_values::{demand, seconds, share, whole};
use crate::live::LiveArgs;
use crate::llm::{LLM_MODE_NAMES, LLM_STORY, LlmMode, LlmOptions, compare_llm, render_llm};
use crate::model::{Costs, DEFAULT_STORY, ServerShape, Story};
use crate::report::{Format, render};
use crate::serve::ServeArgs;
use crate::{ConfiguredLimiter, Mode, SimError, SimOptions, compare, default_modes, mode_by_name};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// `pacer-sim`: compare rate-limiting modes against a model API with a hidden quota.
#[derive(Debug, Parser)]
#[command(
    name = "pacer-sim",
    version,
    about = "Runs Pacer's real limiter against a model API with a hidden quota, on virtual time, \
             and compares modes",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; `compare` when left out.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The options of `compare`, when no command is given.
    #[command(flatten)]
    pub compare: CompareArgs,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs each mode on the same seed and the same requests, and prints the comparison.
    Compare(CompareArgs),
    /// Serves the model API over real HTTP on the real clock (optionally faster), until Ctrl-C.
    Serve(ServeArgs),
    /// Drives real reqwest clients with Pacer's middleware against a URL, and prints the same
    /// columns as compare.
    Live(LiveArgs),
}

/// The options of `compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The story: free-run, noisy-neighbour, quota-cut, scale-out, top-of-hour,
    /// long-retry-after, or all (those six); or cold-start, autoscale (the instances double at
    /// minutes 3 and 6 and halve at 9 and 12, with a static InstanceCount), store-outage (a
    /// fleet's store is down from minute 5 to 7), restart (every instance restarts at minute 5,
    /// a deploy); or llm-batch (a batch of chat requests against a model API's requests and
    /// tokens a minute, with its own modes naive, requests and budgets; docs/llm.md).
    #[arg(long, default_value = DEFAULT_STORY, value_parser = parse_story)]
    pub story: String,
    /// A mode to run (repeat for more): none, fixed, aimd, cubic, pacer, headers; or, named
    /// only, default, aimd-600, pacer-buckets (the Pacer controller with the profile for
    /// buckets), fleet (the instances share one learned rate through a store),
    /// fleet-default (the same with the library's defaults), graphql (the API's numbers in a GraphQL cost body, as Shopify's GraphQL API sends them).
    /// Default: the first six.
    #[arg(long = "mode", value_name = "MODE", value_parser = parse_mode)]
    pub modes: Vec<String>,
    /// Client instances.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<u32>(1, 1000))]
    pub instances: u32,
    /// The hidden quota, units per minute.
    #[arg(long, default_value_t = 3000, allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub quota: u64,
    /// Demand per instance, units per minute.
    #[arg(long, default_value_t = 2000.0, allow_negative_numbers = true, value_parser = demand)]
    pub demand: f64,
    /// Length of the run, minutes.
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = whole::<u32>(1, 24 * 60))]
    pub minutes: u32,
    /// The window of the hidden quota, whole seconds from 1 to 60: the API accepts the quota's
    /// pace in any sliding window this long; the limiters' QuotaWindow is set to it, and their
    /// Burst to at most a tenth of it.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        allow_negative_numbers = true,
        value_parser = whole::<u64>(1, 60)
    )]
    pub window: u64,
    /// The shape of the hidden quota: sliding (a sliding window), fixed (a window that resets
    /// on its boundary), token-bucket, leaky-bucket (Shopify's: no Retry-After, its call-limit
    /// header), gcra, haproxy (HAProxy's stick-table rate: refused requests count too, a bare
    /// 429, no fields), governor (tower_governor's GCRA: a Retry-After rounded down, 0 under
    /// a second, no fields) or nginx (nginx's limit_req as a site leaves it: a request over the
    /// pace waits in the server, over the burst a bare 503); each holds the window's quota at
    /// the same pace.
    #[arg(long, value_name = "SHAPE", default_value = "sliding")]
    pub server: ServerShape,
    /// What each request costs: sharepoint (1, 2 or 5 units, SharePoint's resource units) or
    /// one (every request 1 unit, as an API that counts requests). The demand stays in units.
    #[arg(long, value_name = "COSTS", default_value = "sharepoint")]
    pub costs: Costs,
    /// The random seed of the arrivals and latencies.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = whole::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// The share of each round trip spent on the way to the server, from 0 to 1: the server
    /// decides a request that long after it is sent (round trips vary from 50 to 200 ms, so an
    /// even pace reaches it uneven). 0: it decides at the send.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, allow_negative_numbers = true, value_parser = share)]
    pub forward: f64,
    /// How far into its current window a fixed window (`--server fixed`) was when the run
    /// began, in seconds, less than `--window`: its first boundary comes `window − phase` in.
    /// 0: its windows start with the run.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, allow_negative_numbers = true, value_parser = seconds)]
    pub phase: f64,
    /// The server answers every 429 without Retry-After (a bare 429, as nginx's limit_req and
    /// HAProxy's counter do), whatever the story and the shape would say.
    #[arg(long)]
    pub no_retry_after: bool,
    /// In the restart story, each fresh process starts from what the one it replaces learnt
    /// (as a client that saves `PacerMiddleware::remember` and recalls it), instead of from
    /// nothing.
    #[arg(long)]
    pub restore: bool,
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
    /// The limiter of `--config` to run as one more mode (its row is named after it). The run's
    /// `--instances` replaces its `InstanceCount`.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub limiter: Option<String>,
}

fn parse_story(s: &str) -> Result<String, String> {
    if s == "all" || s == LLM_STORY || Story::by_name(s).is_some() {
        Ok(s.to_owned())
    } else {
        Err(SimError::UnknownStory(s.to_owned()).to_string())
    }
}

fn parse_mode(s: &str) -> Result<String, String> {
    if LlmMode::by_name(s).is_some() {
        return Ok(s.to_owned());
    }
    mode_by_name(s)
        .map(|m| m.name().to_owned())
        .map_err(|e| e.to_string())
}

impl CompareArgs {
    /// The run's settings.
    #[must_use]
    pub fn options(&self) -> SimOptions {
        SimOptions {
            instances: self.instances,
            quota: self.quota,
            demand: self.demand,
            minutes: self.minutes,
            seed: self.seed,
            server: self.server,
            costs: self.costs,
            forward: self.forward,
            phase: Duration::from_secs_f64(self.phase),
            sends_retry_after: !self.no_retry_after,
            restore: self.restore,
            ..SimOptions::default()
        }
        .with_window(Duration::from_secs(self.window))
    }

    /// The stories to run.
    pub fn stories(&self) -> Result<Vec<Story>, SimError> {
        if self.story == "all" {
            return Ok(Story::all());
        }
        Story::by_name(&self.story)
            .map(|s| vec![s])
            .ok_or_else(|| SimError::UnknownStory(self.story.clone()))
    }

    /// The modes to run, in the order given (each once), or every available mode.
    pub fn modes(&self) -> Result<Vec<Box<dyn Mode>>, SimError> {
        let mut modes = if self.modes.is_empty() {
            default_modes()
        } else {
            let mut names: Vec<&str> = Vec::new();
            for name in &self.modes {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
            names
                .into_iter()
                .map(|n| {
                    if LlmMode::by_name(n).is_some() {
                        return Err(SimError::Options(format!(
                            "mode {n:?} runs only in --story {LLM_STORY}"
                        )));
                    }
                    mode_by_name(n).map_err(SimError::from)
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        if let (Some(file), Some(limiter)) = (&self.config, &self.limiter) {
            let configured = ConfiguredLimiter::load(file, limiter)?;
            // Named as the file names it (`a` for `--limiter _A_`).
            modes.push(Box::new(
                configured.compare_mode(self.options().duration())?,
            ));
        }
        Ok(modes)
    }
}

impl CompareArgs {
    /// The `llm-batch` story's settings from the run's: its instances, minutes and seed.
    #[must_use]
    pub fn llm_options(&self) -> LlmOptions {
        LlmOptions {
            instances: self.instances,
            minutes: self.minutes,
            seed: self.seed,
            ..LlmOptions::default()
        }
    }

    /// Runs the `llm-batch` story with its modes (those asked for, or all three).
    fn llm_batch(&self) -> Result<String, SimError> {
        if self.plot.is_some() || self.config.is_some() {
            return Err(SimError::Options(format!(
                "--story {LLM_STORY} draws no plot and runs no --config limiter"
            )));
        }
        let names: Vec<&str> = if self.modes.is_empty() {
            LLM_MODE_NAMES.to_vec()
        } else {
            self.modes.iter().map(String::as_str).collect()
        };
        let mut modes = Vec::new();
        for name in names {
            let mode = LlmMode::by_name(name).ok_or_else(|| {
                SimError::Options(format!(
                    "mode {name:?} does not run in --story {LLM_STORY}: expected {}",
                    LLM_MODE_NAMES.join(", ")
                ))
            })?;
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
        let options = self.llm_options();
        let rows = compare_llm(&options, &modes)?;
        Ok(render_llm(&options, &rows, self.format))
    }
}

/// Runs the command and returns what to print. Writes the plot file when asked.
pub fn execute(cli: &Cli) -> Result<String, SimError> {
    let args = match &cli.command {
        Some(Command::Compare(args)) => args,
        Some(Command::Serve(args)) => return crate::serve::execute(args),
        Some(Command::Live(args)) => return crate::live::execute(args),
        None => &cli.compare,
    };
    if args.story == LLM_STORY {
        return args.llm_batch();
    }
    if let Some(path) = &args.plot {
        crate::plot::check_writable(path)?;
    }
    let comparison = compare(&args.options(), &args.stories()?, &args.modes()?)?;
    let output = render(&comparison, args.format);
    match &args.plot {
        Some(path) => crate::plot::write_after_run(&comparison, path, output),
        None => Ok(output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pacer-sim").chain(args.iter().copied()))
    }

    #[test]
    fn no_arguments_is_the_dotnet_limiter_s_comparison() {
        let cli = parse(&[]).unwrap();
        assert!(cli.command.is_none());
        let a = &cli.compare;
        assert_eq!(a.story, "noisy-neighbour");
        assert_eq!(a.options(), SimOptions::default());
        assert_eq!(a.server, ServerShape::Sliding);
        assert_eq!(a.format, Format::Table);
        let names: Vec<_> = a
            .modes()
            .unwrap()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(
            names,
            ["none", "fixed", "aimd", "cubic", "pacer", "headers"]
        );
    }

    #[test]
    fn compare_takes_the_same_flags_as_the_default() {
        let cli = parse(&[
            "compare",
            "--story",
            "all",
            "--mode",
            "aimd",
            "--mode",
            "none",
            "--mode",
            "aimd",
            "--instances",
            "3",
            "--quota",
            "6000",
            "--demand",
            "1500",
            "--minutes",
            "5",
            "--seed",
            "7",
            "--format",
            "csv",
            "--plot",
            "out.svg",
            "--server",
            "gcra",
        ])
        .unwrap();
        let Some(Command::Compare(a)) = &cli.command else {
            panic!("compare");
        };
        assert_eq!(a.stories().unwrap().len(), 6);
        let names: Vec<_> = a
            .modes()
            .unwrap()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(names, ["aimd", "none"], "in the order given, each once");
        let o = a.options();
        assert_eq!(
            (o.instances, o.quota, o.demand, o.minutes, o.seed),
            (3, 6000, 1500.0, 5, 7)
        );
        assert_eq!(o.server, ServerShape::Gcra);
        assert_eq!(a.format, Format::Csv);
        assert_eq!(a.plot.as_deref(), Some(std::path::Path::new("out.svg")));
    }

    #[test]
    fn the_llm_batch_story_runs_its_own_modes_only() {
        let cli = parse(&[
            "--story",
            "llm-batch",
            "--mode",
            "budgets",
            "--minutes",
            "1",
        ])
        .unwrap();
        let out = execute(&cli).unwrap();
        assert!(out.contains("| budgets |"), "{out}");
        let cli = parse(&["--story", "llm-batch", "--mode", "aimd"]).unwrap();
        let e = execute(&cli).unwrap_err().to_string();
        assert!(e.contains("expected naive, requests, budgets"), "{e}");
        let cli = parse(&["--story", "free-run", "--mode", "budgets"]).unwrap();
        let e = execute(&cli).unwrap_err().to_string();
        assert!(e.contains("runs only in --story llm-batch"), "{e}");
    }

    #[test]
    fn bad_names_are_refused_with_the_choices() {
        let e = parse(&["--story", "mars"]).unwrap_err().to_string();
        assert!(e.contains("unknown story \"mars\""), "{e}");
        let e = parse(&["--mode", "vegas"]).unwrap_err().to_string();
        assert!(
            e.contains(
                "expected one of none, fixed, aimd, cubic, pacer, headers, default, aimd-600"
            ),
            "{e}"
        );
        let e = parse(&["--server", "window"]).unwrap_err().to_string();
        assert!(
            e.contains(
                "invalid value 'window' for '--server <SHAPE>': unknown server shape \"window\": \
                 expected one of sliding, fixed, token-bucket, leaky-bucket, gcra, haproxy, \
                 governor, nginx"
            ),
            "{e}"
        );
        let e = parse(&["--format", "xml"]).unwrap_err().to_string();
        assert!(e.contains("expected table, csv or json"), "{e}");
    }

    #[test]
    fn config_needs_a_limiter_and_adds_a_mode_named_after_it() {
        assert!(parse(&["--config", "pacer.toml"]).is_err());
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/pacer.toml");
        let plain = std::env::temp_dir().join(format!("pacer-sim-cli-{}.toml", std::process::id()));
        std::fs::write(
            &plain,
            "[adaptive_rate_limiting.limiters.orders-api]\ncontroller = \"Cubic\"\n",
        )
        .unwrap();
        let cli = parse(&[
            "--mode",
            "aimd",
            "--config",
            plain.to_str().unwrap(),
            "--limiter",
            "orders-api",
        ])
        .unwrap();
        let modes = cli.compare.modes().unwrap();
        let names: Vec<_> = modes.iter().map(|m| m.name().to_owned()).collect();
        assert_eq!(names, ["aimd", "orders-api"]);
        // The sample's orders-api has a strict window kept in memory: compare runs it.
        let cli = parse(&["--config", sample, "--limiter", "orders-api"]).unwrap();
        let modes = cli.compare.modes().unwrap();
        assert_eq!(modes.last().unwrap().name(), "orders-api");
        let cli = parse(&["--config", sample, "--limiter", "no-such"]).unwrap();
        let e = cli.compare.modes().unwrap_err().to_string();
        assert!(e.contains("no-such"), "{e}");
        let cli = parse(&["--config", "/nonexistent.toml", "--limiter", "x"]).unwrap();
        assert!(cli.compare.modes().is_err());
    }

    #[test]
    fn negative_numbers_reach_their_flag_s_range() {
        for (flag, value, rule) in [
            ("--instances", "-1", "must be from 1 to 1000"),
            ("--seed", "-1", "must not be negative"),
            ("--demand", "-1", "must be from 0 to 1,000,000"),
            ("--quota", "-3000", "must be at least 1"),
            ("--minutes", "-5", "must be from 1 to 1440"),
            ("--window", "-10", "must be from 1 to 60"),
        ] {
            let e = parse(&[flag, value]).unwrap_err().to_string();
            assert!(
                e.contains(&format!("invalid value '{value}' for '{flag}")) && e.contains(rule),
                "{flag} {value}: {e}"
            );
            assert!(!e.contains("unexpected argument"), "{e}");
        }
    }
}
