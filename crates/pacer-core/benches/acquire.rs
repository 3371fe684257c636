//! Uncontended `acquire` (units available, no wait) beside governor's direct `check()`.
//!
//! Run: `cargo bench -p pacer-core --bench acquire`

use criterion::{Criterion, criterion_group, criterion_main};
use governor::{Quota, RateLimiter};
use pacer_core::{Clock, Limiter, LimiterCore, LimiterOptions, RealClock};
use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Limits far above the load: the bucket never runs dry.
fn options() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(6e12);
    o.min_units_per_minute = 6e12;
    o.max_units_per_minute = 6e12;
    o
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("acquire_uncontended");

    let governor = RateLimiter::direct(Quota::per_second(NonZeroU32::MAX));
    g.bench_function("governor_check", |b| b.iter(|| black_box(governor.check())));

    let limiter = Limiter::new(options()).unwrap();
    g.bench_function("pacer_try_acquire", |b| {
        b.iter(|| black_box(limiter.try_acquire(black_box(1))))
    });

    let mut cx = Context::from_waker(Waker::noop());
    g.bench_function("pacer_acquire_future", |b| {
        b.iter(|| {
            let fut = pin!(limiter.acquire(black_box(1)));
            match fut.poll(&mut cx) {
                Poll::Ready(r) => black_box(r),
                Poll::Pending => unreachable!("units are available"),
            }
        })
    });

    let clock = RealClock::new();
    let mut core = LimiterCore::new(options(), clock.now()).unwrap();
    g.bench_function("pacer_core_acquire", |b| {
        b.iter(|| black_box(core.acquire(black_box(1), clock.now())))
    });
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
