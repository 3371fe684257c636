//! The rate-limit header values the model API can send: IETF draft-11 `RateLimit-Policy` and
//! `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11).
//!
//! This is the hook for the `headers` mode. The engine asks the API for these values only when a
//! mode wants them ([`Mode::wants_headers`](crate::Mode::wants_headers)) and hands them to that
//! mode's client with each response ([`Response::headers`](crate::Response::headers)). The values
//! are also rendered as the exact field values a real server would send, so that the mode can
//! feed them through the very header parser the middleware uses.

/// The policy name the model API uses in both fields.
pub const POLICY_NAME: &str = "default";

/// One response's rate-limit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelHeaders {
    /// `q`: the quota of the policy, in units (the hidden quota in force).
    pub quota: u64,
    /// `w`: the policy's window in seconds (60).
    pub window_secs: u64,
    /// `r`: units left in the window now (0 during a stop).
    pub remaining: u64,
    /// `t`: whole seconds (rounded up) until the oldest unit in the window leaves it, that is until
    /// `r` next grows; the time left of a stop during one; 0 when the window is empty.
    pub reset_secs: u64,
}

impl ModelHeaders {
    /// The `RateLimit-Policy` field value, e.g. `"default";q=3000;w=60`.
    #[must_use]
    pub fn policy_field(&self) -> String {
        format!("\"{POLICY_NAME}\";q={};w={}", self.quota, self.window_secs)
    }

    /// The `RateLimit` field value, e.g. `"default";r=12;t=3`.
    #[must_use]
    pub fn ratelimit_field(&self) -> String {
        format!(
            "\"{POLICY_NAME}\";r={};t={}",
            self.remaining, self.reset_secs
        )
    }

    /// Both fields as `(name, value)` pairs, as a response would carry them.
    #[must_use]
    pub fn fields(&self) -> [(&'static str, String); 2] {
        [
            ("RateLimit-Policy", self.policy_field()),
            ("RateLimit", self.ratelimit_field()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_draft_11_structured_fields() {
        let h = ModelHeaders {
            quota: 3000,
            window_secs: 60,
            remaining: 12,
            reset_secs: 3,
        };
        assert_eq!(
            h.fields(),
            [
                ("RateLimit-Policy", "\"default\";q=3000;w=60".to_owned()),
                ("RateLimit", "\"default\";r=12;t=3".to_owned()),
            ]
        );
    }
}
