//! A request's retries: the engine's rule for sending a throttled request again.

use super::{After, Rules};

/// The retries of one request, for a driver's loop: whether to keep a copy of the request for
/// another attempt, and, after each response, whether to send it again. The rule is the
/// engine's — a throttle the server allows to be sent again ([`After::retry`]), while fewer
/// than `MaxAttempts` ([`Rules::max_attempts`]) were sent; the driver adds only whether it
/// could copy the request's body.
///
/// ```
/// use pacer_core::{After, Retries, Rules};
/// use std::num::NonZeroU32;
///
/// let rules = Rules::default().with_max_attempts(NonZeroU32::new(2).unwrap());
/// let mut retries = Retries::new(&rules);
/// assert_eq!(retries.attempt(), 1);
/// assert!(retries.keeps_copy(), "a second attempt may follow");
///
/// let mut throttled = After::default();
/// throttled.retry = true;
/// assert!(retries.again(&throttled), "sent again");
/// assert_eq!(retries.attempt(), 2);
/// assert!(!retries.keeps_copy(), "the last one");
/// assert!(!retries.again(&throttled), "no attempt left");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    attempt: u32,
    max: u32,
}

impl Retries {
    /// The first attempt of a request under `rules`.
    #[must_use]
    pub fn new(rules: &Rules) -> Self {
        Retries {
            attempt: 1,
            max: rules.max_attempts().get(),
        }
    }

    /// The number of the attempt about to be sent (or just sent), from 1.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// True if another attempt may follow this one: a driver keeps a copy of the request before
    /// it sends (and only then).
    #[must_use]
    pub fn keeps_copy(&self) -> bool {
        self.attempt < self.max
    }

    /// After the response to this attempt: true (counting the next attempt) if the engine sends
    /// it again; the driver then sends its copy, if it could make one.
    pub fn again(&mut self, after: &After) -> bool {
        let again = after.retry && self.keeps_copy();
        if again {
            self.attempt += 1;
        }
        again
    }
}
