//! Strictness across processes: 4 processes × 8 tasks hammer one key for a few seconds; every
//! grant is logged with the Redis time of the call that granted it; then every span of N frames
//! is checked against the limit.
//!
//! The children are this test binary itself, running `strictness_worker` with its
//! configuration in an environment variable. Run on its own, `strictness_worker` does a short
//! round in one process and checks it the same way.

use crate::harness;
use pacer_core::{Clock, RealClock, WindowGeometry, WindowStore};
use pacer_redis::RedisWindowStore;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const WORKER_ENV: &str = "PACER_STRICTNESS_WORKER";
const LIMIT: u64 = 20;

fn geometry() -> WindowGeometry {
    // 10 frames of 5 ms: at most 20 events in any 50 ms.
    WindowGeometry::new(10, Duration::from_millis(5), 8).unwrap()
}

/// What a worker does: `url|prefix|tasks|millis`.
struct Work {
    url: String,
    prefix: String,
    tasks: usize,
    millis: u64,
}

impl Work {
    fn encode(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.url, self.prefix, self.tasks, self.millis
        )
    }

    fn decode(s: &str) -> Work {
        let parts: Vec<&str> = s.split('|').collect();
        Work {
            url: parts[0].to_owned(),
            prefix: parts[1].to_owned(),
            tasks: parts[2].parse().unwrap(),
            millis: parts[3].parse().unwrap(),
        }
    }
}

/// Hammers the key; returns the grants as (Redis µs, count).
async fn hammer(work: &Work) -> Vec<(u64, u64)> {
    let store = Arc::new(
        RedisWindowStore::builder()
            .key_prefix(&work.prefix)
            .connect(&work.url)
            .await
            .expect("connect"),
    );
    let clock = RealClock::new();
    let end = clock.now() + Duration::from_millis(work.millis);
    let mut tasks = Vec::new();
    for t in 0..work.tasks {
        let store = store.clone();
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut grants = Vec::new();
            let mut i = t as u64;
            while clock.now() < end {
                let count = 1 + i % 3;
                i += 1;
                let r = store
                    .try_take("hot", geometry(), LIMIT, count)
                    .await
                    .expect("try");
                if r.taken > 0 {
                    grants.push((r.now.as_micros(), r.taken));
                } else {
                    tokio::time::sleep(r.wait().min(Duration::from_millis(20))).await;
                }
            }
            grants
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("task"));
    }
    all
}

/// Every span of N frames holds at most `LIMIT` granted events; returns the number of events.
fn check(mut grants: Vec<(u64, u64)>) -> u64 {
    let span = geometry().window().as_micros() as u64;
    grants.sort_unstable();
    let mut start = 0;
    let mut in_window = 0;
    for i in 0..grants.len() {
        let (t, count) = grants[i];
        in_window += count;
        while grants[start].0 + span <= t {
            in_window -= grants[start].1;
            start += 1;
        }
        assert!(
            in_window <= LIMIT,
            "{in_window} events in the {span} µs ending at {t} (limit {LIMIT})"
        );
    }
    grants.iter().map(|(_, count)| count).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strictness_worker() {
    match std::env::var(WORKER_ENV) {
        Ok(config) => {
            for (t, count) in hammer(&Work::decode(&config)).await {
                println!("GRANT {t} {count}");
            }
        }
        Err(_) => {
            let work = Work {
                url: harness::url().to_owned(),
                prefix: harness::unique_prefix(),
                tasks: 4,
                millis: 300,
            };
            let grants = hammer(&work).await;
            assert!(check(grants) > 0);
            let mut conn = harness::connection(&work.url).await;
            harness::delete_prefix(&mut conn, &work.prefix).await;
        }
    }
}

#[test]
fn four_processes_of_eight_tasks_never_exceed_the_limit() {
    let work = Work {
        url: harness::url().to_owned(),
        prefix: harness::unique_prefix(),
        tasks: 8,
        millis: 3_000,
    };
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "strictness::strictness_worker", "--nocapture"])
                .args(["--test-threads", "1"])
                .env(WORKER_ENV, work.encode())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let mut grants = Vec::new();
    for child in children {
        let out = child.wait_with_output().expect("a worker");
        assert!(out.status.success(), "a worker failed: {:?}", out.status);
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let before = grants.len();
        grants.extend(text.lines().filter_map(|l| {
            let mut w = l.strip_prefix("GRANT ")?.split(' ');
            Some((
                w.next()?.parse::<u64>().ok()?,
                w.next()?.parse::<u64>().ok()?,
            ))
        }));
        assert!(grants.len() > before, "a worker granted nothing:\n{text}");
    }
    let n = check(grants);
    // Non-vacuous: several windows' worth of events, so events did leave and get replaced
    // (the most the window allows in 3 s is about 1,100).
    assert!(n > 3 * LIMIT, "only {n} events granted in 3 s");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = harness::connection(&work.url).await;
        harness::delete_prefix(&mut conn, &work.prefix).await;
    });
}
