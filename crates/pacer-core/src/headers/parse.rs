//! `RateLimitInfo::from_headers`: one pass to collect the fields, then each dialect reads its
//! own. Dialects are not exclusive: a response that carries several (Kong sends the legacy IETF
//! fields and window-in-name ones) yields all their policies, and the most restrictive wins.

use std::time::SystemTime;

use http::{HeaderMap, HeaderValue};

use super::bounds::MAX_FIELD_BYTES;
use super::collect::{Collected, Family, may_be_field};
use super::info::RateLimitInfo;
use super::policy::Policy;
use super::retry_after::retry_after;
use super::{hubspot, ietf, salesforce, vendors, x_ratelimit, zendesk};
use crate::WallTime;

/// Parses every dialect in `headers` against `now`. Total: never fails, never panics.
pub(crate) fn parse(headers: &HeaderMap, now: SystemTime) -> RateLimitInfo {
    parse_with_age(headers, now).0
}

/// The response's `Age` field, when the reading saw it go by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Age<'a> {
    /// Every field was looked at: its first `Age` line, if it has one.
    Seen(Option<&'a HeaderValue>),
    /// Not every field was looked at: the caller looks it up.
    Unknown,
}

/// [`parse`], and the `Age` field where the reading saw every field name go by (the engine asks
/// for it whenever a response carries rate-limit fields: such a response from a cache is not
/// kept).
pub(crate) fn parse_with_age(headers: &HeaderMap, now: impl WallTime) -> (RateLimitInfo, Age<'_>) {
    // Most responses carry no field a dialect reads: one look at each name (a walk over the
    // names alone is cheaper than over the names with their values) says so.
    if !headers.keys().any(|name| may_be_field(name.as_str())) {
        return (RateLimitInfo::default(), Age::Unknown);
    }
    match scan(headers) {
        Scan::Nothing => (RateLimitInfo::default(), Age::Unknown),
        Scan::Draft11 {
            policy,
            ratelimit,
            age,
        } => (draft11(policy, ratelimit), Age::Seen(age)),
        Scan::Other => (every_dialect(headers, now.wall_time()), Age::Unknown),
    }
}

/// Every dialect's fields collected, and each read.
fn every_dialect(headers: &HeaderMap, now: SystemTime) -> RateLimitInfo {
    let mut c = Collected::default();
    c.fill(headers);
    if !c.found {
        return RateLimitInfo::default();
    }
    let mut policies = Vec::new();
    ietf::read(&c, now, &mut policies);
    x_ratelimit::read(&c, now, &mut policies);
    for named in &c.named {
        match named.family {
            Family::Anthropic => vendors::anthropic(named, now, &mut policies),
            Family::XRateLimit => match x_ratelimit::window_of(named.name) {
                Some((name, window)) => {
                    x_ratelimit::read_windowed(named, name, window, now, &mut policies);
                }
                None => vendors::openai(named, now, &mut policies),
            },
            Family::NameFirst => vendors::linear(named, now, &mut policies),
            Family::Glued => vendors::imgur(named, now, &mut policies),
        }
    }
    // Shopify's field states no leak rate: the 20 s drain is Shopify's documented one, assumed.
    // A response that also states the window of a bucket of the same size, in another dialect,
    // describes the same bucket twice; the stated window wins.
    policies.extend(vendors::shopify(&c.shopify).filter(|shopify| {
        !policies
            .iter()
            .any(|p| p.limit() == shopify.limit() && p.window().is_some_and(|w| !w.is_zero()))
    }));
    hubspot::read(&c.hubspot, &mut policies);
    salesforce::read(&c.salesforce, &mut policies);
    zendesk::read(&c.zendesk, &mut policies);
    mark_zero_limits(&mut policies);
    let retry_after = retry_after(
        &c.retry_after,
        [
            &c.retry_after_ms,
            &c.x_ms_retry_after_ms,
            &c.grpc_retry_pushback_ms,
        ],
        now,
    );
    RateLimitInfo::from_parts(policies, retry_after)
}

/// What a response's field names say before anything is read.
enum Scan<'a> {
    /// No field a dialect reads.
    Nothing,
    /// Only `RateLimit-Policy` and `RateLimit`, a line each at most (what most servers that
    /// send fields send): read without collecting every dialect's fields.
    Draft11 {
        policy: Option<&'a HeaderValue>,
        ratelimit: Option<&'a HeaderValue>,
        /// The first `Age` line, seen on the way.
        age: Option<&'a HeaderValue>,
    },
    /// Anything else: every dialect is read.
    Other,
}

/// One look at each field name (stopping at the first that is neither draft-11 field).
fn scan(headers: &HeaderMap) -> Scan<'_> {
    let (mut policy, mut ratelimit, mut age) = (None, None, None);
    for (name, value) in headers {
        let name = name.as_str();
        // The two draft-11 names are told before the look at every dialect's names.
        let slot = match name {
            "ratelimit-policy" => &mut policy,
            "ratelimit" => &mut ratelimit,
            _ if may_be_field(name) => return Scan::Other,
            _ => {
                if name == "age" && age.is_none() {
                    age = Some(value);
                }
                continue;
            }
        };
        if slot.replace(value).is_some() {
            // A second line, to be joined: the general reading does it.
            return Scan::Other;
        }
    }
    if policy.is_none() && ratelimit.is_none() {
        Scan::Nothing
    } else {
        Scan::Draft11 {
            policy,
            ratelimit,
            age,
        }
    }
}

/// The IETF policies of a response whose only rate-limit fields are `RateLimit-Policy` and
/// `RateLimit`, a line each: what [`parse`]'s general reading gives for it (a property test
/// holds the two to that). A line that is too long or not visible ASCII is malformed and
/// ignored, as [`Collected`] ignores it.
fn draft11(policy: Option<&HeaderValue>, ratelimit: Option<&HeaderValue>) -> RateLimitInfo {
    let mut policies = Vec::new();
    ietf::read_fields(
        policy.and_then(ietf::policy_line),
        ratelimit
            .filter(|line| line.len() <= MAX_FIELD_BYTES)
            .map(ietf::RateLimitField::Line),
        None,
        &mut policies,
    );
    mark_zero_limits(&mut policies);
    RateLimitInfo::from_parts(policies, None)
}

/// A limit of 0 is out of range: no request could ever be sent. (OpenAI's "not reported"
/// zero has been dropped before.)
fn mark_zero_limits(policies: &mut [Policy]) {
    for p in policies {
        if p.limit() == Some(0) {
            p.mark_unsound();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderName;
    use proptest::prelude::*;

    /// Field names: the two draft-11 fields most of the time, now and then a field no dialect
    /// reads, or one another dialect reads.
    fn name() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            4 => Just("ratelimit"),
            4 => Just("ratelimit-policy"),
            1 => Just("content-type"),
            1 => Just("x-ratelimit-remaining"),
            1 => Just("ratelimit-remaining"),
            1 => Just("retry-after"),
        ]
    }

    /// Field values: draft-11 members as servers write them (a limit of 0 and a window of 0
    /// among them), structured-field-like text, raw bytes and, rarely, a field too long.
    fn value() -> impl Strategy<Value = Vec<u8>> {
        let member = prop_oneof![
            ("[a-cA-C]{1,3}", 0u64..200, 0u64..100)
                .prop_map(|(n, r, t)| format!(r#""{n}";r={r};t={t}"#)),
            ("[a-cA-C]{1,3}", 0u64..200, 0u64..100)
                .prop_map(|(n, q, w)| format!(r#""{n}";q={q};w={w}"#)),
            (0u64..200, 0u64..100).prop_map(|(q, w)| format!("{q};w={w}")),
            Just("limit=10, remaining=5, reset=3".to_owned()),
            "[\"a;=qrtw1, -:]{0,8}",
        ];
        prop_oneof![
            6 => proptest::collection::vec(member, 1..3).prop_map(|m| m.join(", ").into_bytes()),
            1 => proptest::collection::vec(any::<u8>(), 0..16),
            // One member whose name takes the field to its longest allowed, or a byte over.
            1 => (0usize..3).prop_map(|over| {
                let name = "a".repeat(MAX_FIELD_BYTES + over - r#""";r=1"#.len() - 1);
                format!(r#""{name}";r=1"#).into_bytes()
            }),
        ]
    }

    fn header_map() -> impl Strategy<Value = HeaderMap> {
        proptest::collection::vec((name(), value()), 0..4).prop_map(|fields| {
            let mut map = HeaderMap::new();
            for (name, bytes) in fields {
                if let Ok(v) = HeaderValue::from_bytes(&bytes) {
                    map.append(HeaderName::from_static(name), v);
                }
            }
            map
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn the_draft11_reading_gives_what_every_dialect_s_reading_gives(headers in header_map()) {
            let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
            prop_assert_eq!(parse(&headers, now), every_dialect(&headers, now), "{:?}", headers);
        }
    }

    #[test]
    fn only_the_two_draft11_fields_a_line_each_take_the_short_reading() {
        let map = |fields: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in fields {
                m.append(*k, HeaderValue::from_static(v));
            }
            m
        };
        let policy = ("ratelimit-policy", r#""d";q=100;w=60"#);
        let state = ("ratelimit", r#""d";r=50;t=30"#);
        let short = |m: &HeaderMap| matches!(scan(m), Scan::Draft11 { .. });
        assert!(short(&map(&[
            policy,
            state,
            ("content-type", "text/plain")
        ])));
        assert!(short(&map(&[state])));
        assert!(
            !short(&map(&[policy, state, state])),
            "two lines are joined"
        );
        assert!(!short(&map(&[policy, state, ("retry-after", "1")])));
        assert!(matches!(scan(&map(&[("date", "x")])), Scan::Nothing));
        let info = parse(&map(&[policy, state]), SystemTime::UNIX_EPOCH);
        assert_eq!((info.limit(), info.remaining()), (Some(100), Some(50)));
    }
}
