//! A comparison: every mode through every story, on the same seed and the same requests.
//!
//! Runs are independent, so they are spread over the machine's cores; each run's result lands in
//! its own slot, so the output is in story-then-mode order whatever finished first.

use crate::engine::{RunResult, run};
use crate::metrics::{RunMetrics, Series};
use crate::model::{Arrivals, Story};
use crate::{Mode, SimError, SimOptions};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// One mode through one story.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The story's name.
    pub story: String,
    /// The mode's name.
    pub mode: String,
    /// The .NET adaptive limiter's columns, and more.
    pub metrics: RunMetrics,
    /// The second-by-second record.
    pub series: Series,
}

/// The result of [`compare`]: rows in story order, then mode order.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The settings of the run.
    pub options: SimOptions,
    /// The rows.
    pub rows: Vec<Row>,
}

/// Runs each mode through each story with `options`. Every mode of a story sees the same
/// arrivals.
pub fn compare(
    options: &SimOptions,
    stories: &[Story],
    modes: &[Box<dyn Mode>],
) -> Result<Comparison, SimError> {
    options.validate().map_err(SimError::Options)?;
    let arrivals: Vec<Arrivals> = stories
        .iter()
        .map(|s| Arrivals::generate(options, s))
        .collect();
    let jobs: Vec<(usize, usize)> = (0..stories.len())
        .flat_map(|s| (0..modes.len()).map(move |m| (s, m)))
        .collect();
    let results: Vec<Mutex<Option<Result<RunResult, SimError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len())
        .max(1);
    thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(s, m)) = jobs.get(j) else {
                        return;
                    };
                    let result = run(options, &stories[s], &arrivals[s], modes[m].as_ref())
                        .map_err(SimError::from);
                    *results[j].lock().expect("no panics while holding it") = Some(result);
                }
            });
        }
    });
    let mut rows = Vec::with_capacity(jobs.len());
    for (&(s, m), slot) in jobs.iter().zip(results) {
        let result = slot
            .into_inner()
            .expect("no panics while holding it")
            .expect("every job ran");
        let RunResult { metrics, series } = result?;
        rows.push(Row {
            story: stories[s].name.to_owned(),
            mode: modes[m].name().to_owned(),
            metrics,
            series,
        });
    }
    Ok(Comparison {
        options: options.clone(),
        rows,
    })
}
