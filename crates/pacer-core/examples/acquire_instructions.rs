//! Runs N uncontended acquisitions of one kind and nothing else, for instruction counts under
//! `valgrind --tool=callgrind` (which the load of a shared machine does not change):
//! `acquire_instructions pacer_try|pacer_future|pacer_core|governor N`.

use governor::{Quota, RateLimiter};
use pacer_core::{Clock, Limiter, LimiterCore, LimiterOptions, RealClock};
use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

fn options() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(6e12);
    o.min_units_per_minute = 6e12;
    o.max_units_per_minute = 6e12;
    o
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "pacer_try".into());
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    match which.as_str() {
        "governor" => {
            let g = RateLimiter::direct(Quota::per_second(NonZeroU32::MAX));
            for _ in 0..n {
                let _ = black_box(g.check());
            }
        }
        "pacer_core" => {
            let clock = RealClock::new();
            let mut core = LimiterCore::new(options(), clock.now()).unwrap();
            for _ in 0..n {
                let _ = black_box(core.acquire(1, clock.now()));
            }
        }
        "pacer_future" => {
            let limiter = Limiter::new(options()).unwrap();
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..n {
                let fut = pin!(limiter.acquire(1));
                match fut.poll(&mut cx) {
                    Poll::Ready(r) => drop(black_box(r)),
                    Poll::Pending => unreachable!("units are available"),
                }
            }
        }
        _ => {
            let limiter = Limiter::new(options()).unwrap();
            for _ in 0..n {
                let _ = black_box(limiter.try_acquire(1));
            }
        }
    }
}
