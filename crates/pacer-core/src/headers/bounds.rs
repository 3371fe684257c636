//! The bounds that keep absurd header values from turning into absurd waits.
//!
//! A server can send anything: `Retry-After: 1000000000000000`, a reset in the year 3000, a
//! window of a century. The parser clamps these instead of trusting them; the middleware applies
//! its own, smaller limits (`MaxRetryAfter`, `MaxWait`) on top.

use std::time::Duration;

const DAY: u64 = 24 * 60 * 60;

/// The longest reset a policy can report: 365 days (RateLimitHeaders' `MaxResetSeconds`).
/// Later resets are clamped to it.
pub(crate) const MAX_RESET_AFTER: Duration = Duration::from_secs(365 * DAY);

/// The longest window a policy can report: 365 days, like resets.
pub(crate) const MAX_WINDOW: Duration = Duration::from_secs(365 * DAY);

/// The longest `Retry-After` the parser keeps: 30 days (RateLimitHeaders'
/// `MaxRetryAfterDelay`). Longer ones are clamped to it.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(30 * DAY);

/// Integer resets below this many seconds (48 h) are delta seconds; from here up to
/// [`EPOCH_SECONDS_FROM`] they are delta milliseconds. The 48 h bound is the one proposed for
/// delta-seconds in draft-polli#41.
pub(crate) const DELTA_SECONDS_BELOW: u64 = 2 * DAY;

/// Integer resets from 10^9 (2001-09-09 as a Unix time) are epoch seconds.
pub(crate) const EPOCH_SECONDS_FROM: u64 = 1_000_000_000;

/// Integer resets from 10^11 (year 5138 as epoch seconds, 1973 as epoch milliseconds) are epoch
/// milliseconds.
pub(crate) const EPOCH_MILLIS_FROM: u64 = 100_000_000_000;

/// Integer resets from [`EPOCH_MILLIS_FROM`] up to 10^12 are no reset a server means: as epoch
/// seconds they lie past the year 5138, as epoch milliseconds before 2001-09-09, before any
/// server sent one. They fail closed (the longest reset, the policy unsound).
pub(crate) const EPOCH_MILLIS_MEANT_FROM: u64 = 1_000_000_000_000;

/// The longest field value read, after joining repeated lines: 4 KiB. A longer one is
/// malformed and ignored whole. Real rate-limit fields are a few dozen bytes; the bound keeps
/// parsing time proportional to what a server could mean.
pub(crate) const MAX_FIELD_BYTES: usize = 4 * 1024;

/// The most members (comma-separated values, repeated lines included) a field may list, and
/// the most named policies one response may carry: 64. A field with more is malformed and
/// ignored whole; further named policies are ignored.
pub(crate) const MAX_MEMBERS: usize = 64;
