//! The middleware's own cost per request, without a network: the chain ends in a stub that
//! answers at once. Plain chain (stub only), Pacer in front of it (limits far above the load),
//! and a governor middleware in front of it, in one group.
//!
//! Run: `cargo bench -p reqwest-pacer --bench overhead`

use criterion::{Criterion, criterion_group, criterion_main};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};

#[path = "../examples/support/mod.rs"]
mod support;

use support::{GovernorMiddleware, Stub, far_above};

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let pacer = PacerMiddleware::builder()
        .limiter("bench", LimiterConfig::new(far_above()))
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let plain = ClientBuilder::new(client.clone()).with(Stub).build();
    let paced = ClientBuilder::new(client.clone())
        .with(pacer)
        .with(Stub)
        .build();
    let governed = ClientBuilder::new(client)
        .with(GovernorMiddleware::unlimited())
        .with(Stub)
        .build();

    let mut g = c.benchmark_group("middleware_overhead");
    for (name, client) in [
        ("plain", &plain),
        ("pacer", &paced),
        ("governor", &governed),
    ] {
        let client: &ClientWithMiddleware = client;
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    client
                        .get("http://api.example.test/orders/1")
                        .send()
                        .await
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
