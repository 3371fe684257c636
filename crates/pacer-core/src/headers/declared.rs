//! [`DeclaredDialect`]: an API's rate-limit fields, as its user describes them.
//!
//! No built-in list of dialects is complete: a read of real vendors' headers found a third of
//! them read wrong or not at all. A user who knows an API teaches Pacer its fields in a few
//! lines: which header holds the limit, the remaining count, the reset or the retry wait, and in
//! which unit; or the grammar of one field that holds them together. The description is checked
//! once, by [`DeclaredDialectBuilder::build`]; the engine then reads it from every response
//! ([`Rules::with_dialect`](crate::Rules::with_dialect)) by the rules the built-in dialects
//! follow (`declared_read.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

mod checks;
mod spec;
use checks::{check_name, field_match, header_name, quoted};
pub use spec::{FieldGrammar, TimeUnit};
pub(crate) use spec::{FieldMatch, Source, Spec, Window};

use super::bounds::MAX_WINDOW;
use super::policy::QuotaUnit;
use crate::InvalidOptions;
use crate::validation::{Checker, format_duration};

/// The rate-limit fields of an API that no built-in dialect reads, as its user describes them.
///
/// Two shapes. **Separate headers**: which holds the limit, the remaining count, the count used,
/// the reset (and in which [`TimeUnit`]), the retry wait; optionally the window, fixed or in a
/// header. **One field** ([`field`](DeclaredDialectBuilder::field)): its name, or a prefix
/// (`Foo-RateLimit-*`, the rest of each name naming a policy), and its [`FieldGrammar`]. Either
/// way, optionally the policy's [`QuotaUnit`]. Built by [`DeclaredDialect::builder`], checked once
/// by [`build`](DeclaredDialectBuilder::build); the engine reads it from every response once
/// it is given to [`Rules::with_dialect`](crate::Rules::with_dialect), with the bounds and
/// soundness rules of the built-in dialects. Cheap to clone.
///
/// Freshdesk sends its per-minute limit as `X-Ratelimit-Total` and `X-Ratelimit-Remaining`:
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use pacer_core::{DeclaredDialect, Rules};
/// use std::time::{Duration, SystemTime};
///
/// let freshdesk = DeclaredDialect::builder("freshdesk")
///     .limit("X-Ratelimit-Total")
///     .remaining("X-Ratelimit-Remaining")
///     .window(Duration::from_secs(60))
///     .build()?;
/// let rules = Rules::default().with_dialect(freshdesk);
///
/// let mut h = HeaderMap::new();
/// h.insert("x-ratelimit-total", "700".parse()?);
/// h.insert("x-ratelimit-remaining", "699".parse()?);
/// let reading = rules.read(StatusCode::OK, &h, None, SystemTime::UNIX_EPOCH, Duration::from_secs(60));
/// let info = reading.info();
/// assert_eq!(info.policy_name(), Some("freshdesk"));
/// assert_eq!((info.limit(), info.remaining()), (Some(700), Some(699)));
/// assert_eq!(info.window(), Some(Duration::from_secs(60)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct DeclaredDialect {
    pub(crate) spec: Arc<Spec>,
}

impl fmt::Debug for DeclaredDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.spec, f)
    }
}

impl DeclaredDialect {
    /// A builder of the dialect whose policies are named `name` (with a field prefix, the rest
    /// of each field's name names its policy instead).
    pub fn builder(name: impl Into<String>) -> DeclaredDialectBuilder {
        DeclaredDialectBuilder {
            name: name.into(),
            ..DeclaredDialectBuilder::default()
        }
    }

    /// The policies' name (`Name`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the policies count (`Unit`).
    #[must_use]
    pub fn unit(&self) -> &QuotaUnit {
        &self.spec.unit
    }

    fn header(&self, pick: impl Fn(&Source) -> Option<&HeaderName>) -> Option<&str> {
        pick(&self.spec.source).map(HeaderName::as_str)
    }

    /// The header of the limit (`Limit`), lowercase.
    #[must_use]
    pub fn limit_header(&self) -> Option<&str> {
        self.header(|s| match s {
            Source::Headers { limit, .. } => limit.as_ref(),
            Source::Field { .. } => None,
        })
    }

    /// The header of the remaining count (`Remaining`), lowercase.
    #[must_use]
    pub fn remaining_header(&self) -> Option<&str> {
        self.header(|s| match s {
            Source::Headers { remaining, .. } => remaining.as_ref(),
            Source::Field { .. } => None,
        })
    }

    /// The header of the count used (`Used`), lowercase.
    #[must_use]
    pub fn used_header(&self) -> Option<&str> {
        self.header(|s| match s {
            Source::Headers { used, .. } => used.as_ref(),
            Source::Field { .. } => None,
        })
    }

    /// The header of the reset (`Reset`), lowercase.
    #[must_use]
    pub fn reset_header(&self) -> Option<&str> {
        self.header(|s| match s {
            Source::Headers { reset, .. } => reset.as_ref(),
            Source::Field { .. } => None,
        })
    }

    /// How the reset is written (`ResetUnit`), in its header or under its key.
    #[must_use]
    pub fn reset_unit(&self) -> TimeUnit {
        self.spec.reset_unit
    }

    /// The header of the retry wait (`RetryAfter`), lowercase, and how it is written
    /// (`RetryAfterUnit`).
    #[must_use]
    pub fn retry_after_header(&self) -> Option<(&str, TimeUnit)> {
        self.spec
            .retry_after
            .as_ref()
            .map(|(h, unit)| (h.as_str(), *unit))
    }

    /// The fixed window (`Window`).
    #[must_use]
    pub fn window(&self) -> Option<Duration> {
        match self.spec.window {
            Window::Fixed(w) => Some(w),
            _ => None,
        }
    }

    /// The header of the window (`WindowHeader`), lowercase, and its unit (`WindowUnit`).
    #[must_use]
    pub fn window_header(&self) -> Option<(&str, TimeUnit)> {
        match &self.spec.window {
            Window::Header(h, unit) => Some((h.as_str(), *unit)),
            _ => None,
        }
    }

    /// The field (`Field`), lowercase, a prefix ending in `*`; its grammar (`Grammar`) and
    /// separator (`Separator`).
    #[must_use]
    pub fn field(&self) -> Option<(String, FieldGrammar, char)> {
        match &self.spec.source {
            Source::Field {
                field,
                grammar,
                separator,
                ..
            } => {
                let name = match field {
                    FieldMatch::Exact(h) => h.as_str().to_owned(),
                    FieldMatch::Prefix(p) => format!("{p}*"),
                };
                Some((name, *grammar, char::from(*separator)))
            }
            Source::Headers { .. } => None,
        }
    }

    /// The keys of the `key=value` pairs (`LimitKey`, `RemainingKey`, `ResetKey`, `UsedKey`),
    /// for a [`FieldGrammar::Pairs`] field.
    #[must_use]
    pub fn pair_keys(&self) -> Option<[&str; 4]> {
        match &self.spec.source {
            Source::Field {
                grammar: FieldGrammar::Pairs,
                keys,
                ..
            } => Some([&keys[0], &keys[1], &keys[2], &keys[3]]),
            _ => None,
        }
    }
}

/// Builds a [`DeclaredDialect`]; every setting is optional, but it must read something. Each
/// method names the configuration key it stands for.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct DeclaredDialectBuilder {
    name: String,
    unit: Option<QuotaUnit>,
    limit: Option<String>,
    remaining: Option<String>,
    used: Option<String>,
    reset: Option<String>,
    reset_unit: Option<TimeUnit>,
    retry_after: Option<String>,
    retry_after_unit: Option<TimeUnit>,
    window: Option<Duration>,
    window_header: Option<String>,
    window_unit: Option<TimeUnit>,
    field: Option<String>,
    grammar: Option<FieldGrammar>,
    separator: Option<char>,
    keys: [Option<String>; 4],
}

/// The default keys of a `key=value` field.
const DEFAULT_KEYS: [&str; 4] = ["limit", "remaining", "reset", "used"];
const KEY_OPTIONS: [&str; 4] = ["LimitKey", "RemainingKey", "ResetKey", "UsedKey"];

impl DeclaredDialectBuilder {
    /// `Unit`: what the policies count. Default [`QuotaUnit::Requests`].
    pub fn unit(mut self, unit: QuotaUnit) -> Self {
        self.unit = Some(unit);
        self
    }

    /// `Limit`: the header of the limit (the quota of the window). It may list quotas as the
    /// IETF drafts' `RateLimit-Limit` does (`10, 10;w=1`).
    pub fn limit(mut self, header: impl Into<String>) -> Self {
        self.limit = Some(header.into());
        self
    }

    /// `Remaining`: the header of the quota left.
    pub fn remaining(mut self, header: impl Into<String>) -> Self {
        self.remaining = Some(header.into());
        self
    }

    /// `Used`: the header of the quota used; gives the remaining (`limit − used`) when no
    /// remaining is sent, and the limit (`used + remaining`) when no limit is.
    pub fn used(mut self, header: impl Into<String>) -> Self {
        self.used = Some(header.into());
        self
    }

    /// `Reset`: the header of the reset, written in [`reset_unit`](Self::reset_unit).
    pub fn reset(mut self, header: impl Into<String>) -> Self {
        self.reset = Some(header.into());
        self
    }

    /// `ResetUnit`: how the reset is written, in its header or under its key. Default
    /// [`TimeUnit::Auto`].
    pub fn reset_unit(mut self, unit: TimeUnit) -> Self {
        self.reset_unit = Some(unit);
        self
    }

    /// `RetryAfter`: the header of a retry wait, read as a `Retry-After` when the response has
    /// none (same bounds), written in [`retry_after_unit`](Self::retry_after_unit).
    pub fn retry_after(mut self, header: impl Into<String>) -> Self {
        self.retry_after = Some(header.into());
        self
    }

    /// `RetryAfterUnit`: how the retry wait is written. Default [`TimeUnit::Auto`] (as
    /// `Retry-After`: seconds or an HTTP-date).
    pub fn retry_after_unit(mut self, unit: TimeUnit) -> Self {
        self.retry_after_unit = Some(unit);
        self
    }

    /// `Window`: the length of the quota's window, when the API documents it and sends none
    /// (greater than 0, at most 365 days).
    pub fn window(mut self, window: Duration) -> Self {
        self.window = Some(window);
        self
    }

    /// `WindowHeader`: the header of the window, written in
    /// [`window_unit`](Self::window_unit).
    pub fn window_header(mut self, header: impl Into<String>) -> Self {
        self.window_header = Some(header.into());
        self
    }

    /// `WindowUnit`: how the window header is written: [`TimeUnit::Seconds`] (the default),
    /// [`TimeUnit::Milliseconds`] or [`TimeUnit::GoDuration`].
    pub fn window_unit(mut self, unit: TimeUnit) -> Self {
        self.window_unit = Some(unit);
        self
    }

    /// `Field`: one field that holds the counters, in [`grammar`](Self::grammar); a name
    /// ending in `*` is a prefix (`Zendesk-RateLimit-*`), every field that starts with it a
    /// policy named by the rest of its name. Not with `Limit`, `Remaining`, `Used` or `Reset`.
    pub fn field(mut self, name: impl Into<String>) -> Self {
        self.field = Some(name.into());
        self
    }

    /// `Grammar`: the field's grammar. Default [`FieldGrammar::Pairs`].
    pub fn grammar(mut self, grammar: FieldGrammar) -> Self {
        self.grammar = Some(grammar);
        self
    }

    /// `Separator`: what separates the field's pairs or entries: a visible ASCII character
    /// other than a letter, a digit, `=`, `/`, `(`, `)` or `"`. Default `;`.
    pub fn separator(mut self, separator: char) -> Self {
        self.separator = Some(separator);
        self
    }

    /// `LimitKey`: the key of the limit in a `key=value` field. Default `limit`.
    pub fn limit_key(mut self, key: impl Into<String>) -> Self {
        self.keys[0] = Some(key.into());
        self
    }

    /// `RemainingKey`: the key of the remaining count. Default `remaining`.
    pub fn remaining_key(mut self, key: impl Into<String>) -> Self {
        self.keys[1] = Some(key.into());
        self
    }

    /// `ResetKey`: the key of the reset, written in [`reset_unit`](Self::reset_unit). Default
    /// `reset`.
    pub fn reset_key(mut self, key: impl Into<String>) -> Self {
        self.keys[2] = Some(key.into());
        self
    }

    /// `UsedKey`: the key of the count used. Default `used`.
    pub fn used_key(mut self, key: impl Into<String>) -> Self {
        self.keys[3] = Some(key.into());
        self
    }

    /// The dialect, or every setting that is wrong, each with its configuration key, its value
    /// and the rule: an empty or invalid header name, a pattern outside `Field`, a dialect that
    /// reads nothing, a field beside separate headers, a window of 0 or beyond 365 days, a
    /// setting that applies to none of the others given, …
    ///
    /// ```
    /// use pacer_core::DeclaredDialect;
    ///
    /// let e = DeclaredDialect::builder("api").limit("").remaining("X Left").build().unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "Limit = \"\": must not be empty; \
    ///      Remaining = \"X Left\": must be a header name: letters, digits and !#$%&'*+-.^_`|~"
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// [`InvalidOptions`], naming every setting that is wrong.
    pub fn build(self) -> Result<DeclaredDialect, InvalidOptions> {
        let mut c = Checker::new();
        let name = self.name.trim();
        check_name(&mut c, "Name", name);
        let unit = self.unit.unwrap_or_default();
        if matches!(&unit, QuotaUnit::Other(u) if u.trim().is_empty()) {
            c.push("Unit", "\"\"", "must not be empty");
        }
        let mut header = |option: &str, value: &Option<String>| {
            value
                .as_deref()
                .and_then(|v| header_name(&mut c, option, v))
        };
        let limit = header("Limit", &self.limit);
        let remaining = header("Remaining", &self.remaining);
        let used = header("Used", &self.used);
        let reset = header("Reset", &self.reset);
        let retry_after = header("RetryAfter", &self.retry_after);
        let window_header = header("WindowHeader", &self.window_header);
        let field = self.field.as_deref().and_then(|f| field_match(&mut c, f));

        let separate = [&self.limit, &self.remaining, &self.used, &self.reset];
        if self.field.is_some() && separate.iter().any(|h| h.is_some()) {
            c.push(
                "Field",
                quoted(self.field.as_deref().unwrap_or_default()),
                "cannot be given with Limit, Remaining, Used or Reset: a dialect reads one field, or separate headers",
            );
        }
        let reads = self.limit.is_some()
            || self.remaining.is_some()
            || self.used.is_some()
            || self.field.is_some()
            || self.retry_after.is_some();
        if !reads {
            c.push(
                "Remaining",
                "none",
                "a dialect reads at least one of Limit, Remaining, Used, Field or RetryAfter",
            );
        }
        let applies = |c: &mut Checker, option: &str, set: bool, value: String, with: &str| {
            if set {
                c.push(option, value, format!("applies only with {with}"));
            }
        };
        let unit_name = |u: Option<TimeUnit>| u.map_or(String::new(), |u| u.as_str().to_owned());
        applies(
            &mut c,
            "ResetUnit",
            self.reset_unit.is_some() && self.reset.is_none() && self.field.is_none(),
            unit_name(self.reset_unit),
            "Reset or Field",
        );
        applies(
            &mut c,
            "RetryAfterUnit",
            self.retry_after_unit.is_some() && self.retry_after.is_none(),
            unit_name(self.retry_after_unit),
            "RetryAfter",
        );
        applies(
            &mut c,
            "WindowUnit",
            self.window_unit.is_some() && self.window_header.is_none(),
            unit_name(self.window_unit),
            "WindowHeader",
        );
        if self.field.is_none() {
            applies(
                &mut c,
                "Grammar",
                self.grammar.is_some(),
                self.grammar
                    .map_or(String::new(), |g| g.as_str().to_owned()),
                "Field",
            );
            applies(
                &mut c,
                "Separator",
                self.separator.is_some(),
                quoted(&self.separator.map(String::from).unwrap_or_default()),
                "Field",
            );
        }
        let grammar = self.grammar.unwrap_or_default();
        for (key, option) in self.keys.iter().zip(KEY_OPTIONS) {
            if let Some(key) = key
                && (self.field.is_none() || grammar != FieldGrammar::Pairs)
            {
                applies(
                    &mut c,
                    option,
                    true,
                    quoted(key),
                    "Field and the Pairs grammar",
                );
            }
        }
        let window_unit = self.window_unit.unwrap_or(TimeUnit::Seconds);
        if !window_unit.is_length() {
            c.push(
                "WindowUnit",
                window_unit.as_str(),
                "must be Seconds, Milliseconds or GoDuration: a window is a length",
            );
        }
        if let Some(w) = self.window {
            if w.is_zero() {
                c.push("Window", format_duration(w), "must be greater than 0");
            } else if w > MAX_WINDOW {
                c.push("Window", format_duration(w), "must be at most 365 days");
            }
            if self.window_header.is_some() {
                c.push(
                    "WindowHeader",
                    quoted(self.window_header.as_deref().unwrap_or_default()),
                    "cannot be given with Window",
                );
            }
        }
        let separator = self.separator.unwrap_or(';');
        let separator_ok = separator.is_ascii_graphic()
            && !separator.is_ascii_alphanumeric()
            && !matches!(separator, '=' | '/' | '(' | ')' | '"');
        if !separator_ok {
            c.push(
                "Separator",
                quoted(&separator.to_string()),
                "must be one visible ASCII character other than a letter, a digit, =, /, (, ) or \"",
            );
        }
        let keys: [String; 4] = std::array::from_fn(|i| {
            self.keys[i]
                .as_deref()
                .unwrap_or(DEFAULT_KEYS[i])
                .trim()
                .to_ascii_lowercase()
        });
        if self.field.is_some() && grammar == FieldGrammar::Pairs {
            for (i, key) in keys.iter().enumerate() {
                let option = KEY_OPTIONS[i];
                check_name(&mut c, option, key);
                if key.contains(['=', separator]) {
                    c.push(option, quoted(key), "must not hold = or the separator");
                }
                if let Some(j) = keys[..i].iter().position(|k| k == key) {
                    c.push(
                        option,
                        quoted(key),
                        format!("must differ from {}", KEY_OPTIONS[j]),
                    );
                }
            }
        }
        c.finish()?;

        let source = match field {
            Some(field) => Source::Field {
                field,
                grammar,
                separator: separator as u8,
                keys: keys.map(String::into_boxed_str),
            },
            None => Source::Headers {
                limit,
                remaining,
                used,
                reset,
            },
        };
        let window = match (self.window, window_header) {
            (Some(w), _) => Window::Fixed(w),
            (None, Some(h)) => Window::Header(h, window_unit),
            (None, None) => Window::None,
        };
        Ok(DeclaredDialect {
            spec: Arc::new(Spec {
                name: Arc::from(name),
                unit,
                source,
                reset_unit: self.reset_unit.unwrap_or_default(),
                retry_after: retry_after.map(|h| (h, self.retry_after_unit.unwrap_or_default())),
                window,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
