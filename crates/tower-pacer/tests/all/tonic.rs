//! gRPC through the layer: a real tonic client and a real tonic server (the health service) on
//! loopback, Pacer's time on a manual clock. A refused call (`RESOURCE_EXHAUSTED`,
//! `UNAVAILABLE`) is a throttle; it is handed back, not sent again (tonic's body is a stream);
//! the next call waits for the server's `grpc-retry-pushback-ms`.

use pacer_core::{KeyMode, LimiterOptions, LimiterSnapshot, ManualClock, Paced};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer;
use tower_pacer::{PacerLayer, PacerService};

/// The key of every call to the health service (`HostAndFirstSegment` of a path-only URI).
const HEALTH: &str = "/grpc.health.v1.Health";

/// A tonic server whose answers the test writes in advance: each call takes the next refusal
/// from `refusals` (`None`: served) and counts in `arrived`.
struct GrpcServer {
    url: String,
    arrived: Arc<AtomicUsize>,
    refusals: Arc<Mutex<VecDeque<Option<Status>>>>,
}

impl GrpcServer {
    async fn start() -> GrpcServer {
        let (_reporter, health) = tonic_health::server::health_reporter();
        let arrived = Arc::new(AtomicUsize::new(0));
        let refusals = Arc::new(Mutex::new(VecDeque::<Option<Status>>::new()));
        let (count, planned) = (Arc::clone(&arrived), Arc::clone(&refusals));
        let answer = move |request: Request<()>| -> Result<Request<()>, Status> {
            count.fetch_add(1, Ordering::SeqCst);
            match planned.lock().unwrap().pop_front().flatten() {
                Some(status) => Err(status),
                None => Ok(request),
            }
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        tokio::spawn(
            Server::builder()
                .layer(tonic::service::InterceptorLayer::new(answer))
                .add_service(health)
                .serve_with_incoming(incoming),
        );
        GrpcServer {
            url,
            arrived,
            refusals,
        }
    }

    fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }

    /// The next call is refused with `status`.
    fn refuse_next(&self, status: Status) {
        self.refusals.lock().unwrap().push_back(Some(status));
    }

    /// A client behind a layer on `clock`, one endpoint per gRPC service, limited from the start
    /// to 6,000 calls a minute (at least 600 after cuts): a call waits for the server's stop, and
    /// the limiter's units are there by then.
    async fn client(
        &self,
        clock: &ManualClock,
    ) -> (PacerLayer, HealthClient<PacerService<Channel>>) {
        let mut options = LimiterOptions::default();
        options.initial_units_per_minute = Some(6_000.0);
        options.min_units_per_minute = 600.0;
        options.max_units_per_minute = 6_000.0;
        let layer = PacerLayer::builder(options)
            .endpoint_key(KeyMode::HostAndFirstSegment)
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap();
        let channel = Channel::from_shared(self.url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let client = HealthClient::new(layer.layer(channel));
        (layer, client)
    }
}

/// `RESOURCE_EXHAUSTED` with a pushback of `ms`, as a server sends it: in the trailers of a
/// trailers-only answer, which are its headers.
fn exhausted(ms: &str) -> Status {
    let mut metadata = tonic::metadata::MetadataMap::new();
    metadata.insert("grpc-retry-pushback-ms", ms.parse().unwrap());
    Status::with_metadata(Code::ResourceExhausted, "quota", metadata)
}

fn limiter(layer: &PacerLayer) -> LimiterSnapshot {
    layer
        .limiter(HEALTH)
        .expect("the service's endpoint is known")
}

async fn check(
    client: &mut HealthClient<PacerService<Channel>>,
) -> Result<tonic::Response<HealthCheckResponse>, Status> {
    client.check(HealthCheckRequest::default()).await
}

/// Waits for what other tasks do, a few milliseconds of real time at a time (never for the
/// clock the test drives).
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..5_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(done(), "{what}");
}

#[tokio::test]
async fn a_served_call_goes_through_and_teaches_nothing() {
    let server = GrpcServer::start().await;
    let clock = ManualClock::new();
    let (layer, mut client) = server.client(&clock).await;
    let response = check(&mut client).await.expect("served");
    assert_eq!(response.get_ref().status(), ServingStatus::Serving);
    let paced = response.extensions().get::<Paced>().expect("marked");
    assert_eq!((paced.attempts(), paced.waited()), (1, Duration::ZERO));
    let limiter = limiter(&layer);
    assert_eq!(limiter.decreases, 0, "no cut");
    assert_eq!(limiter.in_flight, 0);
}

#[tokio::test]
async fn a_refused_call_is_handed_back_and_the_next_waits_for_the_pushback() {
    let server = GrpcServer::start().await;
    let clock = ManualClock::new();
    let (layer, mut client) = server.client(&clock).await;
    server.refuse_next(exhausted("2000"));
    let refused = check(&mut client).await.expect_err("refused");
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(
        server.arrived(),
        1,
        "not sent again: tonic's body is read once"
    );
    let after = limiter(&layer);
    assert_eq!(
        after.decreases, 1,
        "the refusal is a throttle: the rate is cut"
    );
    assert_eq!(
        after.paused_for,
        Some(Duration::from_secs(2)),
        "for the pushback"
    );

    let mut next = client.clone();
    let waiting = tokio::spawn(async move { check(&mut next).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.arrived(), 1, "held for the pushback");
    // The pushback, then one unit at the cut rate (the pause empties the limiter's bucket).
    clock.advance(Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(Duration::from_millis(100));
    until("sent once the pushback is over", || server.arrived() == 2).await;
    let served = waiting.await.unwrap().expect("served");
    let paced = served.extensions().get::<Paced>().expect("marked");
    assert!(
        (Duration::from_secs(2)..=Duration::from_millis(2_100)).contains(&paced.waited()),
        "{:?}",
        paced.waited()
    );
}

#[tokio::test]
async fn unavailable_is_a_throttle_and_a_plain_error_is_not() {
    let server = GrpcServer::start().await;
    let clock = ManualClock::new();
    let (layer, mut client) = server.client(&clock).await;
    server.refuse_next(Status::not_found("no such service"));
    assert_eq!(check(&mut client).await.unwrap_err().code(), Code::NotFound);
    assert_eq!(limiter(&layer).decreases, 0, "NOT_FOUND is not a throttle");
    server.refuse_next(Status::unavailable("shedding load"));
    assert_eq!(
        check(&mut client).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(limiter(&layer).decreases, 1, "UNAVAILABLE is a throttle");
    assert_eq!(server.arrived(), 2, "neither is sent again");
}
