//! The six stories of the .NET adaptive limiter's simulator, as data: what changes, and when,
//! and four more of Pacer's own ([`MORE_STORY_NAMES`]).
//!
//! A story changes the hidden quota, lets another client use part of it, stops the server, adds
//! instances, or raises the demand, at fixed minutes of the run, and says whether the server's
//! 429s carry a `Retry-After`. The engine and the model API read
//! it; nothing in a story depends on the mode, so every mode lives through the same story.

use std::fmt;
use std::time::Duration;

const MINUTE: u64 = 60;

const fn minutes(m: u64) -> Duration {
    Duration::from_secs(m * MINUTE)
}

/// From `at` on, the hidden quota is `factor × --quota`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaStep {
    /// When the quota changes, from the start of the run.
    pub at: Duration,
    /// The new quota as a fraction of `--quota`.
    pub factor: f64,
}

/// Another client of the same budget: during `[from, until)` it uses `share` of the quota, and
/// the server counts its units in the same sliding window as ours, whether or not they fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour {
    /// When it starts.
    pub from: Duration,
    /// When it stops.
    pub until: Duration,
    /// The fraction of the quota it uses per minute.
    pub share: f64,
}

/// The server stops serving during `[at, at + length)`: every request gets a 429 whose
/// Retry-After is the time left until the stop ends (so the first one says `length`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerStop {
    /// When the stop starts.
    pub at: Duration,
    /// How long it lasts.
    pub length: Duration,
}

/// `instances` more client instances start at `at`; every limiter is told the new count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Join {
    /// When they start.
    pub at: Duration,
    /// How many join.
    pub instances: u32,
}

/// `instances` client instances stop at `at`: the most recent ones still running. Their
/// requests stop arriving; those already waiting are still sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leave {
    /// When they stop.
    pub at: Duration,
    /// How many stop.
    pub instances: u32,
}

/// During `[from, until)` a fleet's store answers no call (a Redis that is down).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreOutage {
    /// When the store goes down.
    pub from: Duration,
    /// When it answers again.
    pub until: Duration,
}

/// During `[from, until)` every instance's demand is `factor ×` `--demand`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemandBurst {
    /// When the burst starts.
    pub from: Duration,
    /// When it ends.
    pub until: Duration,
    /// The demand multiplier.
    pub factor: f64,
}

/// A story: one scenario of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Story {
    /// The name on the command line and in the output.
    pub name: &'static str,
    /// One line for `--help` and the docs.
    pub summary: &'static str,
    /// Changes of the hidden quota, in time order.
    pub quota_steps: Vec<QuotaStep>,
    /// Another client using part of the quota.
    pub neighbour: Option<Neighbour>,
    /// A server-ordered stop.
    pub stop: Option<ServerStop>,
    /// Instances that join, in time order.
    pub joins: Vec<Join>,
    /// Instances that stop, in time order.
    pub leaves: Vec<Leave>,
    /// Whether every limiter is told the new number of instances when some join (a live
    /// `InstanceCount`); when not, each keeps the count it started with (a static
    /// `InstanceCount`, as a deployment that scales by itself has).
    pub announces: bool,
    /// When a fleet's store is down.
    pub store_outages: Vec<StoreOutage>,
    /// Whether `joins` and `leaves` count in multiples of the instances at the start
    /// (`--instances`) rather than in instances.
    pub per_base: bool,
    /// Bursts of demand.
    pub bursts: Vec<DemandBurst>,
    /// Whether the server's 429s say `Retry-After` (nginx's `limit_req` does not): without it,
    /// the model API answers a bare 429, in `compare` and in `serve` alike.
    pub retry_after: bool,
}

/// A span during which less quota is available to our clients than just before it; the recovery
/// metric measures from its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaDrop {
    /// When the available quota drops.
    pub from: Duration,
    /// When it comes back.
    pub until: Duration,
}

/// The names of the stories, in the order `--story all` runs them.
pub const STORY_NAMES: [&str; 6] = [
    "free-run",
    "noisy-neighbour",
    "quota-cut",
    "scale-out",
    "top-of-hour",
    "long-retry-after",
];

/// Stories that `--story NAME` runs but `--story all` does not: `all` stays the .NET adaptive
/// limiter's six, whose figures are pinned.
pub const MORE_STORY_NAMES: [&str; 4] = ["cold-start", "autoscale", "store-outage", "restart"];

/// The default story: the .NET adaptive limiter's comparison table.
pub const DEFAULT_STORY: &str = "noisy-neighbour";

impl Story {
    fn empty(name: &'static str, summary: &'static str) -> Story {
        Story {
            name,
            summary,
            quota_steps: Vec::new(),
            neighbour: None,
            stop: None,
            joins: Vec::new(),
            leaves: Vec::new(),
            announces: true,
            store_outages: Vec::new(),
            per_base: false,
            bursts: Vec::new(),
            retry_after: true,
        }
    }

    /// The story with this name, if there is one.
    #[must_use]
    pub fn by_name(name: &str) -> Option<Story> {
        let story = match name {
            "free-run" => Story::empty("free-run", "the quota stays as it is for the whole run"),
            "noisy-neighbour" => Story {
                neighbour: Some(Neighbour {
                    from: minutes(5),
                    until: minutes(6),
                    share: 0.5,
                }),
                ..Story::empty(
                    "noisy-neighbour",
                    "another client takes half the quota for 60 s at minute 5",
                )
            },
            "quota-cut" => Story {
                quota_steps: vec![
                    QuotaStep {
                        at: minutes(5),
                        factor: 0.5,
                    },
                    QuotaStep {
                        at: minutes(10),
                        factor: 1.0,
                    },
                ],
                ..Story::empty(
                    "quota-cut",
                    "the server cuts the quota to half at minute 5 and restores it at minute 10",
                )
            },
            "scale-out" => Story {
                joins: vec![Join {
                    at: minutes(5),
                    instances: 1,
                }],
                ..Story::empty(
                    "scale-out",
                    "one more instance, with the same demand, joins at minute 5",
                )
            },
            "top-of-hour" => Story {
                bursts: vec![DemandBurst {
                    from: minutes(10),
                    until: minutes(11),
                    factor: 3.0,
                }],
                ..Story::empty(
                    "top-of-hour",
                    "every instance's demand triples for the minute after minute 10",
                )
            },
            "long-retry-after" => Story {
                stop: Some(ServerStop {
                    at: minutes(5),
                    length: minutes(2),
                }),
                ..Story::empty(
                    "long-retry-after",
                    "at minute 5 the server stops for 120 s and says so with Retry-After",
                )
            },
            "cold-start" => Story {
                bursts: vec![DemandBurst {
                    from: Duration::ZERO,
                    until: Duration::MAX,
                    factor: 1.5,
                }],
                retry_after: false,
                ..Story::empty(
                    "cold-start",
                    "every instance's demand is 1.5 times --demand from the start (twice the \
                     default quota), and the 429s say no Retry-After",
                )
            },
            "autoscale" => Story {
                // With `--instances n`: n, 2n at minute 3, 4n at minute 6, 2n at minute 9, n at
                // minute 12.
                joins: vec![
                    Join {
                        at: minutes(3),
                        instances: 1,
                    },
                    Join {
                        at: minutes(6),
                        instances: 2,
                    },
                ],
                leaves: vec![
                    Leave {
                        at: minutes(9),
                        instances: 2,
                    },
                    Leave {
                        at: minutes(12),
                        instances: 1,
                    },
                ],
                announces: false,
                per_base: true,
                ..Story::empty(
                    "autoscale",
                    "the instances double at minute 3 and again at minute 6, then halve at \
                     minutes 9 and 12; each limiter keeps the InstanceCount it started with",
                )
            },
            "store-outage" => Story {
                store_outages: vec![StoreOutage {
                    from: minutes(5),
                    until: minutes(7),
                }],
                ..Story::empty(
                    "store-outage",
                    "a fleet's store (Redis) is down from minute 5 to minute 7: the quota stays \
                     as it is",
                )
            },
            "restart" => Story {
                // Every process stops at minute 5 and a fresh one takes its place 100 ms later.
                leaves: vec![Leave {
                    at: minutes(5),
                    instances: 1,
                }],
                joins: vec![Join {
                    at: minutes(5) + Duration::from_millis(100),
                    instances: 1,
                }],
                per_base: true,
                ..Story::empty(
                    "restart",
                    "every instance restarts at minute 5 (a deploy): fresh limiters, with the \
                     server's window still full of the old processes' units",
                )
            },
            _ => return None,
        };
        Some(story)
    }

    /// Every story, in the order of [`STORY_NAMES`].
    #[must_use]
    pub fn all() -> Vec<Story> {
        STORY_NAMES
            .iter()
            .filter_map(|n| Story::by_name(n))
            .collect()
    }

    /// The hidden quota at `t` as a fraction of `--quota`.
    #[must_use]
    pub fn quota_factor(&self, t: Duration) -> f64 {
        self.quota_steps
            .iter()
            .take_while(|s| s.at <= t)
            .last()
            .map_or(1.0, |s| s.factor)
    }

    /// The share of the quota the neighbour uses at `t` (0 when there is none).
    #[must_use]
    pub fn neighbour_share(&self, t: Duration) -> f64 {
        match self.neighbour {
            Some(n) if n.from <= t && t < n.until => n.share,
            _ => 0.0,
        }
    }

    /// The stop in force at `t`, if any.
    #[must_use]
    pub fn stop_at(&self, t: Duration) -> Option<ServerStop> {
        self.stop.filter(|s| s.at <= t && t < s.at + s.length)
    }

    /// The units per minute available to our clients at `t`, for a `--quota` of `base`: the
    /// hidden quota, less what the neighbour takes, or nothing during a stop.
    #[must_use]
    pub fn available_quota(&self, base: f64, t: Duration) -> f64 {
        if self.stop_at(t).is_some() {
            return 0.0;
        }
        base * self.quota_factor(t) * (1.0 - self.neighbour_share(t))
    }

    /// Every instance's demand at `t` as a multiple of `--demand`.
    #[must_use]
    pub fn demand_factor(&self, t: Duration) -> f64 {
        self.bursts
            .iter()
            .filter(|b| b.from <= t && t < b.until)
            .map(|b| b.factor)
            .product()
    }

    /// The times at which the demand factor may change, in order.
    #[must_use]
    pub fn demand_changes(&self) -> Vec<Duration> {
        let mut at: Vec<Duration> = self.bursts.iter().flat_map(|b| [b.from, b.until]).collect();
        at.sort_unstable();
        at.dedup();
        at
    }

    /// The instances a join or a leave of `n` starts or stops, with `base` at the start.
    fn count(&self, base: u32, n: u32) -> u32 {
        if self.per_base { n * base } else { n }
    }

    /// The number of instances started by `t` (running or stopped), starting from `base`.
    #[must_use]
    pub fn instances_at(&self, base: u32, t: Duration) -> u32 {
        base + self
            .joins
            .iter()
            .filter(|j| j.at <= t)
            .map(|j| self.count(base, j.instances))
            .sum::<u32>()
    }

    /// The number of instances running at `t`, starting from `base`.
    #[must_use]
    pub fn running_at(&self, base: u32, t: Duration) -> u32 {
        let stopped: u32 = self
            .leaves
            .iter()
            .filter(|l| l.at <= t)
            .map(|l| self.count(base, l.instances))
            .sum();
        self.instances_at(base, t).saturating_sub(stopped)
    }

    /// The `InstanceCount` an instance that starts at `t` is given, and the one the running
    /// instances are told at a join at `t`: the instances running then in a story that
    /// announces the count, else the count at the start (each keeps the one it started with).
    #[must_use]
    pub fn instance_count_at(&self, base: u32, t: Duration) -> u32 {
        if self.announces {
            self.running_at(base, t)
        } else {
            base
        }
    }

    /// When instance `instance` (counting from 0) starts, with `base` instances at the start: at
    /// once for the first `base`, else at the join that adds it (never, past the last join).
    #[must_use]
    pub fn start_of(&self, base: u32, instance: u32) -> Duration {
        if instance < base {
            return Duration::ZERO;
        }
        let mut count = base;
        for j in &self.joins {
            count += self.count(base, j.instances);
            if instance < count {
                return j.at;
            }
        }
        Duration::MAX
    }

    /// When instance `instance` stops, if it does: a leave stops the most recent instances
    /// still running.
    #[must_use]
    pub fn stop_of(&self, base: u32, instance: u32) -> Option<Duration> {
        if self.leaves.is_empty() {
            return None;
        }
        let mut changes: Vec<(Duration, bool, u32)> = self
            .joins
            .iter()
            .map(|j| (j.at, true, self.count(base, j.instances)))
            .chain(
                self.leaves
                    .iter()
                    .map(|l| (l.at, false, self.count(base, l.instances))),
            )
            .collect();
        // At one moment, joins before leaves.
        changes.sort_by_key(|&(at, join, _)| (at, !join));
        let mut running: Vec<u32> = (0..base).collect();
        let mut next = base;
        for (at, join, n) in changes {
            if join {
                running.extend(next..next + n);
                next += n;
            } else {
                for _ in 0..n {
                    if running.pop() == Some(instance) {
                        return Some(at);
                    }
                }
            }
        }
        None
    }

    /// Whether a fleet's store is down at `t`.
    #[must_use]
    pub fn store_down(&self, t: Duration) -> bool {
        self.store_outages
            .iter()
            .any(|o| o.from <= t && t < o.until)
    }

    /// The first drop of the quota available to our clients and when it comes back, if the
    /// story has one: the neighbour's minute, the stop, or a cut of the quota until it is
    /// restored to at least its level before the cut.
    #[must_use]
    pub fn quota_drop(&self) -> Option<QuotaDrop> {
        let mut drops = Vec::new();
        if let Some(n) = self.neighbour {
            drops.push(QuotaDrop {
                from: n.from,
                until: n.until,
            });
        }
        if let Some(s) = self.stop {
            drops.push(QuotaDrop {
                from: s.at,
                until: s.at + s.length,
            });
        }
        let mut before = 1.0;
        for (i, step) in self.quota_steps.iter().enumerate() {
            if step.factor < before {
                if let Some(back) = self.quota_steps[i + 1..]
                    .iter()
                    .find(|s| s.factor >= before)
                {
                    drops.push(QuotaDrop {
                        from: step.at,
                        until: back.at,
                    });
                }
                break;
            }
            before = step.factor;
        }
        drops.into_iter().min_by_key(|d| d.from)
    }
}

impl fmt::Display for Story {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.summary)
    }
}

#[cfg(test)]
mod tests;
