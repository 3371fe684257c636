//! The rate-limit header values the model API can send: IETF draft-11 `RateLimit-Policy` and
//! `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11), and for the leaky bucket Shopify's
//! `X-Shopify-Shop-Api-Call-Limit: used/size`.
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
    /// `t`: whole seconds (rounded up) until the shape resets: in a sliding window until the
    /// oldest unit leaves it, that is until `r` next grows; in a fixed one until the boundary;
    /// in a bucket or GCRA until it is full again (of tokens). The time left of a stop during
    /// one; 0 when nothing is counted.
    pub reset_secs: u64,
    /// Whether the response also carries Shopify's call limit (the leaky bucket's).
    pub call_limit: bool,
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

    /// The `X-Shopify-Shop-Api-Call-Limit` field value, *used/size*, e.g. `"32/40"`: the units
    /// in the bucket (rounded up) and its size.
    #[must_use]
    pub fn call_limit_field(&self) -> String {
        format!(
            "{}/{}",
            self.quota.saturating_sub(self.remaining),
            self.quota
        )
    }

    /// Both draft-11 fields as `(name, value)` pairs.
    #[must_use]
    pub fn draft11_fields(&self) -> [(&'static str, String); 2] {
        [
            ("RateLimit-Policy", self.policy_field()),
            ("RateLimit", self.ratelimit_field()),
        ]
    }

    /// Every field as `(name, value)` pairs, as a response would carry them: the draft-11
    /// fields, and the call limit when the shape sends it.
    #[must_use]
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = self.draft11_fields().to_vec();
        if self.call_limit {
            fields.push(("X-Shopify-Shop-Api-Call-Limit", self.call_limit_field()));
        }
        fields
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
            call_limit: false,
        };
        assert_eq!(
            h.fields(),
            [
                ("RateLimit-Policy", "\"default\";q=3000;w=60".to_owned()),
                ("RateLimit", "\"default\";r=12;t=3".to_owned()),
            ]
        );
        let leaky = ModelHeaders {
            quota: 40,
            remaining: 8,
            call_limit: true,
            ..h
        };
        assert_eq!(
            leaky.fields()[2],
            ("X-Shopify-Shop-Api-Call-Limit", "32/40".to_owned())
        );
    }
}
