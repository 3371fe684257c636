//! Scoring hypotheses about the server's limiter against a [`Record`](super::Record).

use super::record::Sent;
use super::{LimiterKind, ServerModel};
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

/// The windows tried besides the one the server's fields name: the ones rate limits are written
/// in (a second, ten, a minute, a quarter of an hour). An hour's quota is longer than the record
/// ([`OLDER_SECS`](super::record::OLDER_SECS)): known only when the fields name it.
const WINDOWS: [u64; 4] = [1, 10, 60, 900];

/// A `Retry-After` is sent in whole seconds, rounded up by most servers and down by some
/// (tower_governor): a prediction within a second of it agrees.
const RETRY_AFTER_GRAIN: u64 = SECOND;

/// The bucket paces tried, as multiples of the pace this process was admitted at since its
/// first refusal: that pace is the bucket's while the process kept it full, and up to a fifth
/// under it when it waited out `Retry-After`s it could have used.
const BUCKET_PACES: [f64; 5] = [1.0, 1.05, 1.1, 1.15, 1.2];

/// The fixed-window boundaries tried when no refusal carries a `Retry-After` to place them.
const BOUNDARY_STEPS: u64 = 8;

/// One hypothesis's fit to the record.
#[derive(Debug, Clone, Copy)]
struct Fit {
    kind: LimiterKind,
    window: u64,
    boundary: Option<u64>,
    /// This process's limit: its usage at the refusals, less the refused request's units.
    limit: f64,
    /// Separation plus `Retry-After` agreement, 0 to 2.
    score: f64,
}

/// What a [`Record`](super::Record) keeps, borrowed for an estimate.
pub(super) struct Kept<'a> {
    /// The sends kept one by one, in send order.
    pub(super) sends: &'a [Sent],
    /// The accepted units of older sends, by second.
    pub(super) older: &'a [(u32, u32)],
    /// When the last send dropped from `sends` was sent (0: none was).
    pub(super) since: u64,
    /// The time since which every accepted unit is kept.
    pub(super) covered: u64,
}

/// The record's prefix sums of accepted units, one by one and by second.
struct Sums<'a> {
    sends: &'a [Sent],
    sums: Vec<u64>,
    older: &'a [(u32, u32)],
    older_sums: Vec<u64>,
    since: u64,
    covered: u64,
    /// The first send kept.
    start: u64,
}

impl<'a> Sums<'a> {
    fn new(kept: &Kept<'a>) -> Self {
        let prefix = |units: &mut dyn Iterator<Item = u64>| {
            let mut total = 0;
            std::iter::once(0)
                .chain(units.map(|u| {
                    total += u;
                    total
                }))
                .collect::<Vec<u64>>()
        };
        Sums {
            sends: kept.sends,
            sums: prefix(&mut kept.sends.iter().map(Sent::accepted_units)),
            older: kept.older,
            older_sums: prefix(&mut kept.older.iter().map(|&(_, u)| u64::from(u))),
            since: kept.since,
            covered: kept.covered,
            start: kept.sends.first().map_or(0, |s| s.at),
        }
    }

    /// The accepted units sent in `[from, sends[k].at)`, before send `k`: the sends kept one by
    /// one, and before them the seconds whose middle is at or after `from`.
    fn since(&self, k: usize, from: u64) -> u64 {
        let first = self.sends[..k].partition_point(|s| s.at < from);
        let mut units = self.sums[k] - self.sums[first];
        if from < self.since {
            let half = SECOND / 2;
            let older = self
                .older
                .partition_point(|&(sec, _)| u64::from(sec) * SECOND + half < from);
            units += self.older_sums[self.older.len()] - self.older_sums[older];
        }
        units
    }

    /// The time since which the record holds every send it has seen.
    fn history_start(&self) -> u64 {
        if self.covered > 0 {
            self.covered
        } else if let Some(&(second, _)) = self.older.first() {
            u64::from(second) * SECOND
        } else {
            self.start
        }
    }

    /// The first send whose whole window of `window` the record holds.
    fn eligible(&self, window: u64) -> usize {
        if self.covered == 0 {
            return 0;
        }
        self.sends
            .partition_point(|s| s.at < self.covered.saturating_add(window))
    }
}

pub(super) fn estimate(
    kept: &Kept<'_>,
    policy: Option<(u64, Duration)>,
    instances: u32,
) -> Option<ServerModel> {
    let sums = Sums::new(kept);
    let sends = kept.sends;
    let named = policy.map(|(_, w)| u64::try_from(w.as_nanos()).unwrap_or(u64::MAX));
    // A window longer than the record's history cannot be told from any longer one (the
    // units in it are all the units sent): the shortest of them stands for them all.
    let span = sends.last().map_or(0, |s| s.at) - sums.history_start();
    let windows: Vec<u64> = match named {
        Some(w) => vec![w],
        None => {
            let longer = WINDOWS.iter().map(|w| w * SECOND).find(|&w| w > span);
            WINDOWS
                .iter()
                .map(|w| w * SECOND)
                .filter(|&w| w <= span)
                .chain(longer)
                .collect()
        }
    };
    let mut fits: Vec<Fit> = Vec::new();
    let mut refusals = 0;
    for &window in &windows {
        let from = sums.eligible(window);
        let counted = sends[from..].iter().filter(|s| s.refused()).count();
        if counted == 0 {
            continue;
        }
        refusals = refusals.max(counted);
        let sliding = |k: usize| sums.since(k, sends[k].at.saturating_sub(window));
        let usage: Vec<u64> = (from..sends.len()).map(sliding).collect();
        let slide = Fit {
            kind: LimiterKind::SlidingWindow,
            window,
            boundary: None,
            limit: limit_at_refusals(&sends[from..], &usage),
            score: separation(&sends[from..], &usage)
                + agreement(&sends[from..], |k, wait| {
                    // The units that leave first are this process's oldest in the window or
                    // another's sent after this process's last send before the window.
                    let k = from + k;
                    let at = sends[k].at;
                    let inside = sends[..k].partition_point(|s| s.at + window <= at);
                    let oldest = sends[inside..k]
                        .iter()
                        .find(|s| !s.refused())
                        .map_or(window, |s| s.at + window - at);
                    let before = sends[..inside]
                        .iter()
                        .rev()
                        .find(|s| !s.refused())
                        .map_or(0, |s| (s.at + window).saturating_sub(at));
                    wait <= oldest + RETRY_AFTER_GRAIN && wait + RETRY_AFTER_GRAIN >= before
                }),
        };
        fits.push(slide);
        if let Some(fixed) = fixed_fit(&sums, from, window) {
            fits.push(fixed);
        }
    }
    fits.extend(bucket_fit(&sums, instances));
    // On a tie the first: the shorter window, then sliding, fixed, bucket.
    let best = fits
        .iter()
        .copied()
        .reduce(|best, f| if f.score > best.score { f } else { best })?;
    // Each refusal is read as an independent observation, and a hypothesis's score per refusal
    // as its log-likelihood: the kinds' likelihoods are exp(refusals × score).
    let weight = |kind| {
        fits.iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.score)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let kinds = [
        LimiterKind::SlidingWindow,
        LimiterKind::FixedWindow,
        LimiterKind::Bucket,
    ];
    let n = refusals as f64;
    let total: f64 = kinds
        .iter()
        .map(|&k| weight(k))
        .filter(|w| w.is_finite())
        .map(|w| ((w - best.score) * n).exp())
        .sum();
    let penalty = sends
        .iter()
        .filter_map(Sent::retry_after)
        .max()
        .filter(|&longest| longest > best.window + RETRY_AFTER_GRAIN)
        .map(Duration::from_nanos);
    let (limit, from_fields) = match policy {
        Some((limit, _)) => (limit as f64, true),
        None => (best.limit * f64::from(instances), false),
    };
    Some(ServerModel {
        kind: best.kind,
        limit,
        window: Duration::from_nanos(best.window),
        boundary: best.boundary.map(Duration::from_nanos),
        confidence: 1.0 / total.max(1.0),
        from_fields,
        refusals: u32::try_from(refusals).unwrap_or(u32::MAX),
        penalty,
    })
}

/// A fixed window of `window`: its boundary placed by the refusals' `Retry-After`s when they
/// carry them (the one most of them fall on), else the best of [`BOUNDARY_STEPS`] boundaries.
fn fixed_fit(sums: &Sums<'_>, from: usize, window: u64) -> Option<Fit> {
    let sends = &sums.sends[from..];
    // Each refusal with a `Retry-After` places a boundary, to the second the header gives;
    // the [`BOUNDARY_STEPS`] placed most often are tried. A boundary placed once is scored
    // without the refusal that placed it: it agrees with it by construction.
    let mut placed_at: Vec<(u64, usize)> = sends
        .iter()
        .enumerate()
        .filter_map(|(k, s)| {
            s.retry_after()
                .map(|wait| ((s.at + wait) % window / SECOND * SECOND, k))
        })
        .collect();
    placed_at.sort_unstable();
    let mut said: Vec<(usize, u64, Option<usize>)> = placed_at
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            (
                group.len(),
                group[0].0,
                (group.len() == 1).then_some(group[0].1),
            )
        })
        .collect();
    said.sort_by_key(|&(count, _, _)| std::cmp::Reverse(count));
    let said: Vec<(u64, Option<usize>)> = said
        .into_iter()
        .take(BOUNDARY_STEPS as usize)
        .map(|(_, boundary, placer)| (boundary, placer))
        .collect();
    // A window of a second or less cannot be placed by whole-second `Retry-After`s.
    let placed = window > RETRY_AFTER_GRAIN && !said.is_empty();
    let boundaries: Vec<(u64, Option<usize>)> = if placed {
        said
    } else {
        (0..BOUNDARY_STEPS)
            .map(|i| (i * window / BOUNDARY_STEPS, None))
            .collect()
    };
    boundaries
        .into_iter()
        .map(|(boundary, placer)| {
            // How far into its window a time is.
            let into = |at: u64| (at % window + window - boundary % window) % window;
            let usage: Vec<u64> = (from..sums.sends.len())
                .map(|k| {
                    let at = sums.sends[k].at;
                    sums.since(k, at.saturating_sub(into(at)))
                })
                .collect();
            let agree = agreement_but(sends, placer, |k, wait| {
                wait.abs_diff(window - into(sends[k].at)) <= RETRY_AFTER_GRAIN
            });
            Fit {
                kind: LimiterKind::FixedWindow,
                window,
                boundary: Some(boundary % window),
                limit: limit_at_refusals(sends, &usage),
                score: separation(sends, &usage) + if placed { agree } else { 0.5 },
            }
        })
        .max_by(|a, b| a.score.total_cmp(&b.score))
}

/// A bucket: its pace tried at [`BUCKET_PACES`] times the pace this process was admitted at
/// since its first refusal, its level run over the record from an empty bucket, its size the
/// median level at the refusals, its window the time that pace takes to fill that size.
fn bucket_fit(sums: &Sums<'_>, instances: u32) -> Option<Fit> {
    let sends = sums.sends;
    let first = sends.iter().position(Sent::refused)?;
    let last = sends.last()?.at;
    let admitted = (sums.sums[sends.len()] - sums.sums[first]) as f64;
    if last <= sends[first].at || admitted == 0.0 {
        return None;
    }
    let pace = admitted / (last - sends[first].at) as f64;
    BUCKET_PACES
        .iter()
        .map(|scale| {
            let per_nano = pace * scale;
            let mut level = 0.0_f64;
            let mut at = sums.start;
            let usage: Vec<u64> = sends
                .iter()
                .map(|s| {
                    level = (level - (s.at - at) as f64 * per_nano).max(0.0);
                    at = s.at;
                    // Usage is compared in whole units; the level keeps its fraction.
                    let before = level.round() as u64;
                    level += s.accepted_units() as f64;
                    before
                })
                .collect();
            let size = limit_at_refusals(sends, &usage).max(1.0);
            // The whole fleet drains it: one request's units at `instances` times this
            // process's pace.
            let agree = agreement(sends, |k, wait| {
                let drains = f64::from(sends[k].units) / (per_nano * f64::from(instances));
                wait <= drains as u64 + RETRY_AFTER_GRAIN
            });
            Fit {
                kind: LimiterKind::Bucket,
                window: snap((size / per_nano) as u64),
                boundary: None,
                limit: size,
                score: separation(sends, &usage) + agree,
            }
        })
        .max_by(|a, b| a.score.total_cmp(&b.score))
}

/// A window within a fifth of one of [`WINDOWS`] is that window: a bucket's is measured, with
/// the noise of a pace measured over a few refusals, and servers write theirs in round figures.
fn snap(window: u64) -> u64 {
    WINDOWS
        .iter()
        .map(|w| w * SECOND)
        .find(|&w| window.abs_diff(w) * 5 <= w)
        .unwrap_or(window)
}

/// The median of this process's usage at its refusals (the units it had in the limiter when the
/// server said no).
fn limit_at_refusals(sends: &[Sent], usage: &[u64]) -> f64 {
    let mut at: Vec<u64> = sends
        .iter()
        .zip(usage)
        .filter(|(s, _)| s.refused())
        .map(|(_, &u)| u)
        .collect();
    if at.is_empty() {
        return 0.0;
    }
    at.sort_unstable();
    at[at.len() / 2] as f64
}

/// The probability that a refused send's usage plus its units is above an accepted one's (ties
/// count a half): the area under the ROC curve of usage as a predictor of refusal.
fn separation(sends: &[Sent], usage: &[u64]) -> f64 {
    let mut ranked: Vec<(u64, bool)> = sends
        .iter()
        .zip(usage)
        .map(|(s, &u)| (u + u64::from(s.units), s.refused()))
        .collect();
    ranked.sort_unstable_by_key(|&(u, _)| u);
    let refused = ranked.iter().filter(|r| r.1).count() as f64;
    let accepted = ranked.len() as f64 - refused;
    if refused == 0.0 || accepted == 0.0 {
        return 0.5;
    }
    // Mann-Whitney: the refused sends' ranks, ties given their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < ranked.len() {
        let j = i + ranked[i..]
            .iter()
            .take_while(|r| r.0 == ranked[i].0)
            .count();
        let mean_rank = (i + j + 1) as f64 / 2.0;
        rank_sum += mean_rank * ranked[i..j].iter().filter(|r| r.1).count() as f64;
        i = j;
    }
    (rank_sum - refused * (refused + 1.0) / 2.0) / (refused * accepted)
}

/// The share of refusals with a `Retry-After` whose wait `predicts` says the hypothesis expects
/// (`k` is the refusal's index in `sends`); ½ when none carries one (no evidence either way).
fn agreement(sends: &[Sent], predicts: impl Fn(usize, u64) -> bool) -> f64 {
    agreement_but(sends, None, predicts)
}

/// [`agreement`] without the refusal `but`.
fn agreement_but(sends: &[Sent], but: Option<usize>, predicts: impl Fn(usize, u64) -> bool) -> f64 {
    let (mut said, mut agreed) = (0u32, 0u32);
    for (k, s) in sends.iter().enumerate() {
        if Some(k) == but {
            continue;
        }
        if let Some(wait) = s.retry_after() {
            said += 1;
            agreed += u32::from(predicts(k, wait));
        }
    }
    if said == 0 {
        0.5
    } else {
        f64::from(agreed) / f64::from(said)
    }
}
