//! The network: how long a response takes to come back.
//!
//! The server decides a request the moment it is sent; its response reaches the client a round
//! trip later, drawn uniformly from 50 to 200 ms (whole microseconds). The latency of an attempt
//! is a hash of the random seed, the request and the attempt number, not a draw from a shared stream, so
//! every mode sees the same latency for the same attempt of the same request, whatever else it
//! sent before.

use super::demand::splitmix64;
use std::time::Duration;

/// The shortest round trip.
pub const MIN_LATENCY: Duration = Duration::from_millis(50);
/// The longest round trip.
pub const MAX_LATENCY: Duration = Duration::from_millis(200);

/// The round trip of attempt `attempt` (1-based) of request `request` under `seed`.
#[must_use]
pub fn latency(seed: u64, request: u32, attempt: u32) -> Duration {
    let key =
        splitmix64(seed ^ 0x6c61_7465_6e63_7900) ^ (u64::from(request) << 8) ^ u64::from(attempt);
    let span = (MAX_LATENCY - MIN_LATENCY).as_micros() as u64 + 1;
    MIN_LATENCY + Duration::from_micros(splitmix64(key) % span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_stay_in_range_vary_and_repeat() {
        let all: Vec<Duration> = (0..10_000).map(|r| latency(42, r, 1)).collect();
        assert!(
            all.iter()
                .all(|&l| (MIN_LATENCY..=MAX_LATENCY).contains(&l))
        );
        let mean = all.iter().sum::<Duration>().as_secs_f64() / all.len() as f64;
        assert!((mean - 0.125).abs() < 0.003, "{mean}");
        assert_eq!(latency(42, 7, 2), latency(42, 7, 2));
        assert_ne!(latency(42, 7, 2), latency(42, 7, 3));
        assert_ne!(latency(42, 7, 2), latency(43, 7, 2));
    }
}
