//! A batch of chat requests run against a model API, with a progress bar and a summary.
//!
//! The batch is a JSONL file in the shape of OpenAI's Batch API input: one request a line,
//! `{"custom_id": …, "method": "POST", "url": "/v1/chat/completions", "body": {"model": …,
//! "messages": […], "max_tokens": …}}`. Each request goes through Pacer with its tokens told
//! ([`TokenCost`]: the prompt, estimated at 4 characters a token, and `max_tokens`;
//! [`OutputTokens`]: `max_tokens`), and its answer's body is read to its end, so its `usage`
//! settles the reservation. Answers are written as JSONL (`custom_id`, `status`, `usage` or
//! `error`); a request Pacer would hold too long, or one whose attempts all met a 429, goes back
//! to the end of the batch. Nothing is dropped: a line that ends in an error is written with it.
//!
//! Several processes on one API key share its budgets through a fleet in Redis (`--redis`):
//! the fleet's live count tells each process its part of the tokens the server reports.
//!
//! Run, with a model API on loopback (`pacer-sim serve --llm` counts tokens as OpenAI says it
//! does, 10 times faster than the clock here):
//!
//! ```text
//! cargo run --release -p pacer-sim -- serve --llm --speed 10 --port 8080 &
//! cargo run --release --example llm_batch --features redis -- make --lines 200 > batch.jsonl
//! cargo run --release --example llm_batch --features redis -- run batch.jsonl \
//!     --url http://127.0.0.1:8080 --redis redis://127.0.0.1:6379 --out answers.jsonl
//! ```
//!
//! Against OpenAI itself: `--url https://api.openai.com`, with the key in `OPENAI_API_KEY`.
//! Lines whose `url` is Anthropic's `/v1/messages` (`make --api anthropic` writes them) go with
//! the key in `ANTHROPIC_API_KEY` and its `anthropic-version`, to `--url https://api.anthropic.com`
//! or to `pacer-sim serve --llm anthropic`.
//!
//! What to expect: a bar that fills as answers come, and at the end the requests sent, the
//! tokens the answers used and how fast, Pacer's waits and the 429s met; against `pacer-sim
//! serve`, the server's own count too. `docs/llm.md` has the figures of four processes.
#![allow(clippy::disallowed_methods)] // a command-line program reads the clock

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use pacer::redis::RedisFleetStore;
use pacer::{
    FleetOptions, LimiterConfig, LimiterOptions, MaxWait, OutputTokens, PacerErrorExt,
    PacerMiddleware, PacerResponseExt, TokenCost,
};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Run a JSONL batch of chat requests through Pacer")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a batch of chat requests as JSONL to standard output.
    Make {
        /// How many requests.
        #[arg(long, default_value_t = 200)]
        lines: u32,
        /// Seeds the prompts' lengths and words.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The model each request names (default gpt-4o-mini, or claude-sonnet-4-5 with
        /// `--api anthropic`).
        #[arg(long)]
        model: Option<String>,
        /// Each request's `max_tokens`.
        #[arg(long, default_value_t = 1_000)]
        max_tokens: u64,
        /// Whose API the lines are for: openai (`/v1/chat/completions`) or anthropic
        /// (`/v1/messages`).
        #[arg(long, default_value = "openai", value_parser = ["openai", "anthropic"])]
        api: String,
    },
    /// Send a batch and write the answers.
    Run {
        /// The batch, one request a line.
        batch: PathBuf,
        /// The API's base URL: each line's `url` is appended to it.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// Share the API's budgets with the other processes on this Redis.
        #[arg(long)]
        redis: Option<String>,
        /// Without Redis: how many processes run the batch on this key (each keeps its part).
        #[arg(long, default_value_t = 1, conflicts_with = "redis")]
        instances: u32,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 8)]
        workers: usize,
        /// Where to write the answers (JSONL); none written without it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop taking new requests after this many seconds; the rest are written as not sent.
        #[arg(long = "for", value_name = "SECS")]
        run_for: Option<f64>,
        /// The longest Pacer may hold a request before it goes back to the batch.
        #[arg(long, default_value_t = 120)]
        max_wait_s: u64,
    },
}

/// A line of the batch, as OpenAI's Batch API takes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    custom_id: String,
    #[serde(default = "post")]
    method: String,
    url: String,
    body: Value,
}

fn post() -> String {
    "POST".to_owned()
}

/// A line's answer, as the output file holds it.
#[derive(Debug, Serialize)]
struct Answered {
    custom_id: String,
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The tokens OpenAI counts for a request when it comes: its prompt, at 4 characters a token
/// (its rule of thumb; its tokenizer differs by a few percent, and each answer's `usage`
/// settles the difference), and its `max_tokens`, which it reserves in full.
fn tokens_of(body: &Value) -> (u64, Option<u64>) {
    let text_len = |content: &Value| -> u64 {
        match content {
            Value::String(s) => s.len() as u64,
            // Content parts: their texts.
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(|s| s.len() as u64)
                .sum(),
            _ => 0,
        }
    };
    let messages: u64 = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| m.get("content").map_or(0, text_len).div_ceil(4))
                .sum()
        })
        .unwrap_or(0);
    // Anthropic's system prompt is a field of its own.
    let prompt = messages + body.get("system").map_or(0, text_len).div_ceil(4);
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64));
    (prompt, max_tokens)
}

#[derive(Debug, Default)]
struct Tally {
    sent: u64,
    done: u64,
    failed: u64,
    throttled: u64,
    requeued: u64,
    tokens: u64,
    waited: Duration,
}

struct Batch {
    lines: Vec<Line>,
    queue: Mutex<VecDeque<usize>>,
    tally: Mutex<Tally>,
    out: Mutex<Option<BufWriter<std::fs::File>>>,
    bar: ProgressBar,
    until: Option<Instant>,
}

impl Batch {
    fn next(&self) -> Option<usize> {
        if self.until.is_some_and(|t| Instant::now() >= t) {
            return None;
        }
        self.queue.lock().expect("not poisoned").pop_front()
    }

    fn again(&self, i: usize) {
        self.tally.lock().expect("not poisoned").requeued += 1;
        self.queue.lock().expect("not poisoned").push_back(i);
    }

    fn write(&self, answered: &Answered) {
        if let Some(out) = self.out.lock().expect("not poisoned").as_mut() {
            serde_json::to_writer(&mut *out, answered).expect("plain data serializes");
            out.write_all(b"\n")
                .expect("the output file takes the line");
        }
    }

    fn show(&self) {
        let t = self.tally.lock().expect("not poisoned");
        self.bar.set_position(t.done + t.failed);
        self.bar.set_message(format!(
            "{} tokens, {} 429s, {} back in the queue",
            t.tokens, t.throttled, t.requeued
        ));
    }
}

/// What a request used, from its answer's `usage`: OpenAI's `total_tokens`, or Anthropic's
/// `input_tokens` and `output_tokens`.
fn used_tokens(usage: &Value) -> u64 {
    let field = |k: &str| usage.get(k).and_then(Value::as_u64);
    field("total_tokens")
        .unwrap_or_else(|| field("input_tokens").unwrap_or(0) + field("output_tokens").unwrap_or(0))
}

async fn worker(batch: Arc<Batch>, client: ClientWithMiddleware, base: String, max_wait: Duration) {
    let openai_key = std::env::var("OPENAI_API_KEY").ok();
    let anthropic_key = std::env::var("ANTHROPIC_API_KEY").ok();
    while let Some(i) = batch.next() {
        let line = &batch.lines[i];
        let (prompt, max_tokens) = tokens_of(&line.body);
        let method = line.method.parse().unwrap_or(reqwest::Method::POST);
        let mut request = client
            .request(method, format!("{base}{}", line.url))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&line.body).expect("a JSON value serializes"))
            .with_extension(TokenCost(prompt + max_tokens.unwrap_or(0)))
            .with_extension(MaxWait(max_wait));
        if let Some(m) = max_tokens {
            request = request.with_extension(OutputTokens(m));
        }
        if line.url.ends_with("/v1/messages") {
            request = request.header("anthropic-version", "2023-06-01");
            if let Some(key) = &anthropic_key {
                request = request.header("x-api-key", key);
            }
        } else if let Some(key) = &openai_key {
            request = request.bearer_auth(key);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_rejected() => {
                // Held too long: back to the end of the batch, to go when the budgets allow.
                batch.again(i);
                continue;
            }
            Err(e) => {
                batch.tally.lock().expect("not poisoned").failed += 1;
                batch.write(&Answered {
                    custom_id: line.custom_id.clone(),
                    status: None,
                    usage: None,
                    error: Some(e.to_string()),
                });
                batch.show();
                continue;
            }
        };
        let status = response.status();
        let paced = response.paced().cloned();
        // Read to its end: the body's `usage` settles the reservation.
        let body = response.text().await.unwrap_or_default();
        {
            let mut t = batch.tally.lock().expect("not poisoned");
            if let Some(p) = &paced {
                t.sent += u64::from(p.attempts());
                t.waited += p.waited();
                // Every attempt but a success's last met a throttle.
                t.throttled +=
                    u64::from(p.attempts().saturating_sub(u32::from(status.is_success())));
            }
        }
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            batch.again(i);
        } else {
            let value: Option<Value> = serde_json::from_str(&body).ok();
            let usage = value.as_ref().and_then(|v| v.get("usage")).cloned();
            let used = usage.as_ref().map_or(0, used_tokens);
            {
                let mut t = batch.tally.lock().expect("not poisoned");
                t.tokens += used;
                if status.is_success() {
                    t.done += 1;
                } else {
                    t.failed += 1;
                }
            }
            batch.write(&Answered {
                custom_id: line.custom_id.clone(),
                status: Some(status.as_u16()),
                usage,
                error: (!status.is_success()).then_some(body),
            });
        }
        batch.show();
    }
}

fn read_batch(path: &PathBuf) -> Result<Vec<Line>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut lines = Vec::new();
    for (n, text) in std::io::BufReader::new(file).lines().enumerate() {
        let text = text.map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}: not a batch line: {e}", path.display(), n + 1))?;
        if !line.body.is_object() {
            return Err(format!(
                "{}:{}: `body` is not an object",
                path.display(),
                n + 1
            ));
        }
        lines.push(line);
    }
    Ok(lines)
}

/// Writes `lines` requests of 300 to 1,500 tokens of prompt, from words drawn by a seeded
/// generator.
fn make(lines: u32, seed: u64, model: &str, max_tokens: u64, api: &str) {
    const WORDS: [&str; 12] = [
        "order",
        "invoice",
        "customer",
        "refund",
        "shipment",
        "delay",
        "the",
        "of",
        "and",
        "a",
        "summarise",
        "classify",
    ];
    let mut state = seed;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for i in 0..lines {
        let chars = 1_200 + next() % 4_801;
        let mut content = String::with_capacity(chars as usize + 16);
        while (content.len() as u64) < chars {
            content.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
            content.push(' ');
        }
        let line = Line {
            custom_id: format!("request-{}", i + 1),
            method: post(),
            url: if api == "anthropic" {
                "/v1/messages"
            } else {
                "/v1/chat/completions"
            }
            .to_owned(),
            body: serde_json::json!({
                "model": model,
                "messages": [{"role": "user", "content": content}],
                "max_tokens": max_tokens,
            }),
        };
        serde_json::to_writer(&mut out, &line).expect("plain data serializes");
        out.write_all(b"\n")
            .expect("standard output takes the line");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (batch_path, url, redis, instances, workers, out, run_for, max_wait_s) =
        match Cli::parse().command {
            Command::Make {
                lines,
                seed,
                model,
                max_tokens,
                api,
            } => {
                let model = model.unwrap_or_else(|| {
                    if api == "anthropic" {
                        "claude-sonnet-4-5"
                    } else {
                        "gpt-4o-mini"
                    }
                    .to_owned()
                });
                make(lines, seed, &model, max_tokens, &api);
                return Ok(());
            }
            Command::Run {
                batch,
                url,
                redis,
                instances,
                workers,
                out,
                run_for,
                max_wait_s,
            } => (
                batch, url, redis, instances, workers, out, run_for, max_wait_s,
            ),
        };
    let lines = read_batch(&batch_path)?;
    if workers == 0 {
        return Err("--workers 0: at least one request must be in flight".into());
    }
    let base = url.trim_end_matches('/').to_owned();

    if instances == 0 {
        return Err("--instances 0: at least this process runs the batch".into());
    }
    let mut options = LimiterOptions::default();
    options.instance_count = instances;
    let mut config = LimiterConfig::new(options);
    if let Some(redis) = &redis {
        let fleet = RedisFleetStore::connect(redis)
            .await
            .map_err(|e| format!("cannot reach Redis at {redis}: {e}"))?;
        config = config.fleet(Arc::new(fleet), FleetOptions::default());
    }
    let pacer = PacerMiddleware::builder()
        .limiter("model-api", config)
        .build()?;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();

    let bar = ProgressBar::new(lines.len() as u64);
    bar.set_style(ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {pos}/{len} answered, {msg}",
    )?);
    let out = match &out {
        Some(path) => Some(BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        )),
        None => None,
    };
    let started = Instant::now();
    let batch = Arc::new(Batch {
        queue: Mutex::new((0..lines.len()).collect()),
        lines,
        tally: Mutex::new(Tally::default()),
        out: Mutex::new(out),
        bar,
        until: run_for.map(|s| started + Duration::from_secs_f64(s)),
    });
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            tokio::spawn(worker(
                Arc::clone(&batch),
                client.clone(),
                base.clone(),
                Duration::from_secs(max_wait_s),
            ))
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    batch.bar.finish();
    let elapsed = started.elapsed();

    // What was never sent (a run cut by --for) is written too: nothing is lost.
    let unsent: Vec<usize> = batch
        .queue
        .lock()
        .expect("not poisoned")
        .drain(..)
        .collect();
    for &i in &unsent {
        batch.write(&Answered {
            custom_id: batch.lines[i].custom_id.clone(),
            status: None,
            usage: None,
            error: Some("not sent: the run ended first".to_owned()),
        });
    }
    if let Some(out) = batch.out.lock().expect("not poisoned").as_mut() {
        out.flush()?;
    }

    let t = std::mem::take(&mut *batch.tally.lock().expect("not poisoned"));
    let minutes = elapsed.as_secs_f64() / 60.0;
    println!(
        "{} answered ({} failed, {} not sent) in {:.1} s: {} sends, {} tokens used ({:.0} a \
         minute), {} 429s met, {} back in the queue; Pacer held the requests {:.1} s in all \
         ({:.2} s each on average)",
        t.done,
        t.failed,
        unsent.len(),
        elapsed.as_secs_f64(),
        t.sent,
        t.tokens,
        t.tokens as f64 / minutes,
        t.throttled,
        t.requeued,
        t.waited.as_secs_f64(),
        t.waited.as_secs_f64() / t.sent.max(1) as f64,
    );
    // A `pacer-sim serve` says what it counted.
    if let Ok(r) = reqwest::get(format!("{base}/stats")).await
        && let Ok(text) = r.text().await
        && let Ok(stats) = serde_json::from_str::<Value>(&text)
        && stats.get("server").and_then(Value::as_str) == Some("pacer-sim")
    {
        println!("the server counted: {stats}");
    }
    Ok(())
}
