//! A live session: the target probed once, then each mode run against it in turn, on the real
//! clock, into the same rows `compare` prints.

use super::context::RunContext;
use super::instance::Instance;
use super::progress::{Progress, ProgressStyle, show};
use super::record::LiveRecorder;
use super::target::Target;
use super::{LiveMode, LiveOptions};
use crate::configured::redacted;
use crate::model::{Arrivals, Story};
use crate::serve::ServerStats;
use crate::{Comparison, Row, SimError, SimOptions, Speed};
use pacer_core::{Clock, FleetOptions, FleetStore, LimiterOptions, MemoryFleetStore, RealClock};
use pacer_redis::{RedisFleetStore, RedisWindowStore};
use reqwest_pacer::LimiterConfig;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

/// What one mode's run did besides its row.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModeRun {
    /// The mode.
    pub mode: LiveMode,
    /// Requests that ended in a transport error or a status other than 2xx and 429.
    pub errors: u64,
    /// The first of those errors.
    pub first_error: Option<String>,
    /// The target's `/stats` at the end, if it is a `pacer-sim serve`.
    pub server: Option<ServerStats>,
    /// The real time the run took.
    pub wall: Duration,
}

/// The result of a live session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LiveRun {
    /// The rows, one per mode, as `compare` makes them (story units and seconds).
    pub comparison: Comparison,
    /// What else each mode's run did, in the same order.
    pub runs: Vec<ModeRun>,
}

/// A session against one target.
#[derive(Debug)]
pub struct LiveSession {
    target: Target,
    speed: Speed,
    story: Story,
    quota: Option<u64>,
    sim: SimOptions,
    rows: Vec<Row>,
    runs: Vec<ModeRun>,
    progress: ProgressStyle,
    /// `--redis`, for the `fleet` mode.
    redis: Option<String>,
}

impl LiveSession {
    /// Probes the target and settles the run's settings: a `pacer-sim serve` target gives its
    /// story, speed and quota (an explicit option that differs is an error: the run would not
    /// be the story it claims); another target takes the options or `free-run`, speed 1 and no
    /// quota (share `n/a`).
    pub async fn connect(options: &LiveOptions) -> Result<LiveSession, SimError> {
        let minutes = options.minutes()?;
        let target = Target::probe(&options.target).await?;
        let (speed, story, quota) = match &target.served {
            Some(served) => {
                let speed = Speed::new(served.speed).map_err(SimError::Io)?;
                if let Some(asked) = options.speed.filter(|s| *s != speed) {
                    return Err(conflict("--speed", asked, speed));
                }
                if let Some(asked) = options.story.as_ref().filter(|s| **s != served.story) {
                    return Err(conflict("--story", asked, &served.story));
                }
                if let Some(asked) = options.quota.filter(|q| *q != served.base_quota) {
                    return Err(conflict("--quota", asked, served.base_quota));
                }
                (speed, served.story.clone(), Some(served.base_quota))
            }
            None => (
                options.speed.unwrap_or_default(),
                options
                    .story
                    .clone()
                    .unwrap_or_else(|| "free-run".to_owned()),
                options.quota,
            ),
        };
        let story = Story::by_name(&story).ok_or(SimError::UnknownStory(story))?;
        if !story.leaves.is_empty() {
            // Its instances only join: one that stopped would still send what its limiter holds.
            return Err(SimError::Options(format!(
                "--story {}: its instances stop, which live does not do; run it with compare",
                story.name
            )));
        }
        let sim = SimOptions {
            instances: options.instances,
            quota: quota.unwrap_or(0),
            demand: options.demand,
            minutes,
            seed: options.seed,
            limiter: options.limiter.clone(),
            // `serve`'s model keeps the one-minute window.
            window: crate::model::QUOTA_WINDOW,
            server: crate::model::ServerShape::Sliding,
            costs: options.costs,
            max_attempts: pacer_core::Rules::DEFAULT_MAX_ATTEMPTS,
            // A live run's network is the real one.
            forward: 0.0,
            // A live server's windows are its own.
            phase: Duration::ZERO,
            // And so is what it says with a 429.
            sends_retry_after: true,
            // `live` runs no story whose instances stop.
            restore: false,
        };
        let check = SimOptions {
            quota: sim.quota.max(1),
            ..sim.clone()
        };
        check.validate().map_err(SimError::Options)?;
        // A configured limiter that cannot be built at this speed is refused before any traffic.
        for mode in &options.modes {
            if let Some(o) = mode.limiter_options(&sim.limiter) {
                let _ = limiter_config(mode, speed.limiter_options(&o), speed)?;
            }
        }
        Ok(LiveSession {
            target,
            speed,
            story,
            quota,
            sim,
            rows: Vec::new(),
            runs: Vec::new(),
            progress: ProgressStyle::Quiet,
            redis: options.redis.clone(),
        })
    }

    /// One line on what the session will do.
    #[must_use]
    pub fn describe(&self) -> String {
        let what = match (&self.target.served, self.quota) {
            (Some(served), Some(q)) if !served.quirks.is_empty() => format!(
                "pacer-sim serve, quota {q} units/min, quirks {}",
                served.quirks.join(",")
            ),
            (Some(_), Some(q)) => format!("pacer-sim serve, quota {q} units/min"),
            (None, Some(q)) => format!("quota {q} units/min as given"),
            (_, None) => "quota unknown: share n/a".to_owned(),
        };
        let wall = self.speed.to_real(self.sim.duration());
        format!(
            "live: {} ({what}), story {}, speed {}×, {} instances × {} units/min, \
             {} story min = {:.1} s real per mode",
            self.target.url,
            self.story.name,
            self.speed,
            self.sim.instances,
            self.sim.demand,
            self.sim.minutes,
            wall.as_secs_f64()
        )
    }

    /// Shows each mode's progress on standard error in `style` (default: nothing).
    #[must_use]
    pub fn with_progress(mut self, style: ProgressStyle) -> Self {
        self.progress = style;
        self
    }

    /// The speed of the session.
    #[must_use]
    pub fn speed(&self) -> Speed {
        self.speed
    }

    /// Runs `mode` for the whole duration (resetting a `pacer-sim serve` target first).
    pub async fn run(&mut self, mode: LiveMode) -> Result<&ModeRun, SimError> {
        // A fleet's Redis must answer before the run: a fleet that never forms runs each
        // instance on its own controller, and its row would look like a fleet's.
        match (&mode, &self.redis) {
            (LiveMode::Fleet, Some(url)) => check_redis(url, "--redis").await?,
            (LiveMode::Configured(c), _) => {
                if let Some(fleet) = &c.settings.fleet {
                    let what = format!("--limiter {}: Fleet.Store", c.name);
                    check_redis(&fleet.url, &what).await?;
                }
            }
            _ => {}
        }
        self.target.reset().await?;
        let clock = Arc::new(RealClock::new());
        let wall_start = clock.now();
        let seconds = self.sim.duration().as_secs() as usize;
        let recorder = LiveRecorder::new(seconds, self.quota.is_some());
        let ctx = Arc::new(RunContext::new(Arc::clone(&clock), self.speed, recorder));
        let arrivals = Arrivals::generate(&self.sim, &self.story);
        let instances = self.instances(&ctx, &mode)?;
        let progress = Progress::new(self.progress, mode.name(), seconds);
        let sampler = tokio::spawn(sample(
            Arc::clone(&ctx),
            Arc::clone(&instances),
            self.story.clone(),
            self.quota,
            progress.clone(),
        ));
        let end = self.sim.duration();
        let mut joins = self.story.joins.iter().filter(|j| j.at < end).peekable();
        let mut tasks = JoinSet::new();
        for r in &arrivals.requests {
            while let Some(join) = joins.next_if(|j| j.at <= r.at.as_duration()) {
                ctx.sleep_until(join.at).await;
                // As `compare` does: the running instances are told the new count only in a
                // story that announces it.
                if self.story.announces {
                    let count = self.story.instance_count_at(self.sim.instances, join.at);
                    for i in instances.iter().filter(|i| i.start < join.at) {
                        i.set_instance_count(count);
                    }
                }
            }
            ctx.sleep_until(r.at.as_duration()).await;
            let (ctx, instances, url) = (
                Arc::clone(&ctx),
                Arc::clone(&instances),
                self.target.url.clone(),
            );
            let (instance, units) = (r.instance as usize, r.units);
            tasks.spawn(async move {
                let outcome = instances[instance].request(&ctx, &url, units).await;
                let at = ctx.story_now();
                ctx.record(|rec| rec.ended(at, outcome));
            });
            while tasks.try_join_next().is_some() {}
        }
        ctx.sleep_until(end).await;
        // What is still waiting or in flight is unfinished, as in compare.
        tasks.shutdown().await;
        let _ = sampler.await;
        show(progress.done());
        // The instances there from the start (a live story's instances only join).
        let whole_run: Vec<u32> = (0u32..)
            .zip(instances.iter())
            .filter(|(_, i)| i.start.is_zero())
            .map(|(n, _)| n)
            .collect();
        drop(instances);
        let wall = clock.now() - wall_start;
        let recorder = ctx.take_recorder();
        let (errors, first_error) = recorder.errors();
        let (metrics, series) = recorder.finish(
            arrivals.requests.len() as u64,
            self.sim.minutes,
            self.story.quota_drop(),
            &whole_run,
        );
        self.rows.push(Row {
            story: self.story.name.to_owned(),
            mode: mode.name().to_owned(),
            metrics,
            series,
        });
        let server = self.target.stats().await;
        self.runs.push(ModeRun {
            mode,
            errors,
            first_error,
            server,
            wall,
        });
        Ok(self.runs.last().expect("just pushed"))
    }

    /// Every instance of the run, the ones that join later too.
    fn instances(
        &self,
        ctx: &Arc<RunContext>,
        mode: &LiveMode,
    ) -> Result<Arc<Vec<Instance>>, SimError> {
        let base = self.sim.instances;
        let total = self.story.instances_at(base, self.sim.duration());
        let story_options = mode.limiter_options(&self.sim.limiter);
        let fleet = match mode {
            LiveMode::Fleet => Some(self.fleet_store()?),
            _ => None,
        };
        let mut instances = Vec::new();
        for i in 0..total {
            let start = self.story.start_of(base, i);
            let config = match &story_options {
                None => None,
                Some(o) => {
                    let mut real = self.speed.limiter_options(o);
                    real.instance_count = self.story.instance_count_at(base, start);
                    let config = limiter_config(mode, real, self.speed)?;
                    Some(match &fleet {
                        Some(store) => config.fleet(Arc::clone(store), FleetOptions::default()),
                        None => config,
                    })
                }
            };
            let limiter = match mode {
                LiveMode::Configured(c) => c.name.as_str(),
                _ => super::instance::LIMITER,
            };
            instances.push(Instance::new(
                ctx,
                i,
                limiter,
                config,
                self.sim.max_attempts.get(),
                start,
            )?);
        }
        Ok(Arc::new(instances))
    }

    /// The `fleet` mode's store: Redis at `--redis`, else one in memory for this run.
    fn fleet_store(&self) -> Result<Arc<dyn FleetStore>, SimError> {
        match &self.redis {
            None => Ok(Arc::new(MemoryFleetStore::new(RealClock::new()))),
            Some(url) => {
                let windows = RedisWindowStore::builder()
                    .connect_lazy(url)
                    .map_err(|e| SimError::Options(format!("--redis {}: {e}", redacted(url))))?;
                Ok(Arc::new(RedisFleetStore::on(&windows)))
            }
        }
    }

    /// The rows and runs so far.
    #[must_use]
    pub fn finish(self) -> LiveRun {
        LiveRun {
            comparison: Comparison {
                options: self.sim,
                rows: self.rows,
            },
            runs: self.runs,
        }
    }
}

fn conflict(flag: &str, asked: impl std::fmt::Display, served: impl std::fmt::Display) -> SimError {
    SimError::Options(format!(
        "{flag} {asked}: the target is a pacer-sim serve with {served}; leave {flag} out or give \
         the same"
    ))
}

/// Samples, at the start of each story second, the instances' summed rate (story units per
/// minute) and the quota available (when known), and shows the progress.
async fn sample(
    ctx: Arc<RunContext>,
    instances: Arc<Vec<Instance>>,
    story: Story,
    quota: Option<u64>,
    progress: Progress,
) {
    let seconds = progress.total();
    let k = ctx.speed.get();
    for second in 0..seconds {
        let at = Duration::from_secs(second as u64);
        ctx.sleep_until(at).await;
        let rate = instances
            .iter()
            .filter(|i| i.start <= at)
            .filter_map(Instance::rate)
            .fold(None, |sum: Option<f64>, r| Some(sum.unwrap_or(0.0) + r / k));
        let available = quota.map_or(0.0, |q| story.available_quota(q as f64, at));
        let throttled = ctx.record(|r| {
            r.sample(second, rate, available);
            r.throttled_so_far()
        });
        show(progress.update(second, rate, throttled));
    }
}

/// Runs every mode of `options` against its target.
pub async fn run_live(options: &LiveOptions) -> Result<LiveRun, SimError> {
    let mut session = LiveSession::connect(options).await?;
    for mode in &options.modes {
        session.run(mode.clone()).await?;
    }
    Ok(session.finish())
}

/// The middleware's settings for one instance of `mode` with `real` options: a configured
/// limiter's every setting, else the options alone with proactive throttling off, as in
/// compare's modes (the model sends no headers to them); the server-ordered stop (Retry-After,
/// nothing remaining) stays on.
fn limiter_config(
    mode: &LiveMode,
    real: LimiterOptions,
    speed: Speed,
) -> Result<LimiterConfig, SimError> {
    match mode {
        LiveMode::Configured(c) => c.live_config(real, speed),
        _ => Ok(LimiterConfig::new(real).no_throttling()),
    }
}

/// How long `live` waits for a fleet's Redis to answer before it gives up on the run.
const REDIS_CHECK: Duration = Duration::from_secs(5);

/// Connects to the Redis at `url` and asks it the time (what a fleet's first call needs: the
/// connection, the password, the server): an error that says which and why, named `what`
/// (`--redis`), the URL without its password.
async fn check_redis(url: &str, what: &str) -> Result<(), SimError> {
    use pacer_core::WindowStore;
    let fail = |cause: String| {
        SimError::Options(format!(
            "{what} {}: the fleet cannot form: {cause}",
            crate::configured::redacted(url)
        ))
    };
    let answered = tokio::time::timeout(REDIS_CHECK, async {
        let store = RedisWindowStore::builder()
            .connect(url)
            .await
            .map_err(|e| e.to_string())?;
        store.now().await.map_err(|e| e.to_string())?;
        Ok::<_, String>(())
    })
    .await;
    match answered {
        Ok(Ok(())) => Ok(()),
        Ok(Err(cause)) => Err(fail(cause)),
        Err(_) => Err(fail(format!("no answer in {} s", REDIS_CHECK.as_secs()))),
    }
}
