//! The memory of one queued waiter: what the limiter holds for it (its queue entry and its wake
//! slot), measured as the growth of resident memory while a million waiters join the queue, plus
//! the `Acquire` future the caller holds (measured with `size_of`).
//!
//! Run: `cargo run --release -p pacer-core --example waiter_memory`

use pacer_core::{Acquire, Limiter, LimiterOptions};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

/// Resident memory in bytes, from `/proc/self/statm` (pages × 4 KiB).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    const N: usize = 1_000_000;
    let mut o = LimiterOptions::default();
    // A rate so low that nobody is served while the queue fills.
    o.initial_units_per_minute = Some(1e-6);
    o.min_units_per_minute = 1e-6;
    o.max_units_per_minute = 1e-6;
    o.queue_limit = N;
    o.max_wait = std::time::Duration::MAX;
    let limiter = Limiter::new(o).unwrap();
    while limiter.try_acquire(1).is_ok() {}
    let mut futures: Vec<Pin<Box<Acquire<'_>>>> = Vec::with_capacity(N);
    for _ in 0..N {
        futures.push(Box::pin(limiter.acquire(1)));
    }
    let mut cx = Context::from_waker(Waker::noop());
    let before = rss();
    for f in &mut futures {
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    let after = rss();
    assert_eq!(limiter.snapshot().queue_len, N);
    let held = after.saturating_sub(before) as f64 / N as f64;
    let future = std::mem::size_of::<Acquire<'_>>();
    println!(
        "{{\"waiters\":{N},\"limiter_bytes_per_waiter\":{held:.1},\"acquire_future_bytes\":{future},\"total_bytes_per_waiter\":{:.1}}}",
        held + future as f64
    );
    drop(futures);
    assert_eq!(limiter.snapshot().queue_len, 0);
}
