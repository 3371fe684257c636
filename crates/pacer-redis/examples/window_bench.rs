//! Drives `try` against Redis and prints one JSON line: throughput, Redis time per call, denials.
//!
//! ```text
//! cargo run --release -p pacer-redis --example window_bench -- \
//!     --frames 1000 --frame-length-us 2000 --width 16 --keys 1000 --requests 100000 \
//!     --clients 50 --limit 10 [--count 1] [--url redis://127.0.0.1:6379] [--threads 1]
//! ```
//!
//! Each of the C clients has its own connection (as `redis-benchmark -c C` does) and sends one
//! call at a time; request i goes to key `i mod K`, like the discrete-window Redis library's benchmark, which walked its
//! keys round-robin. Before the run the bench loads the library on every connection, deletes
//! its old keys and runs `CONFIG RESETSTAT`; after it, `INFO commandstats` gives
//! `cmdstat_fcall`'s `usec_per_call`: the Redis time of one call, free of network and client
//! costs. **`CONFIG RESETSTAT` clears the server's statistics: point the bench at a Redis of your
//! own.**

#[path = "common/flags.rs"]
mod flags;

use flags::Flags;
use pacer_core::{Clock, RealClock, WindowGeometry, WindowStore};
use pacer_redis::RedisWindowStore;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Args {
    url: String,
    frames: u32,
    frame_length_us: u64,
    width: u8,
    keys: u64,
    requests: u64,
    clients: usize,
    limit: u64,
    count: u64,
    threads: usize,
    prefix: String,
}

fn parse() -> Result<Args, String> {
    let mut flags = Flags::parse()?;
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let args = Args {
        url: flags.get("url", Some(url))?,
        frames: flags.get("frames", None)?,
        frame_length_us: flags.get("frame-length-us", None)?,
        width: flags.get("width", None)?,
        keys: flags.get("keys", None)?,
        requests: flags.get("requests", None)?,
        clients: flags.get("clients", None)?,
        limit: flags.get("limit", None)?,
        count: flags.get("count", Some(1))?,
        threads: flags.get("threads", Some(1))?,
        prefix: flags.get("prefix", Some("pacer:bench:".to_owned()))?,
    };
    flags.finish()?;
    if args.keys == 0 || args.clients == 0 || args.threads == 0 {
        return Err("--keys, --clients and --threads must be positive".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("window_bench: {e}");
            std::process::exit(2);
        }
    };
    let mut builder = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(args.threads);
        b
    };
    let rt = builder.enable_all().build().expect("a tokio runtime");
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("window_bench: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let g = WindowGeometry::new(
        args.frames,
        Duration::from_micros(args.frame_length_us),
        args.width,
    )?;
    let mut stores = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let store = RedisWindowStore::builder()
            .key_prefix(&args.prefix)
            .response_timeout(Duration::from_secs(5))
            .connect(&args.url)
            .await?;
        store.load_library().await?;
        stores.push(Arc::new(store));
    }
    let mut conn = stores[0].connection();
    delete_keys(&mut conn, &args.prefix).await?;
    let keys: Arc<Vec<String>> = Arc::new((0..args.keys).map(|k| k.to_string()).collect());
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await?;

    let next = Arc::new(AtomicU64::new(0));
    let denied = Arc::new(AtomicU64::new(0));
    let clock = RealClock::new();
    let start = clock.now();
    let mut tasks = Vec::new();
    for store in &stores {
        let (store, keys, next, denied) =
            (store.clone(), keys.clone(), next.clone(), denied.clone());
        let (requests, limit, count) = (args.requests, args.limit, args.count);
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    return Ok::<(), pacer_core::WindowError>(());
                }
                let key = &keys[(i % keys.len() as u64) as usize];
                let r = store.try_take(key, g, limit, count).await?;
                if r.taken == 0 {
                    denied.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = clock.now().saturating_duration_since(start).as_secs_f64();

    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await?;
    let fcall = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_fcall:"))
        .ok_or("no cmdstat_fcall in INFO commandstats")?;
    let stat = |name: &str| -> Option<f64> {
        fcall
            .split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    let used_memory: String = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(stores[0].redis_key("0"))
        .query_async::<Option<i64>>(&mut conn)
        .await?
        .map_or("null".into(), |m| m.to_string());
    delete_keys(&mut conn, &args.prefix).await?;

    println!(
        "{{\"frames\":{},\"frame_length_us\":{},\"width\":{},\"keys\":{},\"requests\":{},\"clients\":{},\"limit\":{},\"count\":{},\"elapsed_s\":{:.3},\"ops_per_sec\":{:.0},\"server_usec_per_call\":{:.2},\"fcall_calls\":{},\"denied_fraction\":{:.4},\"key_memory_bytes\":{}}}",
        args.frames,
        args.frame_length_us,
        args.width,
        args.keys,
        args.requests,
        args.clients,
        args.limit,
        args.count,
        elapsed,
        args.requests as f64 / elapsed,
        stat("usec_per_call").unwrap_or(f64::NAN),
        stat("calls").unwrap_or(f64::NAN),
        denied.load(Ordering::Relaxed) as f64 / args.requests as f64,
        used_memory,
    );
    Ok(())
}

async fn delete_keys(
    conn: &mut pacer_redis::RedisConnection,
    prefix: &str,
) -> Result<(), redis::RedisError> {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await?;
        if !keys.is_empty() {
            let _: i64 = redis::cmd("DEL").arg(&keys).query_async(conn).await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
