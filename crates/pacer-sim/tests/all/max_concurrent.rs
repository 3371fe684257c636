//! `MaxConcurrent` from a configuration file, through `compare`: the simulator's round trips take
//! 50 to 200 ms (125 ms on average), so one request in flight at a time sends about 8 a second
//! (480 a minute) however much more is asked, and the rest wait out their `MaxWait`; the cap is
//! each process's, not divided between the instances.

use clap::Parser;
use pacer_sim::cli::{Cli, execute};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A number for each file written, so that tests running at once write files of their own.
static FILES: AtomicUsize = AtomicUsize::new(0);

/// The CSV rows of `compare` for `limiter` of a file holding one limiter capped at one request
/// in flight and one without a cap, beside `none`: `(mode, throughput, rejected, p95_wait_s)`.
fn rows(limiter: &str, instances: &str) -> Vec<(String, f64, u64, f64)> {
    let dir = std::env::temp_dir().join(format!("pacer-sim-max-concurrent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.toml", FILES.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(
        &file,
        "[adaptive_rate_limiting.limiters.one-in-flight]\nmax_concurrent = 1\n\n\
         [adaptive_rate_limiting.limiters.no-cap]\n",
    )
    .unwrap();
    let args = [
        "pacer-sim",
        "compare",
        "--config",
        file.to_str().unwrap(),
        "--limiter",
        limiter,
        "--mode",
        "none",
        "--story",
        "free-run",
        "--costs",
        "one",
        "--instances",
        instances,
        "--minutes",
        "2",
        "--format",
        "csv",
    ];
    let out = execute(&Cli::try_parse_from(args).unwrap()).unwrap();
    std::fs::remove_file(&file).unwrap();
    out.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (
                f[1].to_owned(),
                f[2].parse().unwrap(),
                f[5].parse().unwrap(),
                f[7].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn one_request_in_flight_holds_an_instance_to_about_eight_a_second() {
    // 2,000 one-unit requests a minute asked, a quota of 3,000: without a cap all go.
    let free = rows("no-cap", "1");
    assert_eq!(free[0].0, "none");
    assert_eq!(free[1].0, "no-cap");
    assert_eq!(free[1].1, free[0].1, "no cap: what no limiter sends");
    assert!(free[1].1 > 1_900.0, "{free:?}");
    assert_eq!((free[1].2, free[1].3), (0, 0.0));

    let capped = rows("one-in-flight", "1");
    let (_, throughput, rejected, p95_wait) = capped[1];
    // One at a time over round trips of 125 ms on average: 480 a minute (never above 1,200, the
    // fastest round trip's pace).
    assert!((440.0..=520.0).contains(&throughput), "{capped:?}");
    // The rest waited for a slot, up to MaxWait (30 s), and were refused then.
    assert!(rejected > 1_000, "{capped:?}");
    assert_eq!(p95_wait, 30.0);
}

#[test]
fn the_cap_is_each_process_s_not_divided_between_them() {
    let one = rows("one-in-flight", "1")[1].1;
    let two = rows("one-in-flight", "2")[1].1;
    assert!((two / one - 2.0).abs() < 0.1, "{one} → {two}");
}
