//! `--headers`: which rate-limit fields `serve` sends with each response, besides `Retry-After`.

use crate::Speed;
use crate::model::ModelHeaders;
use http::{HeaderMap, HeaderName, HeaderValue};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The rate-limit header dialect of the served API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderDialect {
    /// Only `Retry-After` on a 429. The default: the quota stays hidden, as in `compare`.
    #[default]
    None,
    /// IETF draft-11 structured fields: `RateLimit-Policy: "default";q=…;w=…` and
    /// `RateLimit: "default";r=…;t=…`, the model's own values ([`ModelHeaders::fields`]).
    Draft11,
    /// GitHub's `x-ratelimit-limit`, `-remaining`, `-used`, `-reset` (epoch seconds) and
    /// `-resource: core`.
    Github,
    /// Shopify's `X-Shopify-Shop-Api-Call-Limit: used/size` (the units counted, rounded up,
    /// and the quota), as its leaky bucket sends it; from any shape.
    Shopify,
}

impl FromStr for HeaderDialect {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(HeaderDialect::None),
            "draft11" | "draft-11" | "ietf" => Ok(HeaderDialect::Draft11),
            "github" => Ok(HeaderDialect::Github),
            "shopify" => Ok(HeaderDialect::Shopify),
            _ => Err(format!(
                "unknown header dialect {s:?}: expected none, draft11, github or shopify"
            )),
        }
    }
}

impl fmt::Display for HeaderDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HeaderDialect::None => "none",
            HeaderDialect::Draft11 => "draft11",
            HeaderDialect::Github => "github",
            HeaderDialect::Shopify => "shopify",
        })
    }
}

impl HeaderDialect {
    /// Whether the dialect sends anything, so the model must compute its values.
    #[must_use]
    pub fn sends_headers(self) -> bool {
        self != HeaderDialect::None
    }

    /// Writes the dialect's fields for the model's values `h` into `headers`, in real time at
    /// `speed`: the window `w` and the reset become whole real seconds, rounded up (the grammars
    /// have no fractions, so at a high speed they are coarse); `system_now` is the wall clock,
    /// for GitHub's epoch reset.
    pub fn write(
        self,
        h: &ModelHeaders,
        speed: Speed,
        system_now: SystemTime,
        headers: &mut HeaderMap,
    ) {
        let real = ModelHeaders {
            window_secs: speed.whole_real_secs(h.window_secs, 1),
            reset_secs: speed.whole_real_secs(h.reset_secs, 0),
            ..*h
        };
        match self {
            HeaderDialect::None => {}
            HeaderDialect::Draft11 => {
                for (name, value) in real.draft11_fields() {
                    insert(headers, name, value);
                }
            }
            HeaderDialect::Github => {
                let epoch = system_now
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or(Duration::ZERO)
                    .as_secs();
                let used = h.quota.saturating_sub(h.remaining);
                insert(headers, "x-ratelimit-limit", h.quota.to_string());
                insert(headers, "x-ratelimit-remaining", h.remaining.to_string());
                insert(headers, "x-ratelimit-used", used.to_string());
                insert(
                    headers,
                    "x-ratelimit-reset",
                    (epoch + real.reset_secs).to_string(),
                );
                insert(headers, "x-ratelimit-resource", "core".to_owned());
            }
            HeaderDialect::Shopify => {
                insert(
                    headers,
                    "x-shopify-shop-api-call-limit",
                    h.call_limit_field(),
                );
            }
        }
    }
}

fn insert(headers: &mut HeaderMap, name: &str, value: String) {
    // Header names are lowercase on the wire in HTTP/2 and in `http`; draft-11 writes them
    // capitalised.
    let name = HeaderName::try_from(name.to_ascii_lowercase()).expect("a valid header name");
    let value = HeaderValue::try_from(value).expect("digits, quotes, = and ; are valid");
    headers.insert(name, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pacer_core::RateLimitInfo;

    fn values() -> ModelHeaders {
        ModelHeaders {
            quota: 3000,
            window_secs: 60,
            remaining: 120,
            reset_secs: 25,
            call_limit: false,
        }
    }

    fn written(dialect: HeaderDialect, speed: f64) -> HeaderMap {
        let mut h = HeaderMap::new();
        let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        dialect.write(&values(), Speed::new(speed).unwrap(), now, &mut h);
        h
    }

    #[test]
    fn dialects_parse_by_name() {
        assert_eq!("draft11".parse(), Ok(HeaderDialect::Draft11));
        assert_eq!("GitHub".parse(), Ok(HeaderDialect::Github));
        assert_eq!("none".parse(), Ok(HeaderDialect::None));
        assert!(
            "x".parse::<HeaderDialect>()
                .unwrap_err()
                .contains("none, draft11, github or shopify")
        );
    }

    #[test]
    fn none_writes_nothing() {
        assert!(written(HeaderDialect::None, 1.0).is_empty());
    }

    #[test]
    fn draft11_is_the_model_s_fields_in_real_seconds() {
        let h = written(HeaderDialect::Draft11, 1.0);
        assert_eq!(h["ratelimit-policy"], "\"default\";q=3000;w=60");
        assert_eq!(h["ratelimit"], "\"default\";r=120;t=25");
        let h = written(HeaderDialect::Draft11, 30.0);
        assert_eq!(h["ratelimit-policy"], "\"default\";q=3000;w=2");
        assert_eq!(h["ratelimit"], "\"default\";r=120;t=1");
    }

    #[test]
    fn github_sends_an_epoch_reset_and_pacer_reads_it() {
        let h = written(HeaderDialect::Github, 1.0);
        assert_eq!(h["x-ratelimit-limit"], "3000");
        assert_eq!(h["x-ratelimit-remaining"], "120");
        assert_eq!(h["x-ratelimit-used"], "2880");
        assert_eq!(h["x-ratelimit-reset"], "1767225625");
        let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let info = RateLimitInfo::from_headers(&h, now);
        assert_eq!(info.limit(), Some(3000));
        assert_eq!(info.remaining(), Some(120));
    }

    #[test]
    fn shopify_sends_used_over_size_and_pacer_reads_it() {
        let h = written(HeaderDialect::Shopify, 1.0);
        assert_eq!(h.len(), 1);
        assert_eq!(h["x-shopify-shop-api-call-limit"], "2880/3000");
        assert_eq!("Shopify".parse(), Ok(HeaderDialect::Shopify));
        let info = RateLimitInfo::from_headers(&h, UNIX_EPOCH);
        assert_eq!((info.limit(), info.remaining()), (Some(3000), Some(120)));
    }

    #[test]
    fn pacer_reads_the_draft11_fields() {
        let h = written(HeaderDialect::Draft11, 1.0);
        let info = RateLimitInfo::from_headers(&h, UNIX_EPOCH);
        assert_eq!((info.limit(), info.remaining()), (Some(3000), Some(120)));
    }
}
