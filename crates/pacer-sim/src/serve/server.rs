//! The HTTP server: the served model behind axum, on a TCP port.
//!
//! | route | answer |
//! |---|---|
//! | `GET /stats` | [`ServerStats`] as JSON |
//! | `POST /reset` | starts the story over (story time 0, an empty window, zero counters); the stats after |
//! | anything else | the model API: costs the `x-cost` header (default 1); `200` with an empty body, or `429` with `Retry-After`; the `--headers` fields on both, and the `--quirk`s on some accepted requests; `400` for a bad `x-cost` |
//!
//! Bodies are empty (`Content-Length: 0`) so a client that drops a response without reading
//! it still gets its keep-alive connection back.
//!
//! With `--llm [openai|anthropic]` the server is an [`LlmServer`](super::LlmServer) instead, a
//! model API with OpenAI's or Anthropic's limits and fields ([`LlmDialect`](super::LlmDialect)):
//!
//! | route | answer |
//! |---|---|
//! | `POST /v1/chat/completions` (`--llm`, `--llm openai`) | a chat completion: `200` with its `usage` after the time it takes to write, or `429` with an OpenAI error body; OpenAI's six `x-ratelimit-*` fields on both; `400` for a body that is not a chat request |
//! | `POST /v1/messages` (`--llm anthropic`) | a message: `200` with its `usage` after the time it takes to write, or `429` with an Anthropic `rate_limit_error` body and `retry-after`; the `anthropic-ratelimit-*` fields on both; `400` for a body that is not a messages request or has no `max_tokens` |
//! | `GET /stats` | [`LlmStats`](super::LlmStats) as JSON, with its `dialect` |
//! | `POST /reset` | starts over (story time 0, full buckets, zero counters); the stats after |
//! | anything else | `404` with the dialect's error body (the other dialect's endpoint too) |

use super::{HeaderDialect, Quirks, ServedModel, ServerStats};
use crate::Speed;
use crate::model::{ServerShape, Story};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use pacer_core::{Clock, RealClock};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The request header that carries a request's cost in units.
pub const COST_HEADER: &str = "x-cost";

/// What `serve` serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on; port 0 picks a free one.
    pub addr: SocketAddr,
    /// The hidden quota before the story changes it, units per story minute.
    pub quota: u64,
    /// The story, played from the start on the real clock at `speed`.
    pub story: Story,
    /// How many times faster than the real clock story time runs.
    pub speed: Speed,
    /// The rate-limit fields sent besides `Retry-After`.
    pub headers: HeaderDialect,
    /// The odd headers sent on top of the dialect's.
    pub quirks: Quirks,
    /// The shape of the quota (`--server`), over the one-minute window.
    pub server: ServerShape,
}

impl Default for ServeOptions {
    /// Loopback port 8080, 3,000 units per minute, `free-run`, real time, no rate-limit fields,
    /// no quirk.
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            quota: 3000,
            story: Story::by_name("free-run").expect("a built-in story"),
            speed: Speed::REAL_TIME,
            headers: HeaderDialect::None,
            quirks: Quirks::none(),
            server: ServerShape::Sliding,
        }
    }
}

/// A running server. Dropping it stops it.
#[derive(Debug)]
pub struct Server {
    running: Running,
    model: Arc<ServedModel>,
}

/// The axum application around `model`.
pub fn router(model: Arc<ServedModel>) -> Router {
    Router::new()
        .route("/stats", get(stats))
        .route("/reset", post(reset))
        .fallback(any(api))
        .with_state(model)
}

async fn stats(State(model): State<Arc<ServedModel>>) -> Response {
    json(&model.stats())
}

async fn reset(State(model): State<Arc<ServedModel>>) -> Response {
    json(&model.reset())
}

async fn api(State(model): State<Arc<ServedModel>>, headers: HeaderMap) -> Response {
    let cost = headers.get(COST_HEADER).map(|v| {
        v.to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or(())
    });
    let answer = model.answer(cost);
    if !answer.delay.is_zero() {
        tokio::time::sleep(answer.delay).await;
    }
    (answer.status, answer.headers).into_response()
}

/// `200` with `stats` as JSON.
pub(super) fn json<T: serde::Serialize>(stats: &T) -> Response {
    let body = serde_json::to_string(stats).expect("plain data serializes");
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// A server task on a port, for [`Server`] and [`LlmServer`](super::LlmServer): `stop` shuts
/// it down gracefully; dropped, it is aborted.
#[derive(Debug)]
pub(super) struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Serves `app` on `listener` in the background until [`stop`](Self::stop).
    pub(super) fn spawn(listener: tokio::net::TcpListener, app: Router) -> io::Result<Running> {
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Running {
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(super) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Until the task ends (an I/O error), or forever.
    pub(super) async fn wait(&mut self) -> io::Result<()> {
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| Err(io::Error::other(e))),
            None => Ok(()),
        }
    }

    /// Stops accepting and lets requests in flight finish.
    pub(super) async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Server {
    /// Binds `options.addr` and serves in the background on the current tokio runtime; story
    /// time starts now.
    pub async fn start(options: &ServeOptions) -> io::Result<Server> {
        let clock: Arc<dyn Clock> = Arc::new(RealClock::new());
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let model = Arc::new(
            ServedModel::new(
                clock,
                options.quota,
                options.story.clone(),
                options.speed,
                options.headers,
                options.quirks.clone(),
            )
            .with_shape(options.server),
        );
        let running = Running::spawn(listener, router(Arc::clone(&model)))?;
        Ok(Server { running, model })
    }

    /// The address it listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// `http://ADDR`.
    #[must_use]
    pub fn url(&self) -> String {
        self.running.url()
    }

    /// What `GET /stats` would answer now.
    #[must_use]
    pub fn stats(&self) -> ServerStats {
        self.model.stats()
    }

    /// Serves until the task ends (an I/O error), or forever.
    pub async fn wait(mut self) -> io::Result<()> {
        self.running.wait().await
    }

    /// Stops accepting, lets requests in flight finish, and returns the final stats.
    pub async fn stop(mut self) -> ServerStats {
        self.running.stop().await;
        self.model.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn start(quota: u64, headers: HeaderDialect) -> Server {
        let options = ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            quota,
            headers,
            ..ServeOptions::default()
        };
        Server::start(&options).await.unwrap()
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .retry(reqwest::retry::never())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
    }

    async fn read_stats(request: reqwest::RequestBuilder) -> ServerStats {
        let body = request.send().await.unwrap().bytes().await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn over_a_real_port_the_quota_holds_and_stats_count() {
        let server = start(5, HeaderDialect::Draft11).await;
        let http = client();
        let url = format!("{}/orders?page=2", server.url());
        let r = http
            .get(&url)
            .header(COST_HEADER, "4")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["ratelimit"], "\"default\";r=1;t=60");
        assert_eq!(r.headers()["content-length"], "0");
        let r = http
            .post(&url)
            .header(COST_HEADER, "2")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429);
        let retry: f64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        // A lower bound only: the clock moved between the two requests.
        assert!(retry >= 1.0, "{retry}");
        let r = http
            .get(&url)
            .header(COST_HEADER, "two")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);

        let stats = read_stats(http.get(format!("{}/stats", server.url()))).await;
        assert_eq!(stats.server, "pacer-sim");
        assert_eq!(
            (
                stats.accepted_units,
                stats.throttled,
                stats.bad_requests,
                stats.quota
            ),
            (4, 1, 1, 5)
        );
        assert_eq!(stats.headers, "draft11");

        let reset = read_stats(http.post(format!("{}/reset", server.url()))).await;
        assert_eq!((reset.accepted_units, reset.used_units), (0, 0));
        let r = http
            .get(&url)
            .header(COST_HEADER, "5")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "the window is empty after a reset");
        let last = server.stop().await;
        assert_eq!(last.accepted_units, 5);
    }
}
