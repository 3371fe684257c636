//! `--quirk`: odd headers that real servers send, on top of the model's answers, so that a
//! client's handling of them can be measured with `live`.
//!
//! A quirk never changes what the quota accepts: the model decides first, and a quirk only
//! dresses an accepted answer. Both count the server's accepted requests (since its start or its
//! last `POST /reset`), so which responses carry them is deterministic.

use super::Junk;
use crate::Speed;
use http::{HeaderMap, HeaderValue, StatusCode};
use std::fmt;
use std::str::FromStr;

/// `retry-after-on-success` dresses every this-many-th accepted request.
pub const RETRY_AFTER_EVERY: u64 = 50;

/// The `Retry-After` of `retry-after-on-success`, story seconds (sent scaled by the speed, as a
/// 429's is).
pub const SUCCESS_RETRY_AFTER_SECS: u64 = 120;

/// `junk` dresses every this-many-th accepted request.
pub const JUNK_EVERY: u64 = 5;

/// The names `--quirk` accepts, in the order they are listed.
pub const QUIRK_NAMES: [&str; 2] = ["retry-after-on-success", "junk"];

/// One odd behaviour of the served API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quirk {
    /// Every [`RETRY_AFTER_EVERY`]-th accepted request is answered with `Retry-After:`
    /// [`SUCCESS_RETRY_AFTER_SECS`] (scaled), alternately `200 OK` (the first) and `202
    /// Accepted`, where RFC 9110 §10.2.3 makes it a hint (on a 202, when to poll), not an order.
    RetryAfterOnSuccess,
    /// Every [`JUNK_EVERY`]-th accepted request also carries one broken or absurd set of
    /// rate-limit fields, the next of [`Junk::ALL`] in turn.
    Junk,
}

impl FromStr for Quirk {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "retry-after-on-success" => Ok(Quirk::RetryAfterOnSuccess),
            "junk" => Ok(Quirk::Junk),
            _ => Err(format!(
                "unknown quirk {s:?}: expected {}",
                QUIRK_NAMES.join(" or ")
            )),
        }
    }
}

impl fmt::Display for Quirk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Quirk::RetryAfterOnSuccess => QUIRK_NAMES[0],
            Quirk::Junk => QUIRK_NAMES[1],
        })
    }
}

/// The quirks of a server: each at most once, in the order of [`QUIRK_NAMES`]. Empty by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quirks(Vec<Quirk>);

impl FromIterator<Quirk> for Quirks {
    fn from_iter<I: IntoIterator<Item = Quirk>>(iter: I) -> Self {
        let mut quirks: Vec<Quirk> = iter.into_iter().collect();
        quirks.sort_unstable();
        quirks.dedup();
        Quirks(quirks)
    }
}

impl fmt::Display for Quirks {
    /// `none`, or the names joined by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<String> = self.names();
        f.write_str(&names.join(","))
    }
}

impl Quirks {
    /// No quirk.
    #[must_use]
    pub fn none() -> Self {
        Quirks::default()
    }

    /// Whether `quirk` is on.
    #[must_use]
    pub fn contains(&self, quirk: Quirk) -> bool {
        self.0.contains(&quirk)
    }

    /// The names of the quirks on, for `GET /stats`.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// Dresses the answer to the `nth` accepted request (counting from 1): its `status` (200)
    /// and its `headers` (the dialect's fields, already written). Junk goes first, so that on a
    /// response both quirks take, `retry-after-on-success`'s `Retry-After` is the one sent.
    pub fn dress(&self, nth: u64, speed: Speed, status: &mut StatusCode, headers: &mut HeaderMap) {
        if self.contains(Quirk::Junk) && nth.is_multiple_of(JUNK_EVERY) {
            Junk::nth(nth / JUNK_EVERY - 1).write(headers);
        }
        if self.contains(Quirk::RetryAfterOnSuccess) && nth.is_multiple_of(RETRY_AFTER_EVERY) {
            let value = speed.retry_after_value(SUCCESS_RETRY_AFTER_SECS);
            headers.insert(
                http::header::RETRY_AFTER,
                HeaderValue::try_from(value).expect("digits and a dot"),
            );
            *status = if (nth / RETRY_AFTER_EVERY) % 2 == 1 {
                StatusCode::OK
            } else {
                StatusCode::ACCEPTED
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dressed(quirks: &Quirks, nth: u64, speed: f64) -> (StatusCode, HeaderMap) {
        let mut status = StatusCode::OK;
        let mut headers = HeaderMap::new();
        quirks.dress(nth, Speed::new(speed).unwrap(), &mut status, &mut headers);
        (status, headers)
    }

    #[test]
    fn quirks_parse_by_name_and_refuse_the_rest() {
        assert_eq!(
            "retry-after-on-success".parse(),
            Ok(Quirk::RetryAfterOnSuccess)
        );
        assert_eq!("JUNK".parse(), Ok(Quirk::Junk));
        let e = "teapot".parse::<Quirk>().unwrap_err();
        assert!(
            e.contains("unknown quirk \"teapot\": expected retry-after-on-success or junk"),
            "{e}"
        );
    }

    #[test]
    fn a_set_is_ordered_and_without_repeats() {
        let q: Quirks = [Quirk::Junk, Quirk::RetryAfterOnSuccess, Quirk::Junk]
            .into_iter()
            .collect();
        assert_eq!(q.names(), ["retry-after-on-success", "junk"]);
        assert_eq!(q.to_string(), "retry-after-on-success,junk");
        assert_eq!(Quirks::none().to_string(), "none");
        assert!(Quirks::none().names().is_empty());
    }

    #[test]
    fn no_quirk_dresses_nothing() {
        for nth in 1..=100 {
            assert_eq!(
                dressed(&Quirks::none(), nth, 1.0),
                (StatusCode::OK, HeaderMap::new())
            );
        }
    }

    #[test]
    fn retry_after_on_success_is_every_fiftieth_scaled_and_alternates_its_status() {
        let q: Quirks = [Quirk::RetryAfterOnSuccess].into_iter().collect();
        let (status, h) = dressed(&q, 49, 4.0);
        assert_eq!((status, h.len()), (StatusCode::OK, 0));
        let (status, h) = dressed(&q, 50, 4.0);
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h[http::header::RETRY_AFTER], "30.000", "120 story s at 4×");
        let (status, h) = dressed(&q, 100, 1.0);
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(h[http::header::RETRY_AFTER], "120");
        assert_eq!(dressed(&q, 150, 1.0).0, StatusCode::OK);
    }

    #[test]
    fn junk_is_every_fifth_and_cycles_through_the_list() {
        let q: Quirks = [Quirk::Junk].into_iter().collect();
        assert!(dressed(&q, 4, 1.0).1.is_empty());
        let (status, h) = dressed(&q, 5, 1.0);
        assert_eq!(status, StatusCode::OK, "junk leaves the status alone");
        assert_eq!(h[http::header::RETRY_AFTER], "99999999999");
        assert_eq!(dressed(&q, 10, 1.0).1[http::header::RETRY_AFTER], "-5");
        assert_eq!(
            dressed(&q, 55, 1.0).1[http::header::RETRY_AFTER],
            "99999999999"
        );
    }

    #[test]
    fn on_a_response_both_take_the_success_s_retry_after_is_sent() {
        let q: Quirks = [Quirk::Junk, Quirk::RetryAfterOnSuccess]
            .into_iter()
            .collect();
        let (status, h) = dressed(&q, 50, 1.0);
        assert_eq!(status, StatusCode::OK);
        let retry: Vec<_> = h.get_all(http::header::RETRY_AFTER).iter().collect();
        assert_eq!(retry, ["120"]);
        assert_eq!(
            h.get_all("x-ratelimit-remaining").iter().count(),
            super::super::junk::REPEATED_REMAINING_LINES,
            "the tenth junk set"
        );
    }
}
