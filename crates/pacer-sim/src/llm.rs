//! The `llm-batch` story: a batch of chat requests run by several processes against a model
//! API that limits requests and tokens a minute ([`LlmApi`], OpenAI's rules and fields).
//!
//! Each instance works through its own endless batch with [`LlmOptions::workers`] requests at a
//! time; a line's prompt is 300 to 1,500 tokens and its answer 50 to 600, asked with a
//! `max_tokens` of [`LlmOptions::max_tokens`]. An answer takes 0.3 s and 10 ms a token it
//! produces, plus the round trip; a refusal the round trip. Three modes run the same lines:
//!
//! - `naive`: the retry loop of OpenAI's cookbook (tenacity's `wait_random_exponential`, 1 s
//!   to 60 s): no limiter, a 429 waits a random time up to 2^attempt seconds and sends again.
//! - `requests`: Pacer with the library's defaults, not told the tokens: it paces requests and
//!   reads the fields as every user of the middleware gets them.
//! - `budgets`: the same, told each request's tokens (`TokenCost` its prompt and `max_tokens`,
//!   `OutputTokens` the `max_tokens`) and settled from each answer's `usage`.
//!
//! Pacer's modes run the middleware's engine ([`ExchangeClient`]) on virtual time. The report
//! gives the tokens the API counted as used, as a share of the most it lets through
//! ([`LlmApi::most_tokens`]), and the 429s it sent. A line refused by Pacer (its wait past
//! `MaxWait`) or whose attempts all met a 429 goes back to the batch, as a batch job does.

use crate::SimError;
use crate::engine::Agenda;
use crate::model::{LlmApi, LlmQuota, latency, splitmix64};
use crate::modes::{Answered, ExchangeClient, Settled};
use crate::report::{Format, thousands};
use http::{HeaderMap, HeaderValue, StatusCode};
use pacer_core::{LimiterOptions, RequestChoices, Rules, Timestamp, TokenUsage};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

/// The story's name on the command line.
pub const LLM_STORY: &str = "llm-batch";

/// The story's modes, in the order they run.
pub const LLM_MODE_NAMES: [&str; 3] = ["naive", "requests", "budgets"];

/// The CSV header of the story's rows.
pub const LLM_CSV_HEADER: &str = "story,mode,sent,done,throttled,requeued,tokens,token_share";

/// How a client of the story decides when to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmMode {
    /// No limiter: the cookbook's retry loop.
    Naive,
    /// Pacer, not told the tokens.
    Requests,
    /// Pacer, told each request's tokens and settling them.
    Budgets,
}

impl LlmMode {
    /// The mode of this name, if one.
    #[must_use]
    pub fn by_name(name: &str) -> Option<LlmMode> {
        match name {
            "naive" => Some(LlmMode::Naive),
            "requests" => Some(LlmMode::Requests),
            "budgets" => Some(LlmMode::Budgets),
            _ => None,
        }
    }

    /// The mode's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LlmMode::Naive => "naive",
            LlmMode::Requests => "requests",
            LlmMode::Budgets => "budgets",
        }
    }
}

/// The settings of the story.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmOptions {
    /// Processes running the batch (`--instances`).
    pub instances: u32,
    /// Length of the run in minutes (`--minutes`).
    pub minutes: u32,
    /// The seed of the lines and latencies (`--seed`).
    pub seed: u64,
    /// The API's limits.
    pub quota: LlmQuota,
    /// Requests each process has in flight or waiting at a time.
    pub workers: u32,
    /// Each request's `max_tokens`.
    pub max_tokens: u64,
}

impl Default for LlmOptions {
    fn default() -> Self {
        LlmOptions {
            instances: 4,
            minutes: 15,
            seed: 42,
            quota: LlmQuota::default(),
            workers: 8,
            max_tokens: 1_000,
        }
    }
}

/// One mode through the story.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRow {
    /// The mode's name.
    pub mode: String,
    /// Attempts sent.
    pub sent: u64,
    /// Lines answered.
    pub done: u64,
    /// 429s the API sent.
    pub throttled: u64,
    /// Lines put back in the batch: refused by Pacer, or every attempt met a 429.
    pub requeued: u64,
    /// Tokens the API counted as used (prompts and answers of the lines answered).
    pub tokens: u64,
    /// `tokens` of the most the API lets through in the run.
    pub token_share: f64,
}

/// One line of a batch: its prompt and the answer it will get, in tokens.
#[derive(Debug, Clone, Copy)]
struct Line {
    id: u32,
    prompt: u64,
    output: u64,
}

impl Line {
    fn new(seed: u64, instance: u32, id: u32) -> Line {
        let h = splitmix64(seed ^ 0x6c6c_6d00 ^ (u64::from(instance) << 40) ^ u64::from(id));
        Line {
            id,
            prompt: 300 + h % 1_201,
            output: 50 + (h >> 32) % 551,
        }
    }

    fn key(self, instance: u32) -> u32 {
        self.id.wrapping_mul(64).wrapping_add(instance)
    }
}

#[derive(Debug)]
enum Kind {
    /// A worker takes the next line.
    Start,
    /// Pacer's waits are due to be looked at.
    Wake,
    /// The API's answer to an attempt comes back.
    Answer {
        line: Line,
        attempt: u32,
        accepted: bool,
        headers: Box<HeaderMap>,
    },
    /// The naive loop's backoff ended.
    Resend { line: Line, attempt: u32 },
}

struct Instance {
    client: Option<ExchangeClient>,
    next_id: u32,
    requeued: VecDeque<Line>,
    waiting: HashMap<u32, Line>,
    wake_at: Option<Timestamp>,
}

struct Run {
    options: LlmOptions,
    mode: LlmMode,
    api: LlmApi,
    instances: Vec<Instance>,
    /// Each event with the instance it happens to.
    agenda: Agenda<(u32, Kind)>,
    row: LlmRow,
}

/// A refused line's worker tries the batch again this much later.
const AFTER_REFUSAL: Duration = Duration::from_secs(1);

/// Runs `mode` through the story.
///
/// # Errors
///
/// [`SimError::Options`] when the library's defaults cannot build a limiter with the options.
pub fn run_llm_batch(options: &LlmOptions, mode: LlmMode) -> Result<LlmRow, SimError> {
    let mut instances = Vec::new();
    for _ in 0..options.instances {
        let client = match mode {
            LlmMode::Naive => None,
            LlmMode::Requests | LlmMode::Budgets => {
                let mut limiter = LimiterOptions::default();
                limiter.instance_count = options.instances;
                let client = ExchangeClient::new(limiter, Rules::default(), None, None, t(0.0))
                    .map_err(|e| SimError::Options(e.to_string()))?;
                Some(client)
            }
        };
        instances.push(Instance {
            client,
            next_id: 0,
            requeued: VecDeque::new(),
            waiting: HashMap::new(),
            wake_at: None,
        });
    }
    let mut run = Run {
        options: *options,
        mode,
        api: LlmApi::new(options.quota),
        instances,
        agenda: Agenda::default(),
        row: LlmRow {
            mode: mode.name().to_owned(),
            sent: 0,
            done: 0,
            throttled: 0,
            requeued: 0,
            tokens: 0,
            token_share: 0.0,
        },
    };
    for instance in 0..options.instances {
        for _ in 0..options.workers {
            run.push(t(0.0), instance, Kind::Start);
        }
    }
    let length = Duration::from_secs(u64::from(options.minutes) * 60);
    let end = t(0.0) + length;
    while let Some((at, (instance, kind))) = run.agenda.pop() {
        if at > end {
            break;
        }
        run.handle(at, instance, kind);
    }
    run.row.tokens = run.api.used();
    run.row.throttled = run.api.refused();
    run.row.token_share = run.api.used() as f64 / run.api.most_tokens(length);
    Ok(run.row)
}

fn t(secs: f64) -> Timestamp {
    Timestamp::ZERO + Duration::from_secs_f64(secs)
}

impl Run {
    fn push(&mut self, at: Timestamp, instance: u32, kind: Kind) {
        self.agenda.push(at, (instance, kind));
    }

    fn handle(&mut self, now: Timestamp, i: u32, kind: Kind) {
        match kind {
            Kind::Start => self.start(i, now),
            Kind::Wake => {
                self.instances[i as usize].wake_at = None;
                self.pump(i, now);
            }
            Kind::Resend { line, attempt } => self.send(i, line, attempt, now),
            Kind::Answer {
                line,
                attempt,
                accepted,
                headers,
            } => self.answer(i, line, attempt, accepted, &headers, now),
        }
    }

    fn choices(&self, line: Line) -> RequestChoices {
        match self.mode {
            LlmMode::Budgets => RequestChoices {
                tokens: Some(line.prompt + self.options.max_tokens),
                output_tokens: Some(self.options.max_tokens),
                ..RequestChoices::default()
            },
            _ => RequestChoices::default(),
        }
    }

    /// A worker of instance `i` takes the next line at `now`.
    fn start(&mut self, i: u32, now: Timestamp) {
        let seed = self.options.seed;
        let instance = &mut self.instances[i as usize];
        let line = instance.requeued.pop_front().unwrap_or_else(|| {
            instance.next_id += 1;
            Line::new(seed, i, instance.next_id)
        });
        let choices = self.choices(line);
        let instance = &mut self.instances[i as usize];
        if let Some(client) = &mut instance.client {
            instance.waiting.insert(line.id, line);
            client.begin_with(line.id, 1, choices, now);
            self.pump(i, now);
        } else {
            self.send(i, line, 1, now);
        }
    }

    /// Instance `i`'s waits that ended by `now` go or are refused; its next wake is set.
    fn pump(&mut self, i: u32, now: Timestamp) {
        let instance = &mut self.instances[i as usize];
        let Some(client) = &mut instance.client else {
            return;
        };
        let settled = client.settle(now);
        let next = client.next_at();
        for (id, settled) in settled {
            let line = self.instances[i as usize].waiting[&id];
            match settled {
                Settled::Go { attempt, .. } => self.send(i, line, attempt, now),
                Settled::Refused => {
                    let instance = &mut self.instances[i as usize];
                    instance.waiting.remove(&id);
                    instance.requeued.push_back(line);
                    self.row.requeued += 1;
                    self.push(now + AFTER_REFUSAL, i, Kind::Start);
                }
            }
        }
        if let Some(at) = next {
            let at = at.max(now + Duration::from_millis(1));
            let instance = &mut self.instances[i as usize];
            if instance.wake_at.is_none_or(|w| at < w) {
                instance.wake_at = Some(at);
                self.push(at, i, Kind::Wake);
            }
        }
    }

    fn send(&mut self, i: u32, line: Line, attempt: u32, now: Timestamp) {
        self.row.sent += 1;
        let answer = self.api.offer(line.prompt + self.options.max_tokens, now);
        let trip = latency(self.options.seed, line.key(i), attempt);
        let took = if answer.accepted {
            Duration::from_millis(300 + 10 * line.output) + trip
        } else {
            trip
        };
        let kind = Kind::Answer {
            line,
            attempt,
            accepted: answer.accepted,
            headers: Box::new(answer.headers),
        };
        self.push(now + took, i, kind);
    }

    fn answer(
        &mut self,
        i: u32,
        line: Line,
        attempt: u32,
        accepted: bool,
        headers: &HeaderMap,
        now: Timestamp,
    ) {
        let reserved = line.prompt + self.options.max_tokens;
        if accepted {
            self.api.complete(reserved, line.prompt + line.output, now);
            self.row.done += 1;
        }
        let instance = &mut self.instances[i as usize];
        let Some(client) = &mut instance.client else {
            if accepted {
                self.push(now, i, Kind::Start);
            } else {
                let wait = backoff(self.options.seed, line.key(i), attempt);
                let next = attempt + 1;
                self.push(
                    now + wait,
                    i,
                    Kind::Resend {
                        line,
                        attempt: next,
                    },
                );
            }
            return;
        };
        let status = if accepted {
            StatusCode::OK
        } else {
            StatusCode::TOO_MANY_REQUESTS
        };
        let mut headers = headers.clone();
        let json = HeaderValue::from_static("application/json");
        headers.insert(http::header::CONTENT_TYPE, json);
        // The middleware reads every successful answer's usage, told the tokens or not.
        let used = accepted.then(|| TokenUsage::new(line.prompt, Some(line.output)));
        match client.answered_using(line.id, status, &headers, None, used, now) {
            Answered::Retry => client.begin(line.id, 1, now),
            Answered::Done => {
                instance.waiting.remove(&line.id);
                if !accepted {
                    instance.requeued.push_back(line);
                    self.row.requeued += 1;
                }
                self.start(i, now);
            }
        }
        self.pump(i, now);
    }
}

/// The cookbook's wait after attempt `attempt` met a 429: tenacity's
/// `wait_random_exponential(min=1, max=60)`, a random time up to `2^attempt` seconds, from 1 s
/// to 60 s.
fn backoff(seed: u64, key: u32, attempt: u32) -> Duration {
    let upper = 2f64.powi(attempt.min(6) as i32).min(60.0);
    let h = splitmix64(seed ^ 0x6261_636b ^ (u64::from(key) << 8) ^ u64::from(attempt));
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    Duration::from_secs_f64((u * upper).max(1.0))
}

/// Runs each of `modes` through the story, in order.
///
/// # Errors
///
/// [`run_llm_batch`]'s.
pub fn compare_llm(options: &LlmOptions, modes: &[LlmMode]) -> Result<Vec<LlmRow>, SimError> {
    modes.iter().map(|&m| run_llm_batch(options, m)).collect()
}

/// The rows as a table, CSV ([`LLM_CSV_HEADER`]) or JSON.
#[must_use]
pub fn render_llm(options: &LlmOptions, rows: &[LlmRow], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Table => {
            let q = options.quota;
            let _ = writeln!(
                out,
                "{LLM_STORY}: {} processes × {} requests at a time, {} min, {} requests and {} \
                 tokens a minute, max_tokens {}\n",
                options.instances,
                options.workers,
                options.minutes,
                thousands(q.requests_per_minute),
                thousands(q.tokens_per_minute),
                thousands(options.max_tokens),
            );
            out.push_str("| mode | sent | done | 429s | requeued | tokens | token share |\n");
            out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
            for r in rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {:.1}% |",
                    r.mode,
                    thousands(r.sent),
                    thousands(r.done),
                    thousands(r.throttled),
                    thousands(r.requeued),
                    thousands(r.tokens),
                    r.token_share * 100.0
                );
            }
        }
        Format::Csv => {
            out.push_str(LLM_CSV_HEADER);
            out.push('\n');
            for r in rows {
                let _ = writeln!(
                    out,
                    "{LLM_STORY},{},{},{},{},{},{},{:.4}",
                    r.mode, r.sent, r.done, r.throttled, r.requeued, r.tokens, r.token_share
                );
            }
        }
        Format::Json => {
            let rows: Vec<serde_json::Value> = (rows.iter())
                .map(|r| {
                    serde_json::json!({
                        "story": LLM_STORY, "mode": r.mode, "sent": r.sent, "done": r.done,
                        "throttled": r.throttled, "requeued": r.requeued, "tokens": r.tokens,
                        "token_share": r.token_share,
                    })
                })
                .collect();
            let q = options.quota;
            let doc = serde_json::json!({
                "options": {
                    "instances": options.instances, "minutes": options.minutes,
                    "seed": options.seed, "workers": options.workers,
                    "max_tokens": options.max_tokens,
                    "requests_per_minute": q.requests_per_minute,
                    "tokens_per_minute": q.tokens_per_minute,
                },
                "rows": rows,
            });
            out = serde_json::to_string_pretty(&doc).expect("plain values");
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_use_the_tokens_without_the_429s_the_others_meet() {
        let options = LlmOptions {
            minutes: 3,
            ..LlmOptions::default()
        };
        let modes = [LlmMode::Naive, LlmMode::Requests, LlmMode::Budgets];
        let rows = compare_llm(&options, &modes).unwrap();
        let [naive, requests, budgets] = &rows[..] else {
            panic!("three rows: {rows:?}");
        };
        assert!(budgets.throttled <= 2, "{budgets:?}");
        assert!(
            naive.throttled > 100 && requests.throttled > 100,
            "{rows:?}"
        );
        assert!(budgets.token_share > 0.9, "{budgets:?}");
        assert!(budgets.sent < naive.sent, "{rows:?}");
        // The same seed, the same rows.
        assert_eq!(rows, compare_llm(&options, &modes).unwrap());
    }

    #[test]
    fn the_rows_render_with_their_token_share() {
        let options = LlmOptions {
            instances: 1,
            minutes: 1,
            ..LlmOptions::default()
        };
        let rows = compare_llm(&options, &[LlmMode::Budgets]).unwrap();
        let csv = render_llm(&options, &rows, Format::Csv);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some(LLM_CSV_HEADER));
        assert!(
            lines.next().unwrap().starts_with("llm-batch,budgets,"),
            "{csv}"
        );
        let table = render_llm(&options, &rows, Format::Table);
        assert!(table.contains("| budgets |"), "{table}");
        let json: serde_json::Value =
            serde_json::from_str(&render_llm(&options, &rows, Format::Json)).unwrap();
        assert!(
            json["rows"][0]["token_share"].as_f64().unwrap() > 0.5,
            "{json}"
        );
    }

    #[test]
    fn backoff_stays_between_one_second_and_its_cap() {
        for attempt in 1..12 {
            let cap = 2f64.powi(attempt.min(6) as i32).min(60.0);
            for key in 0..50 {
                let d = backoff(7, key, attempt).as_secs_f64();
                assert!((1.0..=cap).contains(&d), "{attempt} {d}");
            }
        }
    }
}
