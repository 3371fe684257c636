//! The demand: when each instance's requests arrive, and what each costs.
//!
//! Requests arrive at each instance as a Poisson process whose rate in units per minute is
//! `--demand` times the story's demand factor (piecewise constant; the process restarts at each
//! change, which a Poisson process allows). Each request costs 1, 2 or 5 units with probabilities
//! 0.5, 0.4 and 0.1: a mean of 1.8 units. Those are SharePoint's resource units (1 for a single
//! item, 2 for a query or a write, 5 for a permission operation), the costs of the .NET adaptive limiter's own
//! Graph add-on; the mean of 1.8 is what the .NET adaptive limiter's table implies (see `docs/simulation.md`). So
//! the request rate is `demand / 1.8` per minute.
//!
//! The arrivals depend on the random seed, the story and the options only, never on the mode: every mode
//! sees the same requests at the same times. Each instance draws from its own PCG stream, so an
//! instance that joins later does not shift the others' arrivals. Times are rounded to whole
//! microseconds.

use super::Story;
use crate::SimOptions;
use pacer_core::Timestamp;
use rand::RngExt;
use rand_pcg::Pcg64;
use std::time::Duration;

/// The cost of a request in units, with its probability.
pub const COST_MIX: [(u64, f64); 3] = [(1, 0.5), (2, 0.4), (5, 0.1)];

/// The mean cost of a request under [`COST_MIX`].
#[must_use]
pub fn mean_cost() -> f64 {
    COST_MIX.iter().map(|&(u, p)| u as f64 * p).sum()
}

/// What each request of the demand costs (`--costs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Costs {
    /// SharePoint's resource units, [`COST_MIX`]: 1, 2 or 5 units (mean 1.8).
    #[default]
    SharePoint,
    /// One unit each: an API that counts requests (GitHub, Stripe, nginx's `limit_req`).
    One,
}

/// The names [`Costs`] parses, in order.
pub const COSTS_NAMES: [&str; 2] = ["sharepoint", "one"];

impl Costs {
    /// The mean cost of a request.
    #[must_use]
    pub fn mean(self) -> f64 {
        match self {
            Costs::SharePoint => mean_cost(),
            Costs::One => 1.0,
        }
    }

    fn draw(self, rng: &mut Pcg64) -> u64 {
        match self {
            Costs::SharePoint => draw_cost(rng),
            Costs::One => 1,
        }
    }
}

impl std::str::FromStr for Costs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sharepoint" => Ok(Costs::SharePoint),
            "one" => Ok(Costs::One),
            _ => Err(format!(
                "unknown costs {s:?}: expected one of {}",
                COSTS_NAMES.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for Costs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Costs::SharePoint => COSTS_NAMES[0],
            Costs::One => COSTS_NAMES[1],
        })
    }
}

/// One request of the demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Its index in [`Arrivals::requests`].
    pub id: u32,
    /// The instance it arrives at.
    pub instance: u32,
    /// When it arrives.
    pub at: Timestamp,
    /// What it costs.
    pub units: u64,
}

/// Every request of a run, in time order (ties by instance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrivals {
    /// The requests.
    pub requests: Vec<Request>,
}

impl Arrivals {
    /// The demand of a run of `story` under `options`.
    #[must_use]
    pub fn generate(options: &SimOptions, story: &Story) -> Arrivals {
        let end = options.duration();
        let total = story.instances_at(options.instances, end);
        let mut requests = Vec::new();
        for instance in 0..total {
            let start = story.start_of(options.instances, instance);
            let end = story
                .stop_of(options.instances, instance)
                .map_or(end, |stop| stop.min(end));
            let mut rng = instance_rng(options.seed, instance);
            let costs = options.costs;
            poisson(
                &mut rng,
                options.demand,
                costs.mean(),
                story,
                start,
                end,
                |at, rng| {
                    requests.push(Request {
                        id: 0,
                        instance,
                        at,
                        units: costs.draw(rng),
                    });
                },
            );
        }
        requests.sort_by_key(|r| (r.at, r.instance));
        for (i, r) in requests.iter_mut().enumerate() {
            r.id = u32::try_from(i).expect("fewer than 4 billion requests");
        }
        Arrivals { requests }
    }

    /// The units of every request.
    #[must_use]
    pub fn units(&self) -> u64 {
        self.requests.iter().map(|r| r.units).sum()
    }
}

/// The PCG stream of one instance: state from the random seed, stream from the instance.
fn instance_rng(seed: u64, instance: u32) -> Pcg64 {
    let state = u128::from(splitmix64(seed)) << 64 | u128::from(splitmix64(!seed));
    Pcg64::new(state, u128::from(instance))
}

/// Calls `emit` at each arrival of a Poisson process of `demand × factor(t)` units per minute
/// (divided by the mean cost of a request to get requests) over `[start, end)`.
fn poisson(
    rng: &mut Pcg64,
    demand: f64,
    mean_cost: f64,
    story: &Story,
    start: Duration,
    end: Duration,
    mut emit: impl FnMut(Timestamp, &mut Pcg64),
) {
    let mut bounds: Vec<Duration> = story
        .demand_changes()
        .into_iter()
        .filter(|&t| t > start && t < end)
        .collect();
    bounds.push(end);
    let mut t = start.as_secs_f64();
    let mut from = start;
    for until in bounds {
        let per_sec = demand * story.demand_factor(from) / mean_cost / 60.0;
        let until_s = until.as_secs_f64();
        if per_sec > 0.0 {
            loop {
                let u: f64 = rng.random();
                t += -(1.0 - u).ln() / per_sec;
                if t >= until_s {
                    break;
                }
                let micros = (t * 1e6).round() as u64;
                emit(Timestamp::ZERO + Duration::from_micros(micros), rng);
            }
        }
        // Memoryless: start afresh at the boundary.
        t = until_s;
        from = until;
    }
}

fn draw_cost(rng: &mut Pcg64) -> u64 {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for &(units, p) in &COST_MIX {
        acc += p;
        if u < acc {
            return units;
        }
    }
    COST_MIX[COST_MIX.len() - 1].0
}

/// SplitMix64: spreads a seed over 64 bits.
#[must_use]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(minutes: u32) -> SimOptions {
        SimOptions {
            minutes,
            ..SimOptions::default()
        }
    }

    #[test]
    fn the_mean_cost_is_1_8() {
        assert!((mean_cost() - 1.8).abs() < 1e-12);
    }

    #[test]
    fn units_arrive_at_the_demand_rate() {
        let o = options(15);
        let a = Arrivals::generate(&o, &Story::by_name("free-run").unwrap());
        let expected = o.demand * f64::from(o.instances) * 15.0; // 60,000
        let got = a.units() as f64;
        assert!((got / expected - 1.0).abs() < 0.02, "{got} vs {expected}");
        let per_instance: Vec<usize> = (0..2)
            .map(|i| a.requests.iter().filter(|r| r.instance == i).count())
            .collect();
        for n in per_instance {
            let expected = 2000.0 / 1.8 * 15.0;
            assert!((n as f64 / expected - 1.0).abs() < 0.03, "{n}");
        }
        assert!(a.requests.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(
            a.requests
                .iter()
                .enumerate()
                .all(|(i, r)| r.id as usize == i)
        );
    }

    #[test]
    fn the_cost_mix_is_drawn_in_proportion() {
        let a = Arrivals::generate(&options(15), &Story::by_name("free-run").unwrap());
        let n = a.requests.len() as f64;
        for (units, p) in COST_MIX {
            let share = a.requests.iter().filter(|r| r.units == units).count() as f64 / n;
            assert!((share - p).abs() < 0.02, "{units}: {share}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_arrivals_and_another_seed_others() {
        let story = Story::by_name("noisy-neighbour").unwrap();
        let a = Arrivals::generate(&options(2), &story);
        assert_eq!(a, Arrivals::generate(&options(2), &story));
        let other = SimOptions {
            seed: 43,
            ..options(2)
        };
        assert_ne!(a, Arrivals::generate(&other, &story));
    }

    #[test]
    fn a_burst_multiplies_the_demand_and_a_join_adds_an_instance_from_its_minute() {
        let o = options(15);
        let top = Arrivals::generate(&o, &Story::by_name("top-of-hour").unwrap());
        let in_minute = |a: &Arrivals, m: u64| {
            let (from, to) = (
                Timestamp::from_duration(Duration::from_secs(m * 60)),
                Timestamp::from_duration(Duration::from_secs(m * 60 + 60)),
            );
            a.requests
                .iter()
                .filter(|r| r.at >= from && r.at < to)
                .map(|r| r.units)
                .sum::<u64>() as f64
        };
        assert!((in_minute(&top, 10) / 12_000.0 - 1.0).abs() < 0.06);
        assert!((in_minute(&top, 9) / 4_000.0 - 1.0).abs() < 0.1);
        let scale = Arrivals::generate(&o, &Story::by_name("scale-out").unwrap());
        let third: Vec<_> = scale.requests.iter().filter(|r| r.instance == 2).collect();
        assert!(third.first().unwrap().at >= Timestamp::from_secs_f64(300.0));
        assert!((third.len() as f64 / (2000.0 / 1.8 * 10.0) - 1.0).abs() < 0.05);
        // The first two instances are not disturbed by the third.
        let free = Arrivals::generate(&o, &Story::by_name("free-run").unwrap());
        let first_two = |a: &Arrivals| {
            a.requests
                .iter()
                .filter(|r| r.instance < 2)
                .map(|r| (r.instance, r.at, r.units))
                .collect::<Vec<_>>()
        };
        assert_eq!(first_two(&scale), first_two(&free));
    }

    #[test]
    fn requests_of_one_unit_keep_the_demand_in_units_and_costs_parse_by_name() {
        let story = Story::by_name("free-run").unwrap();
        let one = SimOptions {
            costs: Costs::One,
            ..options(15)
        };
        let a = Arrivals::generate(&one, &story);
        assert!(a.requests.iter().all(|r| r.units == 1));
        // 2 instances × 2,000 units a minute × 15 minutes, as with SharePoint's costs.
        assert!(
            (a.units() as f64 / 60_000.0 - 1.0).abs() < 0.02,
            "{}",
            a.units()
        );
        let mixed = Arrivals::generate(&options(15), &story);
        assert!(
            (mixed.units() as f64 / 60_000.0 - 1.0).abs() < 0.03,
            "{}",
            mixed.units()
        );
        for name in COSTS_NAMES {
            assert_eq!(name.parse::<Costs>().unwrap().to_string(), name);
        }
        assert_eq!(" One ".parse::<Costs>(), Ok(Costs::One));
        assert_eq!(
            "tokens".parse::<Costs>().unwrap_err(),
            "unknown costs \"tokens\": expected one of sharepoint, one"
        );
    }
}
