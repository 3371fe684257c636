//! The probe: a middleware *inside* Pacer's, so it sees each attempt at the moment it is sent
//! and its response the moment it is back, on the real clock.
//!
//! That is the middleware's own point of view: the wait of an attempt is the time from when it
//! started waiting (the request's arrival for the first attempt, the throttled response before
//! it for a retry, the end of the `Retry-After` sleep in `none`) to when Pacer let it go. Every
//! attempt also tells the recorder what the server answered, stamped with the story time at
//! which it was sent (the server decides at once).

use super::context::RunContext;
use http::{Extensions, StatusCode};
use pacer_core::{Clock, Timestamp};
use reqwest_middleware::{Middleware, Next};
use reqwest_pacer::Cost;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One request's trace across its attempts, carried as a request extension.
#[derive(Debug, Clone)]
pub(crate) struct Trace(Arc<TraceState>);

#[derive(Debug)]
struct TraceState {
    /// When the next attempt started waiting (nanoseconds of the run's clock).
    ready_at: AtomicU64,
    /// Attempts sent so far.
    attempts: AtomicU32,
}

impl Trace {
    /// A request that arrives at `now`.
    pub(crate) fn new(now: Timestamp) -> Self {
        Trace(Arc::new(TraceState {
            ready_at: AtomicU64::new(now.as_nanos()),
            attempts: AtomicU32::new(0),
        }))
    }

    fn ready_at(&self) -> Timestamp {
        Timestamp::from_nanos(self.0.ready_at.load(Ordering::Acquire))
    }

    /// The next attempt starts waiting at `now`.
    pub(crate) fn set_ready(&self, now: Timestamp) {
        self.0.ready_at.store(now.as_nanos(), Ordering::Release);
    }

    /// Attempts sent so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.0.attempts.load(Ordering::Acquire)
    }
}

/// The recording middleware of one instance (its index) of a run.
#[derive(Debug, Clone)]
pub(crate) struct Probe(pub(crate) Arc<RunContext>, pub(crate) u32);

#[async_trait::async_trait]
impl Middleware for Probe {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let ctx = &self.0;
        let sent = ctx.clock.now();
        let units = extensions.get::<Cost>().map_or(1, |c| c.0);
        let trace = extensions.get::<Trace>().cloned();
        let waited = trace
            .as_ref()
            .map_or_else(Default::default, |t| sent - t.ready_at());
        let at = ctx.story_at(sent);
        ctx.record(|r| r.sent(at, ctx.speed.to_story(waited)));
        let result = next.run(req, extensions).await;
        if let Some(trace) = &trace {
            trace.0.attempts.fetch_add(1, Ordering::AcqRel);
            // A retry starts waiting the moment the middleware sees this answer.
            trace.set_ready(ctx.clock.now());
        }
        if let Ok(response) = &result {
            let status = response.status();
            if is_refusal(status) {
                ctx.record(|r| r.throttled(at));
            } else if status.is_success() {
                ctx.record(|r| r.accepted(at, self.1, units));
            }
        }
        result
    }
}

/// True if `status` is how a server-side limiter refuses: a 429, or a 503 or 529 (nginx's
/// `limit_req` refuses with a bare 503 unless told otherwise; Anthropic's API says 529 when
/// overloaded). `live` counts each in the 429s column.
pub(crate) fn is_refusal(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 503 | 529)
}
