//! A scripted loopback server, a recording service, and time driven on a manual clock.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use pacer_core::{Clock, ManualClock, Timestamp};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service;

/// One scripted answer: a status and its headers.
pub(crate) type Answer = (u16, Vec<(&'static str, &'static str)>);

/// Serves `script` in order, one answer per request, the last one forever after. Returns the
/// base URL.
pub(crate) async fn serve(script: Vec<Answer>) -> String {
    let script = Arc::new(Mutex::new((script, 0usize)));
    let app = Router::new().fallback(move || {
        let script = Arc::clone(&script);
        async move {
            let (answers, next) = &mut *script.lock().unwrap();
            let (status, headers) = answers[(*next).min(answers.len() - 1)].clone();
            *next += 1;
            let mut response = (StatusCode::from_u16(status).unwrap(), "ok").into_response();
            for (name, value) in headers {
                response.headers_mut().insert(
                    HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                );
            }
            response
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// One scripted answer with a body: a status, a content type and the body.
pub(crate) type BodyAnswer = (u16, &'static str, String);

/// Serves `script` in order, as [`serve`] does, each answer with its body. Returns the base URL.
pub(crate) async fn serve_bodies(script: Vec<BodyAnswer>) -> String {
    let script = Arc::new(Mutex::new((script, 0usize)));
    let app = Router::new().fallback(move || {
        let script = Arc::clone(&script);
        async move {
            let (answers, next) = &mut *script.lock().unwrap();
            let (status, content_type, body) = answers[(*next).min(answers.len() - 1)].clone();
            *next += 1;
            let status = StatusCode::from_u16(status).unwrap();
            (status, [("content-type", content_type)], body).into_response()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A server that answers every request after `delay` of real time. Returns the base URL.
pub(crate) async fn serve_late(delay: Duration) -> String {
    let app = Router::new().fallback(move || async move {
        tokio::time::sleep(delay).await;
        "late"
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A hyper-util client of whole bodies.
pub(crate) fn hyper_client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Wraps a service and notes the clock's time at each call: when a request is really sent.
#[derive(Clone)]
pub(crate) struct Recorded<S> {
    pub(crate) inner: S,
    pub(crate) clock: ManualClock,
    pub(crate) sent: Arc<Mutex<Vec<Duration>>>,
}

impl<S, R> Service<R> for Recorded<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.sent.lock().unwrap().push(since_origin(&self.clock));
        self.inner.call(request)
    }
}

/// The clock's time since its origin.
pub(crate) fn since_origin(clock: &ManualClock) -> Duration {
    clock.now() - Timestamp::ZERO
}

/// Runs `future` to its end on `clock` ([`ManualClock::drive`]).
pub(crate) async fn drive<F: Future>(clock: &ManualClock, future: F) -> F::Output {
    clock.drive(future).await
}

/// A hyper client behind the layer, its sends noted.
pub(crate) type RecordedService =
    tower_pacer::PacerService<Recorded<Client<HttpConnector, Full<Bytes>>>>;

/// When each request was sent, since the clock's origin.
pub(crate) type Sent = Arc<Mutex<Vec<Duration>>>;

/// `layer` over a hyper client whose sends are noted on `clock`: the service, and the times.
pub(crate) fn recorded(
    layer: &tower_pacer::PacerLayer,
    clock: &ManualClock,
) -> (RecordedService, Sent) {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let service = tower_layer::Layer::layer(
        layer,
        Recorded {
            inner: hyper_client(),
            clock: clock.clone(),
            sent: Arc::clone(&sent),
        },
    );
    (service, sent)
}
