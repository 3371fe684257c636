//! The comparison as text: a table like the .NET adaptive limiter's, CSV, or JSON.
//!
//! Every number is rounded before it is printed, with fixed decimals, so the output of a seed is
//! the same bytes on every run.

use crate::SimOptions;
use crate::metrics::{Identified, Recovery, RunMetrics};
use crate::model::Story;
use crate::{Comparison, Row};
use serde::Serialize;
use std::fmt::Write as _;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The CSV header, in the order the issue asks for.
/// The columns after `recovery_s` are the server's true limiter (kind, limit per window, window)
/// and what the first instance identified of it at the end of the run and at its fifth refusal
/// (empty for modes that identify nothing, or before a refusal).
pub const CSV_HEADER: &str = "story,mode,throughput,share,throttled,rejected,gave_up,p95_wait_s,recovery_s,\
     true_kind,true_limit,true_window_s,identified_kind,identified_limit,identified_window_s,\
     confidence,fifth_kind,fifth_limit,fifth_window_s";

/// How to print a comparison (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// An aligned Markdown table per story, as in the .NET adaptive limiter. The default.
    #[default]
    Table,
    /// One CSV line per row, with [`CSV_HEADER`].
    Csv,
    /// One JSON document with the settings and every row.
    Json,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(format!("unknown format {s:?}: expected table, csv or json")),
        }
    }
}

/// The comparison in `format`.
#[must_use]
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => table(c),
        Format::Csv => csv(c),
        Format::Json => json(c),
    }
}

/// `1234567` → `1,234,567`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn recovery_of(m: &RunMetrics) -> Recovery {
    match (m.recovery, m.recovery_s) {
        (_, Some(s)) => Recovery::After(s),
        ("never", None) => Recovery::Never,
        _ => Recovery::NoDrop,
    }
}

/// The recovery as text: `12 s`, `never`, or `no_drop` for a story without a drop.
fn recovery_text(m: &RunMetrics, no_drop: &str) -> String {
    match recovery_of(m) {
        Recovery::After(s) => format!("{s} s"),
        Recovery::Never => "never".to_owned(),
        Recovery::NoDrop => no_drop.to_owned(),
    }
}

/// The .NET adaptive limiter's table, one per story.
#[must_use]
pub fn table(c: &Comparison) -> String {
    let o = &c.options;
    let mut out = String::new();
    let mut stories: Vec<&str> = c.rows.iter().map(|r| r.story.as_str()).collect();
    stories.dedup();
    for (i, story) in stories.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let summary = Story::by_name(story).map_or("", |s| s.summary);
        let _ = writeln!(out, "{story}: {summary}");
        // A live run against a target that does not say its quota has none (0).
        let quota = if o.quota == 0 {
            "unknown".to_owned()
        } else {
            format!("{} units/min", thousands(o.quota))
        };
        let _ = writeln!(
            out,
            "quota {quota}, {} instances × {} units/min, {} min, seed {}\n",
            o.instances,
            thousands(o.demand.round() as u64),
            o.minutes,
            o.seed
        );
        let header = [
            "Mode",
            "Throughput",
            "Share",
            "429s",
            "Rejected",
            "Gave up",
            "p95 wait",
            "Recovery",
        ];
        let mut lines: Vec<[String; 8]> = Vec::new();
        for r in c.rows.iter().filter(|r| r.story == *story) {
            let m = &r.metrics;
            let recovery = recovery_text(m, "–");
            lines.push([
                r.mode.clone(),
                thousands(m.throughput.round() as u64),
                share_percent(m.share),
                thousands(m.throttled),
                thousands(m.rejected),
                thousands(m.gave_up),
                format!("{:.1} s", m.p95_wait_s),
                recovery,
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|k| {
                lines
                    .iter()
                    .map(|l| l[k].chars().count())
                    .chain([header[k].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let row = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(k, cell)| {
                    let pad = widths[k] - cell.chars().count();
                    if k == 0 {
                        format!("{cell}{}", " ".repeat(pad))
                    } else {
                        format!("{}{cell}", " ".repeat(pad))
                    }
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        out.push_str(&row(header.to_vec()));
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(k, &w)| {
                if k == 0 {
                    "-".repeat(w)
                } else {
                    format!("{}:", "-".repeat(w - 1))
                }
            })
            .collect();
        out.push_str(&row(rule.iter().map(String::as_str).collect()));
        for l in &lines {
            out.push_str(&row(l.iter().map(String::as_str).collect()));
        }
        identified(&mut out, c, story);
    }
    out
}

/// Under a story's table, what each mode's first instance identified of the server's limiter
/// beside the truth; nothing when no mode identified anything.
fn identified(out: &mut String, c: &Comparison, story: &str) {
    let rows: Vec<(&str, &Identified)> = c
        .rows
        .iter()
        .filter(|r| r.story == story)
        .filter_map(|r| Some((r.mode.as_str(), r.metrics.identified.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let t = truth(&c.options);
    let _ = writeln!(
        out,
        "\nThe server's limiter: {}, {} per {} s. Identified by the first instance:",
        t.kind,
        thousands(t.limit.round() as u64),
        t.window_s
    );
    for (mode, m) in rows {
        let _ = writeln!(
            out,
            "- {mode}: {}, {} per {:.1} s (confidence {:.2})",
            m.kind,
            thousands(m.limit.round() as u64),
            m.window_s,
            m.confidence
        );
    }
}

/// The share as a whole percentage, or `n/a` when it is unknown (NaN: a live run against a
/// target whose quota is not known).
fn share_percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", share * 100.0)
    } else {
        "n/a".to_owned()
    }
}

/// One line per row: [`CSV_HEADER`], then `story,mode,…`. `recovery_s` is a whole number of
/// seconds, `never`, or empty when the story has no drop; `share` is empty when unknown.
#[must_use]
pub fn csv(c: &Comparison) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let truth = truth(&c.options);
    for r in &c.rows {
        out.push_str(&csv_line(r));
        let _ = write!(out, ",{},{:.1},{}", truth.kind, truth.limit, truth.window_s);
        let model = |m: &Option<Identified>, confidence: bool| match m {
            Some(m) if confidence => format!(
                ",{},{:.1},{},{:.3}",
                m.kind, m.limit, m.window_s, m.confidence
            ),
            Some(m) => format!(",{},{:.1},{}", m.kind, m.limit, m.window_s),
            None if confidence => ",,,,".to_owned(),
            None => ",,,".to_owned(),
        };
        out.push_str(&model(&r.metrics.identified, true));
        out.push_str(&model(&r.metrics.identified_by_fifth, false));
        out.push('\n');
    }
    out
}

/// The server's true limiter: its kind, its limit per window for the whole budget (the quota
/// before the story changes it), its window.
#[must_use]
pub fn truth(o: &SimOptions) -> Identified {
    Identified {
        kind: o.server.kind().as_str(),
        limit: crate::model::window_units(o.quota as f64, o.window),
        window_s: o.window.as_secs_f64(),
        confidence: 1.0,
    }
}

fn csv_line(r: &Row) -> String {
    let m = &r.metrics;
    let recovery = match recovery_of(m) {
        Recovery::After(s) => s.to_string(),
        Recovery::Never => "never".to_owned(),
        Recovery::NoDrop => String::new(),
    };
    let share = if m.share.is_finite() {
        format!("{:.4}", m.share)
    } else {
        String::new()
    };
    format!(
        "{},{},{:.1},{},{},{},{},{:.1},{}",
        r.story,
        r.mode,
        m.throughput,
        share,
        m.throttled,
        m.rejected,
        m.gave_up,
        m.p95_wait_s,
        recovery
    )
}

#[derive(Serialize)]
struct JsonOptions {
    instances: u32,
    quota: u64,
    demand: f64,
    minutes: u32,
    seed: u64,
    window_s: u64,
    forward: f64,
    phase_s: f64,
    sends_retry_after: bool,
    restore: bool,
    initial_units_per_minute: f64,
    min_units_per_minute: f64,
    max_units_per_minute: f64,
    queue_limit: usize,
    max_wait_s: f64,
    max_attempts: u32,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    story: &'a str,
    mode: &'a str,
    #[serde(flatten)]
    metrics: RunMetrics,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    options: JsonOptions,
    rows: Vec<JsonRow<'a>>,
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// The settings and every row as one JSON document (numbers rounded as in the CSV; an unknown
/// share is `null`).
#[must_use]
pub fn json(c: &Comparison) -> String {
    let o = &c.options;
    let report = JsonReport {
        options: JsonOptions {
            instances: o.instances,
            quota: o.quota,
            demand: o.demand,
            minutes: o.minutes,
            seed: o.seed,
            window_s: o.window.as_secs(),
            forward: o.forward,
            phase_s: o.phase.as_secs_f64(),
            sends_retry_after: o.sends_retry_after,
            restore: o.restore,
            initial_units_per_minute: o.limiter.rate_at_start(),
            min_units_per_minute: o.limiter.min_units_per_minute,
            max_units_per_minute: o.limiter.max_units_per_minute,
            queue_limit: o.limiter.queue_limit,
            max_wait_s: o.limiter.max_wait.as_secs_f64(),
            max_attempts: o.max_attempts.get(),
        },
        rows: c
            .rows
            .iter()
            .map(|r| {
                let mut m = r.metrics.clone();
                m.throughput = round(m.throughput, 1);
                m.share = round(m.share, 4);
                m.p95_wait_s = round(m.p95_wait_s, 1);
                m.mean_quota = round(m.mean_quota, 1);
                m.evenness = m.evenness.map(|e| round(e, 3));
                JsonRow {
                    story: &r.story,
                    mode: &r.mode,
                    metrics: m,
                }
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&report).expect("plain data serializes");
    s.push('\n');
    s
}

/// The rows of `story` second by second, for `seconds` of the run (clipped to its length): the
/// quota available to our clients, then for each mode the sum of the limiter rates (`-` for a
/// mode without one), the units accepted that second, the units accepted over the last 60 s
/// (what a one-minute window holds of ours) and the 429s; then a line per mode with its share,
/// 429s, refusals and recovery. Empty when no row is of `story`.
#[must_use]
pub fn trace(c: &Comparison, story: &str, seconds: RangeInclusive<usize>) -> String {
    let rows: Vec<&Row> = c.rows.iter().filter(|r| r.story == story).collect();
    let Some(first) = rows.first() else {
        return String::new();
    };
    let mut out = String::new();
    let _ = write!(out, "{:>5} {:>6}", "s", "quota");
    for row in &rows {
        let _ = write!(
            out,
            " | {:>10} {:>6} {:>4} {:>5} {:>3}",
            row.mode, "rate", "acc", "win", "429"
        );
    }
    out.push('\n');
    let end = seconds
        .end()
        .saturating_add(1)
        .min(first.series.accepted.len());
    for s in *seconds.start()..end {
        let _ = write!(out, "{s:>5} {:>6.0}", first.series.quota[s]);
        for row in &rows {
            let series = &row.series;
            let window: u64 = series.accepted[s.saturating_sub(59)..=s].iter().sum();
            let rate = series.rate[s].map_or_else(|| "-".to_owned(), |r| format!("{r:.0}"));
            let _ = write!(
                out,
                " | {:>10} {rate:>6} {:>4} {window:>5} {:>4}",
                "", series.accepted[s], series.throttled[s]
            );
        }
        out.push('\n');
    }
    for row in &rows {
        let m = &row.metrics;
        let recovery = recovery_text(m, "no drop");
        let _ = writeln!(
            out,
            "{}: share {:.4}, 429s {}, rejected {}, recovery {recovery}",
            row.mode, m.share, m.throttled, m.rejected
        );
    }
    out
}

#[cfg(test)]
mod tests;
