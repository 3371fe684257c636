//! A fleet of N members against a real Redis, as N processes would be: what Redis spends on
//! them, and what the target they share counted. Prints one JSON line.
//!
//! ```text
//! cargo run --release -p pacer-redis --example fleet_load -- \
//!     --members 100 [--seconds 60] [--warmup 15] [--quota 3000] [--window-s 10] \
//!     [--demand 1.33] [--url redis://127.0.0.1:6379]
//! ```
//!
//! Each member has its own engine, its own limiter (the library's defaults, `QuotaWindow` the
//! target's window) and its own `RedisFleetStore` connection (with its own news subscriber), as
//! separate processes would; all join one fleet. Each sends requests of one unit at
//! `--demand` × the quota's pace split evenly, with exponential gaps, through the engine's
//! wait (`pacer_core::drive::wait`) to an in-process target: a sliding window of `--quota`
//! units per `--window-s` seconds that answers a refusal with a 429 and its `Retry-After`.
//! Nothing is retried; the target counts the units sent in the measured part of the run (a
//! request queued at its end and sent after it does not count).
//!
//! Redis's figures are the deltas of `INFO` over the measured part of the run (after
//! `--warmup`): `cmdstat_fcall` (each member's `sync`, the tick's and throttles' `commit`:
//! the calls members make), every command (those the functions run inside count too), `used_cpu_sys` + `used_cpu_user`, and the bytes Redis sent. The bench reads
//! `INFO` only (it resets nothing), and its keys are its own (`fleet_load_<pid>`), so it may run
//! against a Redis that serves other work, though that work then counts in the figures.

#[path = "common/flags.rs"]
mod flags;

use flags::Flags;
use http::{HeaderMap, StatusCode};
use pacer_core::{
    Attempt, Clock, Engine, Fleet, FleetLink, FleetOptions, Limiter, LimiterOptions, RealClock,
    Rules, Timestamp,
};
use pacer_redis::RedisFleetStore;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Args {
    url: String,
    members: u32,
    seconds: u64,
    warmup: u64,
    quota: u64,
    window: Duration,
    demand: f64,
}

fn parse() -> Result<Args, String> {
    let mut flags = Flags::parse()?;
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let args = Args {
        url: flags.get("url", Some(url))?,
        members: flags.get("members", Some(10))?,
        seconds: flags.get("seconds", Some(60))?,
        warmup: flags.get("warmup", Some(15))?,
        quota: flags.get("quota", Some(3000))?,
        window: Duration::from_secs(flags.get("window-s", Some(10))?),
        demand: flags.get("demand", Some(4.0 / 3.0))?,
    };
    flags.finish()?;
    if args.members == 0 || args.quota == 0 || args.window.is_zero() || args.seconds == 0 {
        return Err("--members, --quota, --window-s and --seconds must be at least 1".into());
    }
    if args.warmup >= args.seconds {
        return Err("--warmup must be shorter than --seconds".into());
    }
    if !(args.demand.is_finite() && args.demand > 0.0) {
        return Err("--demand must be above 0".into());
    }
    Ok(args)
}

/// The target: a sliding window of `quota` units per `window`, and what it counted.
struct Target {
    quota: u64,
    window: Duration,
    accepted: Mutex<VecDeque<Timestamp>>,
    /// Units accepted and 429s sent in the measured part of the run.
    counted: AtomicU64,
    refused: AtomicU64,
}

impl Target {
    /// Admits one unit at `now`, or the `Retry-After` (whole seconds, rounded up) of a 429.
    fn admit(&self, now: Timestamp, measured: bool) -> Result<(), u64> {
        let mut log = self.accepted.lock();
        while log.front().is_some_and(|t| now - *t >= self.window) {
            log.pop_front();
        }
        if (log.len() as u64) < self.quota {
            log.push_back(now);
            if measured {
                self.counted.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        }
        if measured {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        let oldest = *log.front().expect("the log is full");
        let free_in = self.window - (now - oldest);
        Err(free_in.as_secs() + u64::from(free_in.subsec_nanos() > 0))
    }
}

/// The `INFO` figures the bench compares.
#[derive(Debug, Default, Clone)]
struct RedisFigures {
    /// Redis's `run_id`: another one after a restart.
    run_id: String,
    fcalls: u64,
    fcall_usec: u64,
    commands: u64,
    cpu_s: f64,
    net_out: u64,
}

/// `INFO` now, on a connection of its own (`None` while Redis does not answer: a restart).
async fn redis_figures(client: &redis::Client) -> Option<RedisFigures> {
    let mut connection = client.get_multiplexed_async_connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("everything")
        .query_async(&mut connection)
        .await
        .ok()?;
    let field = |name: &str| -> Option<&str> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let number = |name: &str| {
        field(name)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let mut figures = RedisFigures {
        run_id: field("run_id").unwrap_or_default().to_owned(),
        commands: number("total_commands_processed") as u64,
        cpu_s: number("used_cpu_sys") + number("used_cpu_user"),
        net_out: number("total_net_output_bytes") as u64,
        ..RedisFigures::default()
    };
    if let Some(stat) = field("cmdstat_fcall") {
        for part in stat.split(',') {
            match part.split_once('=') {
                Some(("calls", v)) => figures.fcalls = v.parse().unwrap_or(0),
                Some(("usec", v)) => figures.fcall_usec = v.parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    Some(figures)
}

/// A small, fast generator for the gaps between requests (a member's own stream).
struct SplitMix(u64);

impl SplitMix {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[tokio::main]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fleet_load: {e}");
            std::process::exit(2);
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(RealClock::new());
    let start = clock.now();
    let measure_from = start + Duration::from_secs(args.warmup);
    let end = start + Duration::from_secs(args.seconds);
    let target = Arc::new(Target {
        quota: args.quota,
        window: args.window,
        accepted: Mutex::new(VecDeque::new()),
        counted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
    let limiter_name = format!("fleet_load_{}", std::process::id());
    let mut options = LimiterOptions::default();
    options.quota_window = args.window;
    // Each member's pace: its even part of `demand` × the quota's pace, per second.
    let per_member =
        args.demand * args.quota as f64 / args.window.as_secs_f64() / f64::from(args.members);
    let sent = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for member in 0..args.members {
        let store = match RedisFleetStore::connect(&args.url).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("fleet_load: member {member}: {e}");
                std::process::exit(2);
            }
        };
        let fleet = Fleet::new(Arc::new(store), FleetOptions::default());
        let engine = Arc::new(Engine::new(16, Duration::from_secs(3600)));
        let link = FleetLink::new();
        let now = clock.now();
        let endpoint = engine.endpoint(
            "api",
            now,
            || {
                Limiter::builder(options.clone())
                    .clock(Arc::clone(&clock))
                    .controller(Fleet::controller(&options, Arc::clone(&link)))
                    .build()
                    .expect("valid options")
            },
            |_| {},
        );
        assert!(
            fleet.join(
                &limiter_name,
                &endpoint,
                link,
                &options,
                Arc::clone(&clock),
                now
            ),
            "the member joins"
        );
        let (clock, target, sent) = (Arc::clone(&clock), Arc::clone(&target), Arc::clone(&sent));
        let max_wait = options.max_wait;
        let max_retry_after = options.max_retry_after;
        tasks.push(tokio::spawn(async move {
            let rules = Rules::default();
            let mut gaps = SplitMix(u64::from(member).wrapping_mul(0x2545_F491_4F6C_DD1D) + 1);
            let mut next = clock.now();
            let mut requests = tokio::task::JoinSet::new();
            while next < end {
                next += Duration::from_secs_f64(-gaps.uniform().ln() / per_member);
                clock.sleep_until(next).await;
                let (engine, endpoint, clock, target, sent, rules) = (
                    Arc::clone(&engine),
                    endpoint.clone(),
                    Arc::clone(&clock),
                    Arc::clone(&target),
                    Arc::clone(&sent),
                    rules.clone(),
                );
                requests.spawn(async move {
                    let now = clock.now();
                    let attempt = Attempt::new(1, now, max_wait);
                    let mut tokens = 0;
                    let Ok(sent_at) = pacer_core::drive::wait(
                        &engine,
                        &rules,
                        &clock,
                        &endpoint,
                        &attempt,
                        &mut tokens,
                    )
                    .await
                    else {
                        return;
                    };
                    sent.fetch_add(1, Ordering::Relaxed);
                    let mut headers = HeaderMap::new();
                    let measured = sent_at >= measure_from && sent_at < end;
                    let status = match target.admit(sent_at, measured) {
                        Ok(()) => StatusCode::OK,
                        Err(retry_after) => {
                            headers.insert("retry-after", retry_after.into());
                            StatusCode::TOO_MANY_REQUESTS
                        }
                    };
                    let reading =
                        rules.read(status, &headers, None, clock.system_now(), max_retry_after);
                    let _ = engine.after(&endpoint, reading, 1, sent_at, clock.now());
                });
                while requests.try_join_next().is_some() {}
            }
            while requests.join_next().await.is_some() {}
        }));
    }
    let joined = clock.now() - start;
    let client = redis::Client::open(args.url.as_str()).expect("a Redis URL");
    clock.sleep_until(measure_from).await;
    let before = redis_figures(&client).await;
    let cpu_before = process_cpu_s();
    clock.sleep_until(end).await;
    let after = redis_figures(&client).await;
    let cpu_after = process_cpu_s();
    for task in tasks {
        let _ = task.await;
    }
    let measured = (end - measure_from).as_secs_f64();
    let per_member_second = |v: f64| v / measured / f64::from(args.members);
    let admits = args.quota as f64 * measured / args.window.as_secs_f64();
    let counted = target.counted.load(Ordering::Relaxed);
    // Redis's counters, unless it restarted (or did not answer) in the measured part.
    let redis = match (before, after) {
        (Some(b), Some(a)) if a.run_id == b.run_id => format!(
            "\"fcalls_per_member_s\":{:.3},\"commands_per_member_s\":{:.3},\
             \"fcall_usec_mean\":{:.1},\"redis_cpu_share\":{:.4},\
             \"redis_cpu_us_per_member_s\":{:.1},\"redis_bytes_out_per_member_s\":{:.0}",
            per_member_second((a.fcalls - b.fcalls) as f64),
            per_member_second((a.commands - b.commands) as f64),
            (a.fcall_usec - b.fcall_usec) as f64 / (a.fcalls - b.fcalls).max(1) as f64,
            (a.cpu_s - b.cpu_s) / measured,
            per_member_second((a.cpu_s - b.cpu_s) * 1e6),
            per_member_second(a.net_out.saturating_sub(b.net_out) as f64),
        ),
        _ => "\"redis\":\"restarted or unreachable: no counters\"".to_owned(),
    };
    println!(
        "{{\"members\":{},\"seconds_measured\":{measured:.0},\"join_s\":{:.1},{redis},\
         \"client_cpu_share\":{:.3},\"share\":{:.4},\"status_429\":{},\"sent\":{}}}",
        args.members,
        joined.as_secs_f64(),
        (cpu_after - cpu_before) / measured,
        counted as f64 / admits,
        target.refused.load(Ordering::Relaxed),
        sent.load(Ordering::Relaxed),
    );
}

/// This process's CPU time (user and system), in seconds, from `/proc/self/stat` (0 where
/// there is none).
fn process_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Linux's USER_HZ is 100 on every architecture Rust targets.
    (ticks(11) + ticks(12)) / 100.0
}
