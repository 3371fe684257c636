//! One client instance: its own `reqwest::Client`, with its own Pacer middleware (or none), as
//! one process of a fleet would have.

use super::context::RunContext;
use super::probe::{Probe, Trace, is_refusal};
use super::record::Outcome;
use crate::SimError;
use crate::serve::COST_HEADER;
use pacer_core::{Clock, RateLimitInfo};
use reqwest::Url;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::{Cost, LimiterConfig, PacerErrorExt, PacerMiddleware};
use std::sync::Arc;
use std::time::Duration;

/// The name of the one limiter of each instance's middleware, unless it is a configured
/// limiter's (which keeps its name, so that its messages name it).
pub(crate) const LIMITER: &str = "live";

/// The longest a single HTTP exchange may take (waits in Pacer's queue are not part of it).
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// One instance.
#[derive(Debug)]
pub(crate) struct Instance {
    client: ClientWithMiddleware,
    pacer: Option<PacerMiddleware>,
    /// The name of its middleware's one limiter.
    limiter: String,
    /// The initial rate of this instance, real units per minute (before the first request).
    initial_rate: f64,
    max_attempts: u32,
    /// When it starts, in story time.
    pub(crate) start: Duration,
}

impl Instance {
    /// Instance `index`, which starts at story time `start`, with Pacer's middleware configured by
    /// `config` (real-time settings, `InstanceCount` set) or, for `none`, without.
    pub(crate) fn new(
        ctx: &Arc<RunContext>,
        index: u32,
        limiter: &str,
        config: Option<LimiterConfig>,
        max_attempts: u32,
        start: Duration,
    ) -> Result<Instance, SimError> {
        let http = reqwest::Client::builder()
            // reqwest 0.13 re-sends some refused requests below every middleware by default:
            // that would make attempts the probe never sees.
            .retry(reqwest::retry::never())
            .timeout(HTTP_TIMEOUT)
            .build()
            .map_err(|e| SimError::Io(format!("cannot build an HTTP client: {e}")))?;
        let mut builder = ClientBuilder::new(http);
        let mut pacer = None;
        let mut initial_rate = 0.0;
        if let Some(config) = config {
            let options = config.options();
            initial_rate = options.rate_at_start() / f64::from(options.instance_count.max(1));
            let middleware = PacerMiddleware::builder()
                .limiter(limiter, config)
                .clock(Arc::clone(&ctx.clock) as Arc<dyn Clock>)
                .build()
                .map_err(|e| SimError::Options(e.to_string()))?;
            builder = builder.with(middleware.clone());
            pacer = Some(middleware);
        }
        let client = builder.with(Probe(Arc::clone(ctx), index)).build();
        Ok(Instance {
            client,
            pacer,
            limiter: limiter.to_owned(),
            initial_rate,
            max_attempts: max_attempts.max(1),
            start,
        })
    }

    /// The rate this instance's limiter allows now, real units per minute (summed over the
    /// endpoints it has met; the initial rate before the first request); `None` without one.
    pub(crate) fn rate(&self) -> Option<f64> {
        let pacer = self.pacer.as_ref()?;
        let endpoints = pacer.endpoints(&self.limiter).unwrap_or_default();
        if endpoints.is_empty() {
            return Some(self.initial_rate);
        }
        let sum = endpoints
            .iter()
            .filter_map(|e| pacer.state(&self.limiter, e).ok()?.limiter)
            .map(|s| s.rate)
            .sum();
        Some(sum)
    }

    /// Tells the limiter how many instances share the budget now.
    pub(crate) fn set_instance_count(&self, count: u32) {
        if let Some(pacer) = &self.pacer {
            let _ = pacer.set_instance_count(&self.limiter, count);
        }
    }

    /// Sends one request of `units` to `url`, with its retries, and says how it ended.
    pub(crate) async fn request(&self, ctx: &RunContext, url: &Url, units: u64) -> Outcome {
        let trace = Trace::new(ctx.clock.now());
        let send = || {
            self.client
                .get(url.clone())
                .header(COST_HEADER, units.to_string())
                .with_extension(Cost(units))
                .with_extension(trace.clone())
                .send()
        };
        if self.pacer.is_some() {
            // Pacer waits, sends and retries; the caller sees the last response or a refusal.
            return match send().await {
                Ok(r) if r.status().is_success() => Outcome::Succeeded,
                Ok(r) if is_refusal(r.status()) => {
                    // A throttled answer before the last attempt means the retry was refused.
                    if trace.attempts() >= self.max_attempts {
                        Outcome::GaveUp
                    } else {
                        Outcome::Rejected
                    }
                }
                Ok(r) => Outcome::Error(format!("HTTP {}", r.status())),
                Err(e) if e.is_rejected() => Outcome::Rejected,
                Err(e) => Outcome::Error(describe(&e)),
            };
        }
        // `none`: send; on a 429 (or a 503, 529) sleep its Retry-After and send again, up to
        // MaxAttempts.
        loop {
            let response = match send().await {
                Ok(r) => r,
                Err(e) => return Outcome::Error(describe(&e)),
            };
            if response.status().is_success() {
                return Outcome::Succeeded;
            }
            if !is_refusal(response.status()) {
                return Outcome::Error(format!("HTTP {}", response.status()));
            }
            if trace.attempts() >= self.max_attempts {
                return Outcome::GaveUp;
            }
            let info = RateLimitInfo::from_headers(response.headers(), ctx.clock.system_now());
            // Without a Retry-After, one story second.
            let sleep = info
                .retry_after()
                .unwrap_or_else(|| ctx.speed.to_real(Duration::from_secs(1)));
            drop(response);
            ctx.clock.sleep_until(ctx.clock.now() + sleep).await;
            // The sleep is not a wait for units: the next attempt starts waiting now.
            trace.set_ready(ctx.clock.now());
        }
    }
}

/// An error and its sources on one line (reqwest's own message is only "error sending request").
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
