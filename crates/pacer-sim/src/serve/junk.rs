//! The `junk` quirk's header sets: rate-limit fields that real servers have been seen to send
//! broken, out of range or absurdly large, one set per junk response, in a fixed cycle.
//!
//! Each set is sent as it is, at every speed: the values are meant to be nonsense, so there is
//! nothing to scale. A set's fields replace the `--headers` fields of the same name (every line
//! of that name), so the client meets the junk value and not a sane one beside it; the dialect's
//! other fields stay.

use http::{HeaderMap, HeaderName, HeaderValue};

/// The size of [`Junk::HugePolicy`]'s `RateLimit-Policy` value, bytes.
pub const HUGE_POLICY_BYTES: usize = 8 * 1024;

/// How many `X-RateLimit-Remaining: 0` lines [`Junk::RepeatedRemaining`] sends.
pub const REPEATED_REMAINING_LINES: usize = 200;

/// One broken or absurd set of rate-limit fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Junk {
    /// `Retry-After: 99999999999`: millennia away.
    HugeRetryAfter,
    /// `Retry-After: -5`: outside RFC 9110's grammar (non-negative digits).
    NegativeRetryAfter,
    /// `Retry-After: Fri, 31 Dec 9999 23:59:59 GMT`: the last HTTP-date there is.
    FarDateRetryAfter,
    /// `X-RateLimit-Limit: 0` and `X-RateLimit-Remaining: -1`.
    ZeroLimitNegativeRemaining,
    /// `X-RateLimit-Remaining: 0` and a 20-digit `X-RateLimit-Reset: 99999999999999999999`,
    /// above `u64::MAX`.
    TwentyDigitReset,
    /// `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset: 253402300799`: the last second of the
    /// year 9999, in epoch seconds.
    YearNineThousandReset,
    /// `RateLimit: "default";r=0;t=99999999999` and `RateLimit-Policy: "default";q=0;w=1`: a
    /// quota of nothing, reset millennia away.
    ZeroQuotaPolicy,
    /// `RateLimit: "default";r=;t=`: parameters without values, not a structured field.
    EmptyParameters,
    /// A `RateLimit-Policy` value of [`HUGE_POLICY_BYTES`]: `"default";q=1;w=1;pad="xxx…"`.
    HugePolicy,
    /// [`REPEATED_REMAINING_LINES`] lines of `X-RateLimit-Remaining: 0`.
    RepeatedRemaining,
}

impl Junk {
    /// Every field a quirk (a set of junk or `retry-after-on-success`) may send.
    pub const FIELDS: [&'static str; 6] = [
        "retry-after",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "ratelimit",
        "ratelimit-policy",
    ];

    /// Every set, in the order the server cycles through them.
    pub const ALL: [Junk; 10] = [
        Junk::HugeRetryAfter,
        Junk::NegativeRetryAfter,
        Junk::FarDateRetryAfter,
        Junk::ZeroLimitNegativeRemaining,
        Junk::TwentyDigitReset,
        Junk::YearNineThousandReset,
        Junk::ZeroQuotaPolicy,
        Junk::EmptyParameters,
        Junk::HugePolicy,
        Junk::RepeatedRemaining,
    ];

    /// The set of the `k`-th junk response, counting from 0: the cycle of [`Junk::ALL`].
    #[must_use]
    pub fn nth(k: u64) -> Junk {
        let len = Junk::ALL.len() as u64;
        Junk::ALL[usize::try_from(k % len).expect("below the list's length")]
    }

    /// The set's header lines, names in lowercase, in the order they are sent.
    #[must_use]
    pub fn lines(self) -> Vec<(&'static str, String)> {
        let one = |name, value: &str| vec![(name, value.to_owned())];
        match self {
            Junk::HugeRetryAfter => one("retry-after", "99999999999"),
            Junk::NegativeRetryAfter => one("retry-after", "-5"),
            Junk::FarDateRetryAfter => one("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
            Junk::ZeroLimitNegativeRemaining => vec![
                ("x-ratelimit-limit", "0".to_owned()),
                ("x-ratelimit-remaining", "-1".to_owned()),
            ],
            Junk::TwentyDigitReset => vec![
                ("x-ratelimit-remaining", "0".to_owned()),
                ("x-ratelimit-reset", "99999999999999999999".to_owned()),
            ],
            Junk::YearNineThousandReset => vec![
                ("x-ratelimit-remaining", "0".to_owned()),
                ("x-ratelimit-reset", "253402300799".to_owned()),
            ],
            Junk::ZeroQuotaPolicy => vec![
                ("ratelimit", "\"default\";r=0;t=99999999999".to_owned()),
                ("ratelimit-policy", "\"default\";q=0;w=1".to_owned()),
            ],
            Junk::EmptyParameters => one("ratelimit", "\"default\";r=;t="),
            Junk::HugePolicy => {
                let head = "\"default\";q=1;w=1;pad=\"";
                let pad = HUGE_POLICY_BYTES - head.len() - 1;
                one("ratelimit-policy", &format!("{head}{}\"", "x".repeat(pad)))
            }
            Junk::RepeatedRemaining => {
                vec![("x-ratelimit-remaining", "0".to_owned()); REPEATED_REMAINING_LINES]
            }
        }
    }

    /// Writes the set into `headers`: each of its names first loses every line it had (the
    /// dialect's), then gets the set's lines.
    pub fn write(self, headers: &mut HeaderMap) {
        let lines = self.lines();
        for (name, _) in &lines {
            headers.remove(*name);
        }
        for (name, value) in lines {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::try_from(value).expect("visible ASCII"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_visits_every_set_in_order() {
        let firsts: Vec<Junk> = (0..10).map(Junk::nth).collect();
        assert_eq!(firsts, Junk::ALL);
        assert_eq!(Junk::nth(10), Junk::HugeRetryAfter);
        assert_eq!(Junk::nth(u64::MAX), Junk::ALL[(u64::MAX % 10) as usize]);
    }

    #[test]
    fn every_set_is_rate_limit_fields_and_valid_on_the_wire() {
        let known = Junk::FIELDS;
        for junk in Junk::ALL {
            let lines = junk.lines();
            assert!(!lines.is_empty(), "{junk:?}");
            for (name, _) in &lines {
                assert!(known.contains(name), "{junk:?}: {name}");
            }
            let mut h = HeaderMap::new();
            junk.write(&mut h);
            assert_eq!(h.len(), lines.len(), "{junk:?}");
        }
    }

    #[test]
    fn the_big_ones_are_their_size() {
        let mut h = HeaderMap::new();
        Junk::HugePolicy.write(&mut h);
        let policy = h["ratelimit-policy"].as_bytes();
        assert_eq!(policy.len(), HUGE_POLICY_BYTES);
        assert!(policy.starts_with(b"\"default\";q=1;w=1;pad=\"xxx"));
        assert!(policy.ends_with(b"xx\""));

        let mut h = HeaderMap::new();
        Junk::RepeatedRemaining.write(&mut h);
        let all: Vec<_> = h.get_all("x-ratelimit-remaining").iter().collect();
        assert_eq!(all.len(), REPEATED_REMAINING_LINES);
        assert!(all.iter().all(|v| *v == "0"));
    }

    #[test]
    fn a_set_replaces_the_dialect_s_field_of_the_same_name_and_keeps_the_others() {
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-limit", HeaderValue::from_static("3000"));
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("120"));
        h.insert("x-ratelimit-reset", HeaderValue::from_static("1767225625"));
        Junk::ZeroLimitNegativeRemaining.write(&mut h);
        assert_eq!(h["x-ratelimit-limit"], "0");
        let remaining: Vec<_> = h.get_all("x-ratelimit-remaining").iter().collect();
        assert_eq!(remaining, ["-1"]);
        assert_eq!(h["x-ratelimit-reset"], "1767225625");
    }
}
