//! One quota policy reported by a server: the unit a [`crate::RateLimitInfo`] is made of.
//!
//! A response can report several limits at once (an IETF `RateLimit-Policy` list, OpenAI's
//! requests and tokens, Anthropic's input and output tokens). Each becomes a [`Policy`]; the
//! info orders them most restrictive first.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::bounds::{MAX_RESET_AFTER, MAX_WINDOW};

/// The reset assumed for an exhausted policy that names neither a reset nor a window.
///
/// RateLimitHeaders' `MinimumExhaustedDelay`.
pub(crate) const EXHAUSTED_FALLBACK_RESET: Duration = Duration::from_secs(1);

/// What a quota counts.
///
/// IETF draft-11 names `requests` (the default), `content-bytes` and `concurrent-requests`; LLM
/// APIs count tokens, and Anthropic splits them into input and output tokens.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[non_exhaustive]
pub enum QuotaUnit {
    /// Requests (the IETF default).
    #[default]
    Requests,
    /// Tokens, input and output together (OpenAI, Anthropic).
    Tokens,
    /// Input tokens (Anthropic).
    InputTokens,
    /// Output tokens (Anthropic).
    OutputTokens,
    /// Bytes of content (IETF `qu="content-bytes"`).
    ContentBytes,
    /// Requests in flight at once (IETF `qu="concurrent-requests"`).
    ConcurrentRequests,
    /// A unit Pacer does not know, as the server named it.
    Other(Box<str>),
}

impl QuotaUnit {
    /// Reads a unit name as IETF `qu` and the vendors spell it (case-insensitive).
    ///
    /// ```
    /// use pacer_core::QuotaUnit;
    /// assert_eq!(QuotaUnit::from_name("content-bytes"), QuotaUnit::ContentBytes);
    /// assert_eq!(QuotaUnit::from_name("Input-Tokens"), QuotaUnit::InputTokens);
    /// assert_eq!(QuotaUnit::from_name("widgets"), QuotaUnit::Other("widgets".into()));
    /// ```
    #[must_use]
    pub fn from_name(name: &str) -> QuotaUnit {
        QuotaUnit::read(name)
    }

    /// Its name, as IETF `qu` and [`from_name`](Self::from_name) spell it: `requests`,
    /// `tokens`, `input-tokens`, `output-tokens`, `content-bytes`, `concurrent-requests`, or the
    /// server's own.
    ///
    /// ```
    /// use pacer_core::QuotaUnit;
    /// assert_eq!(QuotaUnit::InputTokens.as_str(), "input-tokens");
    /// assert_eq!(QuotaUnit::from_name(QuotaUnit::ContentBytes.as_str()), QuotaUnit::ContentBytes);
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            QuotaUnit::Requests => "requests",
            QuotaUnit::Tokens => "tokens",
            QuotaUnit::InputTokens => "input-tokens",
            QuotaUnit::OutputTokens => "output-tokens",
            QuotaUnit::ContentBytes => "content-bytes",
            QuotaUnit::ConcurrentRequests => "concurrent-requests",
            QuotaUnit::Other(name) => name,
        }
    }

    fn read(name: &str) -> QuotaUnit {
        let is = |s: &str| name.eq_ignore_ascii_case(s);
        if is("requests") || is("request") {
            QuotaUnit::Requests
        } else if is("tokens") {
            QuotaUnit::Tokens
        } else if is("input-tokens") {
            QuotaUnit::InputTokens
        } else if is("output-tokens") {
            QuotaUnit::OutputTokens
        } else if is("content-bytes") {
            QuotaUnit::ContentBytes
        } else if is("concurrent-requests") {
            QuotaUnit::ConcurrentRequests
        } else {
            QuotaUnit::Other(name.into())
        }
    }
}

/// Which header dialect a [`Policy`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// IETF draft-08 and later (draft-11): `RateLimit` and `RateLimit-Policy` as lists of
    /// policies named by strings, with `r`, `t`, `q`, `w`, `qu`, `pk` parameters.
    IetfStructured,
    /// IETF draft-07: `RateLimit: limit=…, remaining=…, reset=…` and `RateLimit-Policy: 100;w=10`.
    IetfDraft07,
    /// IETF drafts -00 to -06: separate `RateLimit-Limit`, `-Remaining` and `-Reset` fields.
    IetfLegacy,
    /// `X-RateLimit-*` or `X-Rate-Limit-*` (Envoy, Kong, X/Twitter and many others).
    XRateLimit,
    /// GitHub's `X-RateLimit-*` with `X-RateLimit-Resource` and `X-RateLimit-Used`.
    GitHub,
    /// Discord's `X-RateLimit-*` with `X-RateLimit-Reset-After` and `X-RateLimit-Bucket`.
    Discord,
    /// OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`.
    OpenAi,
    /// Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*`.
    Anthropic,
    /// Shopify's `X-Shopify-Shop-Api-Call-Limit: used/limit`.
    Shopify,
    /// Shopify's GraphQL cost, `extensions.cost.throttleStatus` in a response's body, read in
    /// queries of the reporting query's cost ([`QueryCost`](crate::QueryCost)).
    ShopifyGraphql,
    /// Linear's `X-RateLimit-{Name}-{Limit,Remaining,Reset}` (`X-RateLimit-Requests-Limit`,
    /// `X-RateLimit-Complexity-Remaining`): the policy name before the counter, as any server
    /// that writes it so.
    Linear,
    /// Imgur's `X-RateLimit-UserLimit`, `X-RateLimit-ClientRemaining`: the policy name glued to
    /// the counter.
    Imgur,
    /// Reddit's `x-ratelimit-used` and `x-ratelimit-remaining` without a limit (the limit is
    /// their sum).
    Reddit,
    /// HubSpot's `X-HubSpot-RateLimit-*`: policies `burst` (over
    /// `-Interval-Milliseconds`), `daily` and `secondly`.
    HubSpot,
    /// Salesforce's `Sforce-Limit-Info: api-usage=18/5000`: one policy per `name=used/limit`.
    Salesforce,
    /// Zendesk's `Zendesk-RateLimit-{endpoint}: total=100; remaining=99; resets=41`: one
    /// policy per endpoint.
    Zendesk,
    /// A dialect the user declared ([`DeclaredDialect`](crate::DeclaredDialect)); the policy
    /// carries its name.
    Declared,
}

/// One limit a server reported: its quota, what remains, when it resets.
///
/// Every field is optional because every dialect leaves some out. Durations are relative to the
/// `now` the headers were parsed with; [`crate::RateLimitInfo::aged`] moves them on.
///
/// ```
/// use pacer_core::{Dialect, Policy};
/// use std::time::Duration;
///
/// let p = Policy::new(Dialect::IetfStructured)
///     .with_name("burst")
///     .with_limit(100)
///     .with_remaining(8)
///     .with_reset_after(Duration::from_secs(30));
/// assert_eq!(p.remaining_fraction(), Some(0.08));
/// assert!(!p.is_exhausted());
/// assert!(p.is_sound());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    name: Option<Name>,
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_after: Option<Duration>,
    window: Option<Duration>,
    partition_key: Option<Box<[u8]>>,
    unit: QuotaUnit,
    dialect: Dialect,
    sound: bool,
}

impl Policy {
    /// An empty policy read from `dialect`, counting [`QuotaUnit::Requests`].
    #[must_use]
    pub fn new(dialect: Dialect) -> Policy {
        Policy {
            name: None,
            limit: None,
            remaining: None,
            reset_after: None,
            window: None,
            partition_key: None,
            unit: QuotaUnit::Requests,
            dialect,
            sound: true,
        }
    }

    /// Sets the policy name (IETF policy name, OpenAI `requests`, GitHub resource, …).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<Cow<'static, str>>) -> Policy {
        self.set_name(name.into());
        self
    }

    /// Sets the quota of the window (IETF `q`, `X-RateLimit-Limit`).
    #[must_use]
    pub fn with_limit(mut self, limit: u64) -> Policy {
        self.limit = Some(limit);
        self
    }

    /// Sets the quota left (IETF `r`, `X-RateLimit-Remaining`).
    #[must_use]
    pub fn with_remaining(mut self, remaining: u64) -> Policy {
        self.remaining = Some(remaining);
        self
    }

    /// Sets the time until the quota resets, clamped to [`crate::RateLimitInfo::MAX_RESET_AFTER`].
    #[must_use]
    pub fn with_reset_after(mut self, reset_after: Duration) -> Policy {
        self.reset_after = Some(reset_after.min(MAX_RESET_AFTER));
        self
    }

    /// Sets the length of the quota window (IETF `w`), clamped to 365 days.
    #[must_use]
    pub fn with_window(mut self, window: Duration) -> Policy {
        self.window = Some(window.min(MAX_WINDOW));
        self
    }

    /// Sets the partition key (IETF `pk`, Discord bucket): the quota is allocated per key.
    #[must_use]
    pub fn with_partition_key(mut self, key: impl Into<Box<[u8]>>) -> Policy {
        self.partition_key = Some(key.into());
        self
    }

    /// Sets what the quota counts.
    #[must_use]
    pub fn with_unit(mut self, unit: QuotaUnit) -> Policy {
        self.unit = unit;
        self
    }

    /// Marks the policy unsound (see [`is_sound`](Self::is_sound)): for tests and hand-built
    /// infos that stand for a response the parser could not trust.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy};
    ///
    /// let p = Policy::new(Dialect::XRateLimit).with_remaining(7).unsound();
    /// assert!(!p.is_sound());
    /// assert_eq!(p.remaining(), Some(7));
    /// ```
    #[must_use]
    pub fn unsound(mut self) -> Policy {
        self.sound = false;
        self
    }

    /// `false` when a field the server sent for this policy was unreadable (`-1`, garbage, a
    /// line that is not visible ASCII, a value too large), out of range (a limit of 0, a reset
    /// or window beyond 365 days, a number no server means as a reset) or contradicts the
    /// others. The values that could be read are kept, and a reset out of range reads as
    /// [`crate::RateLimitInfo::MAX_RESET_AFTER`], never as zero. `docs/headers.md` lists the
    /// rules.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use pacer_core::RateLimitInfo;
    /// use std::time::SystemTime;
    ///
    /// let mut h = HeaderMap::new();
    /// h.insert("x-ratelimit-limit", "100".parse()?);
    /// h.insert("x-ratelimit-remaining", "-1".parse()?);
    /// let info = RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH);
    /// let p = &info.policies()[0];
    /// assert_eq!(p.limit(), Some(100));
    /// assert_eq!(p.remaining(), None);
    /// assert!(!p.is_sound());
    /// # Ok::<(), http::header::InvalidHeaderValue>(())
    /// ```
    #[must_use]
    pub fn is_sound(&self) -> bool {
        self.sound
    }

    /// The policy name, if the server named it.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_ref().map(Name::as_str)
    }

    /// The quota of the window.
    #[must_use]
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The quota left.
    #[must_use]
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// The time from `now` until the quota resets, as the server said (at most 365 days).
    #[must_use]
    pub fn reset_after(&self) -> Option<Duration> {
        self.reset_after
    }

    /// The length of the quota window.
    #[must_use]
    pub fn window(&self) -> Option<Duration> {
        self.window
    }

    /// The partition key, as raw bytes.
    #[must_use]
    pub fn partition_key(&self) -> Option<&[u8]> {
        self.partition_key.as_deref()
    }

    /// What the quota counts.
    #[must_use]
    pub fn unit(&self) -> &QuotaUnit {
        &self.unit
    }

    /// The dialect the policy was read from.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// `true` when the server said no quota is left (`remaining == 0`).
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// `remaining / limit` in `[0, 1]`, when both are known and the limit is not zero. A
    /// remaining above the limit (servers round) counts as 1.
    #[must_use]
    pub fn remaining_fraction(&self) -> Option<f64> {
        match (self.remaining, self.limit) {
            (Some(r), Some(l)) if l > 0 => Some((r.min(l) as f64) / (l as f64)),
            _ => None,
        }
    }

    /// The reset to plan with: the server's reset when it is in the future; for an exhausted
    /// policy without one, the window, else 1 s (so a stop never lasts zero or forever).
    #[must_use]
    pub fn effective_reset(&self) -> Option<Duration> {
        match self.reset_after {
            Some(r) if !r.is_zero() => Some(r),
            _ if self.is_exhausted() => Some(
                self.window
                    .filter(|w| !w.is_zero())
                    .unwrap_or(EXHAUSTED_FALLBACK_RESET),
            ),
            other => other,
        }
    }

    /// The policy `elapsed` later, or `None` once its reset has passed (its numbers are stale).
    pub(crate) fn aged(&self, elapsed: Duration) -> Option<Policy> {
        if elapsed.is_zero() {
            return Some(self.clone());
        }
        match self.effective_reset() {
            Some(r) if r <= elapsed => None,
            Some(r) => Some(Policy {
                reset_after: Some(r - elapsed),
                ..self.clone()
            }),
            None => Some(self.clone()),
        }
    }

    /// `true` when the policy's reset has passed `elapsed` after it was observed: what
    /// [`Policy::aged`] drops, decided without cloning.
    pub(crate) fn is_spent_after(&self, elapsed: Duration) -> bool {
        !elapsed.is_zero() && self.effective_reset().is_some_and(|r| r <= elapsed)
    }

    pub(crate) fn set_name(&mut self, name: Cow<'static, str>) {
        self.name = Some(match name {
            Cow::Borrowed(name) => Name::Static(name),
            Cow::Owned(name) => Name::Shared(Arc::from(name)),
        });
    }

    /// Names the policy with a shared name (no allocation).
    pub(crate) fn set_shared_name(&mut self, name: Arc<str>) {
        self.name = Some(Name::Shared(name));
    }

    /// Names the policy with a copy of `name` (one allocation).
    pub(crate) fn set_name_of(&mut self, name: &str) {
        self.name = Some(Name::Shared(Arc::from(name)));
    }

    pub(crate) fn set_limit(&mut self, limit: Option<u64>) {
        self.limit = limit;
    }

    pub(crate) fn set_remaining(&mut self, remaining: Option<u64>) {
        self.remaining = remaining;
    }

    /// Sets the reset as the server sent it: one beyond 365 days is no reset a server means,
    /// so it is clamped and the policy marked unsound.
    pub(crate) fn set_reset_after(&mut self, reset: Option<Duration>) {
        if reset.is_some_and(|r| r > MAX_RESET_AFTER) {
            self.sound = false;
        }
        self.reset_after = reset.map(|r| r.min(MAX_RESET_AFTER));
    }

    /// Sets the window as the server sent it: one beyond 365 days is clamped and the policy
    /// marked unsound.
    pub(crate) fn set_window(&mut self, window: Option<Duration>) {
        if window.is_some_and(|w| w > MAX_WINDOW) {
            self.sound = false;
        }
        self.window = window.map(|w| w.min(MAX_WINDOW));
    }

    pub(crate) fn mark_unsound(&mut self) {
        self.sound = false;
    }

    pub(crate) fn set_partition_key(&mut self, key: Option<Box<[u8]>>) {
        self.partition_key = key;
    }

    pub(crate) fn set_unit(&mut self, unit: QuotaUnit) {
        self.unit = unit;
    }

    pub(crate) fn has_numbers(&self) -> bool {
        self.limit.is_some() || self.remaining.is_some()
    }
}

/// A policy's name: a dialect's own (static) or the server's, shared: copying a policy (as each
/// request's look at the server's state does) copies no text.
#[derive(Clone, Eq)]
enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    fn as_str(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Shared(name) => name,
        }
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Policy {
        Policy::new(Dialect::XRateLimit)
    }

    #[test]
    fn fraction_needs_a_positive_limit_and_is_clamped() {
        let cases = [
            (Some(8), Some(100), Some(0.08)),
            (Some(0), Some(100), Some(0.0)),
            (Some(120), Some(100), Some(1.0)),
            (Some(5), Some(0), None),
            (None, Some(10), None),
            (Some(5), None, None),
        ];
        for (r, l, want) in cases {
            let mut x = p();
            x.set_remaining(r);
            x.set_limit(l);
            assert_eq!(x.remaining_fraction(), want, "r={r:?} l={l:?}");
        }
    }

    #[test]
    fn effective_reset_falls_back_to_window_then_one_second_when_exhausted() {
        let secs = Duration::from_secs;
        let exhausted = p().with_remaining(0);
        assert_eq!(exhausted.effective_reset(), Some(secs(1)));
        assert_eq!(
            exhausted.clone().with_window(secs(60)).effective_reset(),
            Some(secs(60))
        );
        assert_eq!(
            exhausted
                .clone()
                .with_reset_after(Duration::ZERO)
                .effective_reset(),
            Some(secs(1))
        );
        assert_eq!(
            exhausted.with_reset_after(secs(7)).effective_reset(),
            Some(secs(7))
        );
        assert_eq!(p().with_remaining(3).effective_reset(), None);
        assert_eq!(
            p().with_reset_after(Duration::ZERO).effective_reset(),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn ageing_counts_down_and_drops_a_spent_policy() {
        let secs = Duration::from_secs;
        let x = p().with_remaining(4).with_reset_after(secs(10));
        assert_eq!(x.aged(Duration::ZERO), Some(x.clone()));
        assert_eq!(x.aged(secs(4)).and_then(|a| a.reset_after()), Some(secs(6)));
        assert_eq!(x.aged(secs(10)), None);
        let no_reset = p().with_remaining(4);
        assert_eq!(no_reset.aged(secs(1000)), Some(no_reset.clone()));
        let exhausted = p().with_remaining(0).with_window(secs(60));
        assert_eq!(
            exhausted.aged(secs(15)).and_then(|a| a.reset_after()),
            Some(secs(45))
        );
        assert_eq!(exhausted.aged(secs(60)), None);
    }

    #[test]
    fn builders_clamp_absurd_durations() {
        let huge = Duration::from_secs(u64::MAX);
        assert_eq!(
            p().with_reset_after(huge).reset_after(),
            Some(MAX_RESET_AFTER)
        );
        assert_eq!(p().with_window(huge).window(), Some(MAX_WINDOW));
        assert!(p().with_reset_after(huge).with_window(huge).is_sound());
    }

    #[test]
    fn what_the_server_sent_beyond_a_year_is_unsound() {
        let mut x = p();
        x.set_reset_after(Some(MAX_RESET_AFTER));
        x.set_window(Some(MAX_WINDOW));
        assert!(x.is_sound());
        x.set_reset_after(Some(MAX_RESET_AFTER + Duration::from_secs(1)));
        assert_eq!(x.reset_after(), Some(MAX_RESET_AFTER));
        assert!(!x.is_sound());
        let mut y = p();
        y.set_window(Some(Duration::MAX));
        assert_eq!(y.window(), Some(MAX_WINDOW));
        assert!(!y.is_sound());
    }

    #[test]
    fn soundness_is_part_of_equality_and_survives_ageing() {
        let x = p()
            .with_remaining(3)
            .with_reset_after(Duration::from_secs(10));
        assert_ne!(x, x.clone().unsound());
        let aged = x.clone().unsound().aged(Duration::from_secs(4));
        assert!(aged.is_some_and(|a| !a.is_sound()));
    }
}
