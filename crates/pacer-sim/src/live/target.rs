//! The target of a live run: any `http://` URL, and whether it is a `pacer-sim serve` (its
//! `GET /stats` says so), whose story, speed and quota a run then takes, and which it resets
//! before each mode.

use crate::SimError;
use crate::serve::{SERVER_NAME, ServerStats};
use reqwest::Url;
use std::time::Duration;

/// How long the target may take to answer `/stats` or `/reset`.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The target.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// Where the requests go.
    pub(crate) url: Url,
    stats_url: Url,
    reset_url: Url,
    http: reqwest::Client,
    /// What `/stats` said at the start, if the target is a `pacer-sim serve`.
    pub(crate) served: Option<ServerStats>,
}

impl Target {
    /// Parses `target` and asks it for `/stats`. An error if the URL is not `http://` or nothing
    /// answers there.
    pub(crate) async fn probe(target: &str) -> Result<Target, SimError> {
        let url = Url::parse(target)
            .map_err(|e| SimError::Options(format!("--target {target:?}: {e}")))?;
        match url.scheme() {
            "http" => {}
            "https" => {
                return Err(SimError::Options(format!(
                    "--target {target}: https is not supported (pacer-sim is built without TLS); \
                     use an http:// URL"
                )));
            }
            other => {
                return Err(SimError::Options(format!(
                    "--target {target}: unsupported scheme {other:?}; use an http:// URL"
                )));
            }
        }
        let join = |path: &str| {
            url.join(path)
                .map_err(|e| SimError::Options(format!("--target {target}: {e}")))
        };
        let (stats_url, reset_url) = (join("/stats")?, join("/reset")?);
        let http = reqwest::Client::builder()
            .retry(reqwest::retry::never())
            .timeout(CONTROL_TIMEOUT)
            .build()
            .map_err(|e| SimError::Io(format!("cannot build an HTTP client: {e}")))?;
        let mut t = Target {
            url,
            stats_url,
            reset_url,
            http,
            served: None,
        };
        let response = t.http.get(t.stats_url.clone()).send().await.map_err(|e| {
            SimError::Io(format!(
                "cannot reach --target {target}: {}",
                super::instance::describe(&e)
            ))
        })?;
        t.served = read_stats(response).await;
        Ok(t)
    }

    /// The stats now, if the target is ours and answers.
    pub(crate) async fn stats(&self) -> Option<ServerStats> {
        self.served.as_ref()?;
        read_stats(self.http.get(self.stats_url.clone()).send().await.ok()?).await
    }

    /// Starts the served story over (a no-op for a target that is not ours).
    pub(crate) async fn reset(&self) -> Result<(), SimError> {
        if self.served.is_none() {
            return Ok(());
        }
        let response = self
            .http
            .post(self.reset_url.clone())
            .send()
            .await
            .map_err(|e| {
                SimError::Io(format!(
                    "cannot reset {}: {}",
                    self.reset_url,
                    super::instance::describe(&e)
                ))
            })?;
        match read_stats(response).await {
            Some(_) => Ok(()),
            None => Err(SimError::Io(format!(
                "{} did not answer with the stats",
                self.reset_url
            ))),
        }
    }
}

/// The stats in a response, if it is a `pacer-sim serve`'s.
async fn read_stats(response: reqwest::Response) -> Option<ServerStats> {
    if !response.status().is_success() {
        return None;
    }
    let body = response.bytes().await.ok()?;
    let stats: ServerStats = serde_json::from_slice(&body).ok()?;
    (stats.server == SERVER_NAME).then_some(stats)
}
