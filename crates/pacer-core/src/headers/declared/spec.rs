//! What a declared dialect says, checked: the time units and field grammars a user chooses
//! from, and the description the engine reads ([`Spec`]).

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::headers::policy::QuotaUnit;

/// How a header writes a time: a delta in a unit, a date, or the reading Pacer gives the
/// built-in field of the same role (`Auto`).
///
/// ```
/// use pacer_core::TimeUnit;
/// assert_eq!(TimeUnit::from_name("epoch-milliseconds"), Some(TimeUnit::EpochMilliseconds));
/// assert_eq!(TimeUnit::from_name("ISO8601"), Some(TimeUnit::Rfc3339));
/// assert_eq!(TimeUnit::Milliseconds.as_str(), "Milliseconds");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TimeUnit {
    /// As the built-in field of that role is read: a reset by its shape and magnitude (delta
    /// seconds, delta milliseconds, epoch seconds or milliseconds, a date, a Go duration; see
    /// `docs/headers.md`), a retry wait as `Retry-After` (seconds or an HTTP-date).
    #[default]
    Auto,
    /// Delta seconds, a fraction allowed (`30`, `1.5`).
    Seconds,
    /// Delta milliseconds, a fraction allowed (`2000`).
    Milliseconds,
    /// A Unix time in seconds, a fraction allowed (`1767229200`).
    EpochSeconds,
    /// A Unix time in milliseconds (`1767229200000`).
    EpochMilliseconds,
    /// An HTTP-date, any of its three forms (`Thu, 01 Jan 2026 00:00:10 GMT`).
    HttpDate,
    /// An ISO 8601 / RFC 3339 date-time (`2026-01-01T00:00:10Z`).
    Rfc3339,
    /// A Go duration (`6m0s`, `1h2m3.5s`, `20ms`).
    GoDuration,
}

impl TimeUnit {
    /// Every unit, in the order of its docs.
    pub const ALL: [TimeUnit; 8] = [
        TimeUnit::Auto,
        TimeUnit::Seconds,
        TimeUnit::Milliseconds,
        TimeUnit::EpochSeconds,
        TimeUnit::EpochMilliseconds,
        TimeUnit::HttpDate,
        TimeUnit::Rfc3339,
        TimeUnit::GoDuration,
    ];

    /// Its name, as configuration writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Auto => "Auto",
            TimeUnit::Seconds => "Seconds",
            TimeUnit::Milliseconds => "Milliseconds",
            TimeUnit::EpochSeconds => "EpochSeconds",
            TimeUnit::EpochMilliseconds => "EpochMilliseconds",
            TimeUnit::HttpDate => "HttpDate",
            TimeUnit::Rfc3339 => "Rfc3339",
            TimeUnit::GoDuration => "GoDuration",
        }
    }

    /// The unit of a name, without regard to case, `-` or `_`; `Iso8601` is [`Rfc3339`](Self::Rfc3339).
    #[must_use]
    pub fn from_name(name: &str) -> Option<TimeUnit> {
        let wanted: String = name
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        if wanted == "iso8601" {
            return Some(TimeUnit::Rfc3339);
        }
        TimeUnit::ALL
            .into_iter()
            .find(|u| u.as_str().eq_ignore_ascii_case(&wanted))
    }

    /// Whether the unit writes a length (a window can be given in it).
    #[must_use]
    pub fn is_length(self) -> bool {
        matches!(
            self,
            TimeUnit::Seconds | TimeUnit::Milliseconds | TimeUnit::GoDuration
        )
    }
}

/// The grammar of a field that holds a policy's counters together ([`DeclaredDialectBuilder::field`](crate::DeclaredDialectBuilder::field)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FieldGrammar {
    /// `key=value` pairs, the keys naming the counters (Zendesk's
    /// `total=100; remaining=99; resets=59`; the keys are set with
    /// [`limit_key`](crate::DeclaredDialectBuilder::limit_key) and its siblings).
    #[default]
    Pairs,
    /// `used/limit` (Shopify's `32/40`), or entries `name=used/limit`, each a policy named by
    /// its name (Salesforce's `api-usage=18/5000; per-app-api-usage=17/250(appName=x)`; what
    /// follows in parentheses is ignored).
    UsedOfLimit,
}

impl FieldGrammar {
    /// Every grammar.
    pub const ALL: [FieldGrammar; 2] = [FieldGrammar::Pairs, FieldGrammar::UsedOfLimit];

    /// Its name, as configuration writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FieldGrammar::Pairs => "Pairs",
            FieldGrammar::UsedOfLimit => "UsedOfLimit",
        }
    }
}

/// Which fields a [`FieldGrammar`] dialect reads: one, or every field whose name starts with a
/// prefix (the rest of the name naming the policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldMatch {
    Exact(HeaderName),
    /// Lowercase, without the `*`.
    Prefix(Box<str>),
}

/// Where a declared dialect's counters are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Separate headers.
    Headers {
        limit: Option<HeaderName>,
        remaining: Option<HeaderName>,
        used: Option<HeaderName>,
        reset: Option<HeaderName>,
    },
    /// One field.
    Field {
        field: FieldMatch,
        grammar: FieldGrammar,
        separator: u8,
        keys: [Box<str>; 4],
    },
}

/// The window of a declared dialect's policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Window {
    None,
    Fixed(Duration),
    Header(HeaderName, TimeUnit),
}

/// A declared dialect, checked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) name: Arc<str>,
    pub(crate) unit: QuotaUnit,
    pub(crate) source: Source,
    pub(crate) reset_unit: TimeUnit,
    pub(crate) retry_after: Option<(HeaderName, TimeUnit)>,
    pub(crate) window: Window,
}
