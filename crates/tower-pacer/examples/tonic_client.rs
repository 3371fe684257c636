//! A tonic client behind `PacerLayer`, against a loopback gRPC server (tonic's health service)
//! that admits 4 calls a second and refuses the rest with `RESOURCE_EXHAUSTED` and a
//! `grpc-retry-pushback-ms` until the next second.
//!
//! `cargo run -p tower-pacer --features tonic --example tonic_client`: 30 calls from 3 tasks,
//! each made again by its caller when refused (tonic's request body is a stream the layer cannot
//! send again). The layer reads each refusal as a throttle, learns the rate and holds the next
//! calls for the pushback: every call ends served, with a few refusals in all.

#![allow(clippy::disallowed_methods)] // the server counts real seconds; the example prints real time

use pacer_core::{KeyMode, LimiterOptions};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower_layer::Layer;
use tower_pacer::PacerLayer;

/// Serves tonic's health service on a loopback port, admitting `per_second` calls in each whole
/// second since it started; the rest get `RESOURCE_EXHAUSTED` with the time to the next second
/// as `grpc-retry-pushback-ms`. Returns the server's URL.
async fn serve(per_second: u32) -> Result<String, Box<dyn std::error::Error>> {
    let (_reporter, health) = tonic_health::server::health_reporter();
    let started = Instant::now();
    let counted = Arc::new(Mutex::new((0u128, 0u32)));
    let admit = move |request: Request<()>| -> Result<Request<()>, Status> {
        let elapsed = started.elapsed();
        let second = elapsed.as_millis() / 1000;
        let mut c = counted.lock().expect("not poisoned");
        if c.0 != second {
            *c = (second, 0);
        }
        c.1 += 1;
        if c.1 <= per_second {
            return Ok(request);
        }
        let pushback = 1000 - elapsed.as_millis() % 1000;
        let mut metadata = tonic::metadata::MetadataMap::new();
        metadata.insert(
            "grpc-retry-pushback-ms",
            pushback.to_string().parse().expect("digits"),
        );
        Err(Status::with_metadata(
            Code::ResourceExhausted,
            "over 4 calls a second",
            metadata,
        ))
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        Server::builder()
            .layer(tonic::service::InterceptorLayer::new(admit))
            .add_service(health)
            .serve_with_incoming(incoming),
    );
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = serve(4).await?;
    let channel = Channel::from_shared(url)?.connect().await?;
    // The library's defaults (no limit until the server first refuses), one endpoint per gRPC
    // service: a tonic call's URI is its path alone (the channel adds the origin after the
    // layer), so the key is `/grpc.health.v1.Health`.
    let layer = PacerLayer::builder(LimiterOptions::default())
        .endpoint_key(KeyMode::HostAndFirstSegment)
        .build()?;
    let client = HealthClient::new(layer.layer(channel));

    let refused = Arc::new(AtomicU32::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let mut client = client.clone();
        let refused = Arc::clone(&refused);
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                loop {
                    match client.check(HealthCheckRequest::default()).await {
                        Ok(_) => break,
                        Err(status) if status.code() == Code::ResourceExhausted => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(status) => return Err(status),
                    }
                }
            }
            Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let took = started.elapsed();
    println!(
        "30 calls served in {:.1} s ({:.1} a second; the server admits 4), {} refused on the way",
        took.as_secs_f64(),
        30.0 / took.as_secs_f64().max(f64::EPSILON),
        refused.load(Ordering::Relaxed)
    );
    if let Some(limiter) = layer.limiter("/grpc.health.v1.Health") {
        println!(
            "the layer paces the health service at {:.0} calls a minute, after {} cuts",
            limiter.rate, limiter.decreases
        );
    }
    Ok(())
}
