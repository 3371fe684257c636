//! One pass over a `HeaderMap` that picks out every field a dialect reads.
//!
//! `HeaderName`s are lowercase, so matching is case-insensitive for free. Repeated lines of a
//! field are kept together ([`Lines`]) and combined the way RFC 9110 §5.3 says: joined with
//! commas. A line that is not visible ASCII poisons its field, which is then ignored whole
//! (draft-11: "malformed fields MUST be ignored"); so does a field longer than
//! [`MAX_FIELD_BYTES`] or of more than [`MAX_MEMBERS`] lines, so that no response can make the
//! parser's work grow without bound.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue};

use super::bounds::{MAX_FIELD_BYTES, MAX_MEMBERS};

/// The lines of one header field, in order.
#[derive(Debug, Default)]
pub(crate) struct Lines<'a> {
    first: Option<&'a str>,
    more: Vec<&'a str>,
    /// The length of the joined value so far, plus the `", "` after it.
    bytes: usize,
    poisoned: bool,
}

impl<'a> Lines<'a> {
    fn push(&mut self, value: &'a HeaderValue) {
        if self.poisoned {
            return;
        }
        let lines = usize::from(self.first.is_some()) + self.more.len();
        self.bytes = self.bytes.saturating_add(value.len() + 2);
        if self.bytes > MAX_FIELD_BYTES + 2 || lines >= MAX_MEMBERS {
            self.poisoned = true;
            self.more = Vec::new();
            return;
        }
        match value.to_str() {
            Ok(s) if self.first.is_none() => self.first = Some(s),
            Ok(s) => self.more.push(s),
            Err(_) => self.poisoned = true,
        }
    }

    /// `true` when the field was sent at all (even if malformed).
    pub(crate) fn is_present(&self) -> bool {
        self.first.is_some() || self.poisoned
    }

    /// The field value with its lines joined by `", "`; `None` when the field is absent or
    /// malformed (a line not visible ASCII, too long, too many lines).
    pub(crate) fn joined(&self) -> Option<Cow<'a, str>> {
        if self.poisoned {
            return None;
        }
        let first = self.first?;
        if self.more.is_empty() {
            return Some(Cow::Borrowed(first));
        }
        let mut all = String::from(first);
        for line in &self.more {
            all.push_str(", ");
            all.push_str(line);
        }
        Some(Cow::Owned(all))
    }

    /// Its lines, in order; none when the field is absent or malformed (see
    /// [`joined`](Self::joined)).
    pub(crate) fn lines(&self) -> impl Iterator<Item = &'a str> + '_ {
        let first = if self.poisoned { None } else { self.first };
        let more: &[&'a str] = if first.is_some() { &self.more } else { &[] };
        first.into_iter().chain(more.iter().copied())
    }

    /// The lines of one field, as a [`HeaderMap`] holds them (`get_all`): the bounds and the
    /// poisoning of [`Collected`]'s, for a field looked up by name. Allocates only for a
    /// repeated line.
    pub(crate) fn of(values: http::header::GetAll<'a, HeaderValue>) -> Lines<'a> {
        let mut lines = Lines::default();
        for value in values {
            lines.push(value);
        }
        lines
    }

    /// The value of a singleton field: repeated lines must be identical (after trimming),
    /// otherwise the field is ambiguous and ignored.
    pub(crate) fn singleton(&self) -> Option<&'a str> {
        if self.poisoned {
            return None;
        }
        let first = self.first?;
        let trimmed = first.trim_matches([' ', '\t']);
        self.more
            .iter()
            .all(|l| l.trim_matches([' ', '\t']) == trimmed)
            .then_some(first)
    }
}

/// Which counter of a policy a field carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    Limit,
    Remaining,
    Reset,
}

/// The counters by the name they have in a field name.
const COUNTERS: [(&str, Counter); 3] = [
    ("limit", Counter::Limit),
    ("remaining", Counter::Remaining),
    ("reset", Counter::Reset),
];

fn counter_of(name: &str) -> Option<Counter> {
    COUNTERS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

/// The family of a field whose name carries a policy name: `x-ratelimit-limit-requests`,
/// `x-ratelimit-requests-limit`, `x-ratelimit-userlimit`, `anthropic-ratelimit-input-tokens-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `x-ratelimit-{counter}-{name}`: OpenAI, Kong's windows.
    XRateLimit,
    /// `x-ratelimit-{name}-{counter}`: Linear.
    NameFirst,
    /// `x-ratelimit-{name}{counter}`: Imgur.
    Glued,
    Anthropic,
}

/// The three counters of one named policy.
#[derive(Debug)]
pub(crate) struct Named<'a> {
    pub(crate) family: Family,
    pub(crate) name: &'a str,
    pub(crate) limit: Lines<'a>,
    pub(crate) remaining: Lines<'a>,
    pub(crate) reset: Lines<'a>,
}

/// The `X-RateLimit-*` / `X-Rate-Limit-*` fields without a policy name in them.
#[derive(Debug, Default)]
pub(crate) struct XFields<'a> {
    pub(crate) limit: Lines<'a>,
    pub(crate) remaining: Lines<'a>,
    pub(crate) reset: Lines<'a>,
    pub(crate) used: Lines<'a>,
    pub(crate) resource: Lines<'a>,
    pub(crate) reset_after: Lines<'a>,
    pub(crate) bucket: Lines<'a>,
}

/// HubSpot's `X-HubSpot-RateLimit-*` fields.
#[derive(Debug, Default)]
pub(crate) struct HubSpotFields<'a> {
    pub(crate) max: Lines<'a>,
    pub(crate) remaining: Lines<'a>,
    pub(crate) interval_ms: Lines<'a>,
    pub(crate) daily: Lines<'a>,
    pub(crate) daily_remaining: Lines<'a>,
    pub(crate) secondly: Lines<'a>,
    pub(crate) secondly_remaining: Lines<'a>,
}

/// One `Zendesk-RateLimit-{endpoint}` field.
#[derive(Debug)]
pub(crate) struct ZendeskField<'a> {
    /// The endpoint, the field name's suffix (`tickets-index`).
    pub(crate) endpoint: &'a str,
    pub(crate) lines: Lines<'a>,
}

/// Every rate-limit field of a response, by role.
#[derive(Debug, Default)]
pub(crate) struct Collected<'a> {
    pub(crate) ratelimit: Lines<'a>,
    pub(crate) ratelimit_policy: Lines<'a>,
    pub(crate) ietf_limit: Lines<'a>,
    pub(crate) ietf_remaining: Lines<'a>,
    pub(crate) ietf_reset: Lines<'a>,
    pub(crate) x: XFields<'a>,
    pub(crate) named: Vec<Named<'a>>,
    pub(crate) shopify: Lines<'a>,
    pub(crate) hubspot: HubSpotFields<'a>,
    pub(crate) salesforce: Lines<'a>,
    pub(crate) zendesk: Vec<ZendeskField<'a>>,
    pub(crate) retry_after: Lines<'a>,
    pub(crate) retry_after_ms: Lines<'a>,
    /// Azure's `x-ms-retry-after-ms`.
    pub(crate) x_ms_retry_after_ms: Lines<'a>,
    /// gRPC's `grpc-retry-pushback-ms`.
    pub(crate) grpc_retry_pushback_ms: Lines<'a>,
    pub(crate) found: bool,
}

/// Whether a field named `name` may be one that a dialect reads: a test of its first bytes, so
/// that a response without any (most responses) is passed over cheaply. Every name
/// [`Collected`] picks out passes it.
pub(crate) fn may_be_field(name: &str) -> bool {
    match name.as_bytes().first() {
        Some(b'r') => name.starts_with("ratelimit") || name.starts_with("retry-after"),
        Some(b'x') => {
            name.starts_with("x-ratelimit-")
                // `x-rate-limit-*`, and Zendesk's bare `x-rate-limit`.
                || name.starts_with("x-rate-limit")
                || name == "x-shopify-shop-api-call-limit"
                || name.starts_with("x-hubspot-ratelimit-")
                || name == "x-ms-retry-after-ms"
        }
        Some(b'a') => name.starts_with("anthropic-ratelimit-"),
        Some(b's') => name == "sforce-limit-info",
        Some(b'g') => name == "grpc-retry-pushback-ms",
        Some(b'z') => name.starts_with("zendesk-ratelimit-"),
        _ => false,
    }
}

impl<'a> Collected<'a> {
    /// Walks `headers` once (the tests' shorthand for [`fill`](Self::fill)).
    #[cfg(test)]
    pub(crate) fn from_map(headers: &'a HeaderMap) -> Collected<'a> {
        let mut c = Collected::default();
        c.fill(headers);
        c
    }

    /// Walks `headers` once, into an empty `Collected` (where it stands: it is a kilobyte).
    pub(crate) fn fill(&mut self, headers: &'a HeaderMap) {
        for (name, value) in headers {
            self.add(name.as_str(), value);
        }
    }

    fn add(&mut self, name: &'a str, value: &'a HeaderValue) {
        if !may_be_field(name) {
            return;
        }
        let lines = match name {
            "ratelimit" => &mut self.ratelimit,
            "ratelimit-policy" => &mut self.ratelimit_policy,
            "ratelimit-limit" => &mut self.ietf_limit,
            "ratelimit-remaining" => &mut self.ietf_remaining,
            "ratelimit-reset" => &mut self.ietf_reset,
            "retry-after" => &mut self.retry_after,
            "retry-after-ms" => &mut self.retry_after_ms,
            "x-ms-retry-after-ms" => &mut self.x_ms_retry_after_ms,
            "grpc-retry-pushback-ms" => &mut self.grpc_retry_pushback_ms,
            "x-shopify-shop-api-call-limit" => &mut self.shopify,
            "sforce-limit-info" => &mut self.salesforce,
            // Zendesk's account-wide limit, beside `X-Rate-Limit-Remaining`.
            "x-rate-limit" => &mut self.x.limit,
            _ => {
                if let Some(rest) = name
                    .strip_prefix("x-ratelimit-")
                    .or_else(|| name.strip_prefix("x-rate-limit-"))
                {
                    self.add_x(rest, value);
                } else if let Some((policy, counter)) = name
                    .strip_prefix("anthropic-ratelimit-")
                    .and_then(|rest| rest.rsplit_once('-'))
                    .and_then(|(p, c)| Some((p, counter_of(c)?)))
                {
                    self.add_named(Family::Anthropic, policy, counter, value);
                } else if let Some(rest) = name.strip_prefix("x-hubspot-ratelimit-") {
                    self.add_hubspot(rest, value);
                } else if let Some(endpoint) = name.strip_prefix("zendesk-ratelimit-") {
                    self.add_zendesk(endpoint, value);
                }
                return;
            }
        };
        lines.push(value);
        self.found = true;
    }

    fn add_x(&mut self, rest: &'a str, value: &'a HeaderValue) {
        let x = &mut self.x;
        let lines = match rest {
            "limit" => &mut x.limit,
            "remaining" => &mut x.remaining,
            "reset" => &mut x.reset,
            "used" => &mut x.used,
            "resource" => &mut x.resource,
            "reset-after" => &mut x.reset_after,
            "bucket" => &mut x.bucket,
            _ => {
                self.add_x_named(rest, value);
                return;
            }
        };
        lines.push(value);
        self.found = true;
    }

    /// `x-hubspot-ratelimit-{max,remaining,interval-milliseconds,daily,…}`.
    fn add_hubspot(&mut self, rest: &'a str, value: &'a HeaderValue) {
        let h = &mut self.hubspot;
        let lines = match rest {
            "max" => &mut h.max,
            "remaining" => &mut h.remaining,
            "interval-milliseconds" => &mut h.interval_ms,
            "daily" => &mut h.daily,
            "daily-remaining" => &mut h.daily_remaining,
            "secondly" => &mut h.secondly,
            "secondly-remaining" => &mut h.secondly_remaining,
            _ => return,
        };
        lines.push(value);
        self.found = true;
    }

    /// `zendesk-ratelimit-{endpoint}`, one field per endpoint (at most [`MAX_MEMBERS`]).
    fn add_zendesk(&mut self, endpoint: &'a str, value: &'a HeaderValue) {
        if endpoint.is_empty() {
            return;
        }
        let field = match self.zendesk.iter_mut().position(|z| z.endpoint == endpoint) {
            Some(i) => &mut self.zendesk[i],
            None if self.zendesk.len() >= MAX_MEMBERS => return,
            None => {
                self.zendesk.push(ZendeskField {
                    endpoint,
                    lines: Lines::default(),
                });
                let last = self.zendesk.len() - 1;
                &mut self.zendesk[last]
            }
        };
        field.lines.push(value);
        self.found = true;
    }

    /// `limit-requests` (OpenAI, Kong), `requests-limit` (Linear) or `userlimit` (Imgur).
    fn add_x_named(&mut self, rest: &'a str, value: &'a HeaderValue) {
        if let Some((counter, policy)) = rest
            .split_once('-')
            .and_then(|(c, p)| Some((counter_of(c)?, p)))
        {
            self.add_named(Family::XRateLimit, policy, counter, value);
            return;
        }
        if let Some((policy, counter)) = rest.rsplit_once('-') {
            if let Some(counter) = counter_of(counter) {
                self.add_named(Family::NameFirst, policy, counter, value);
            }
            return;
        }
        for (suffix, counter) in COUNTERS {
            if let Some(policy) = rest.strip_suffix(suffix) {
                self.add_named(Family::Glued, policy, counter, value);
                return;
            }
        }
    }

    fn add_named(
        &mut self,
        family: Family,
        name: &'a str,
        counter: Counter,
        value: &'a HeaderValue,
    ) {
        if name.is_empty() {
            return;
        }
        let i = match self
            .named
            .iter()
            .position(|n| n.family == family && n.name == name)
        {
            Some(i) => i,
            None if self.named.len() >= MAX_MEMBERS => return,
            None => {
                self.named.push(Named {
                    family,
                    name,
                    limit: Lines::default(),
                    remaining: Lines::default(),
                    reset: Lines::default(),
                });
                self.named.len() - 1
            }
        };
        let named = &mut self.named[i];
        match counter {
            Counter::Limit => named.limit.push(value),
            Counter::Remaining => named.remaining.push(value),
            Counter::Reset => named.reset.push(value),
        }
        self.found = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_bytes(v).unwrap());
        }
        m
    }

    #[test]
    fn every_field_read_passes_the_quick_test() {
        let mut found = 0;
        for name in crate::headers::hostile::NAMES {
            if Collected::from_map(&map(&[(name, b"1")])).found {
                assert!(may_be_field(name), "{name}");
                found += 1;
            }
        }
        assert!(found >= 20, "only {found} of the names were read");
        for name in ["content-type", "age", "date", "x-request-id", "rate", "r"] {
            assert!(!may_be_field(name), "{name}");
            assert!(!Collected::from_map(&map(&[(name, b"1")])).found, "{name}");
        }
    }

    #[test]
    fn repeated_lines_join_with_commas() {
        let m = map(&[("RateLimit", b"\"a\";r=1"), ("ratelimit", b"\"b\";r=2")]);
        let c = Collected::from_map(&m);
        assert_eq!(
            c.ratelimit.joined().as_deref(),
            Some("\"a\";r=1, \"b\";r=2")
        );
    }

    #[test]
    fn a_singleton_needs_identical_lines() {
        let m = map(&[("retry-after", b"5"), ("Retry-After", b" 5")]);
        assert_eq!(Collected::from_map(&m).retry_after.singleton(), Some("5"));
        let m = map(&[("retry-after", b"5"), ("retry-after", b"6")]);
        assert_eq!(Collected::from_map(&m).retry_after.singleton(), None);
    }

    #[test]
    fn a_non_ascii_line_poisons_the_field() {
        let m = map(&[("ratelimit", b"\"a\";r=1"), ("ratelimit", b"\"\xe9\";r=2")]);
        let c = Collected::from_map(&m);
        assert!(c.ratelimit.is_present());
        assert_eq!(c.ratelimit.joined(), None);
    }

    #[test]
    fn named_families_group_by_policy() {
        let m = map(&[
            ("x-ratelimit-limit-requests", b"60"),
            ("x-ratelimit-remaining-requests", b"59"),
            ("X-RateLimit-Reset-Requests", b"1s"),
            ("x-ratelimit-limit-tokens", b"150000"),
            ("anthropic-ratelimit-input-tokens-limit", b"80000"),
            ("anthropic-ratelimit-input-tokens-bogus", b"1"),
            ("x-ratelimit-reset-after", b"1.5"),
            ("x-rate-limit-remaining", b"7"),
            ("content-type", b"text/plain"),
        ]);
        let c = Collected::from_map(&m);
        let names: Vec<_> = c.named.iter().map(|n| (n.family, n.name)).collect();
        assert_eq!(
            names,
            [
                (Family::XRateLimit, "requests"),
                (Family::XRateLimit, "tokens"),
                (Family::Anthropic, "input-tokens"),
            ]
        );
        assert_eq!(c.named[0].reset.singleton(), Some("1s"));
        assert_eq!(c.x.reset_after.singleton(), Some("1.5"));
        assert_eq!(c.x.remaining.singleton(), Some("7"));
        assert!(c.found);
        assert!(!Collected::from_map(&map(&[("server", b"x")])).found);
    }
}
