//! Salesforce's `Sforce-Limit-Info` (developer.salesforce.com, REST API Developer Guide,
//! "Limit Info Header"): `name=used/limit` counts in one field, each a policy.
//!
//! ```text
//! Sforce-Limit-Info: api-usage=18/5000
//! Sforce-Limit-Info: api-usage=25/5000; per-app-api-usage=17/250(appName=sample-connected-app)
//! ```
//!
//! * Each `name=used/limit` is a policy named `name`: limit 5000, remaining 4982. The org's
//!   limit is over a rolling 24 hours, so the window is a day; no reset is sent.
//! * The connected app's quota names its app in parentheses: that is the policy's partition
//!   key (`sample-connected-app`).
//! * Entries are separated by `;` (the documented example) or `,` (repeated lines joined).
//!   Entries of another shape are ignored; a field of which nothing can be read (or of more
//!   than 64 entries) gives one empty, unsound policy.
//! * More used than the limit (Salesforce lets the org run over for a while) is a remaining of
//!   0.

use std::time::Duration;

use super::collect::Lines;
use super::fields::{members, used_of_limit};
use super::policy::{Dialect, Policy};

/// The window of Salesforce's API request limits: a rolling 24 hours.
const DAY: Duration = Duration::from_secs(86_400);

/// Appends the policies of `Sforce-Limit-Info`.
pub(crate) fn read(lines: &Lines<'_>, out: &mut Vec<Policy>) {
    if !lines.is_present() {
        return;
    }
    let before = out.len();
    for line in lines.lines() {
        let Some(entries) = members(line, b";,") else {
            out.truncate(before);
            break;
        };
        for entry in entries.into_iter().filter_map(used_of_limit) {
            let mut p = entry.policy(Dialect::Salesforce).with_window(DAY);
            if let Some(name) = entry.name {
                p.set_name_of(name);
            }
            if let Some(app) = entry
                .detail
                .and_then(|d| d.split_once('='))
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("appName"))
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
            {
                p.set_partition_key(Some(app.as_bytes().into()));
            }
            out.push(p);
        }
    }
    if out.len() == before {
        out.push(Policy::new(Dialect::Salesforce).unsound());
    }
}

#[cfg(test)]
mod tests {
    use crate::{Dialect, Policy, RateLimitInfo};
    use http::{HeaderMap, HeaderValue};
    use std::time::{Duration, SystemTime};

    fn info(values: &[&'static str]) -> RateLimitInfo {
        let mut m = HeaderMap::new();
        for v in values {
            m.append("Sforce-Limit-Info", HeaderValue::from_static(v));
        }
        RateLimitInfo::from_headers(&m, SystemTime::UNIX_EPOCH)
    }

    fn sf(name: &'static str, limit: u64, remaining: u64) -> Policy {
        Policy::new(Dialect::Salesforce)
            .with_name(name)
            .with_limit(limit)
            .with_remaining(remaining)
            .with_window(Duration::from_secs(86_400))
    }

    #[test]
    fn salesforces_documented_examples() {
        let cases: Vec<(Vec<&'static str>, Vec<Policy>)> = vec![
            // The REST API Developer Guide's response example.
            (vec!["api-usage=18/5000"], vec![sf("api-usage", 5000, 4982)]),
            // Its connected-app example: two policies, the app's keyed by its name.
            (
                vec!["api-usage=25/5000; per-app-api-usage=17/250(appName=sample-connected-app)"],
                vec![
                    sf("api-usage", 5000, 4975),
                    sf("per-app-api-usage", 250, 233).with_partition_key(*b"sample-connected-app"),
                ],
            ),
            // Comma-separated, and the org run over its limit.
            (
                vec!["api-usage=5100/5000, per-app-api-usage=1/250"],
                vec![sf("api-usage", 5000, 0), sf("per-app-api-usage", 250, 249)],
            ),
            // Entries of another shape are ignored.
            (
                vec!["api-usage=18/5000; mystery=yes"],
                vec![sf("api-usage", 5000, 4982)],
            ),
        ];
        for (values, want) in cases {
            let got = info(&values);
            let mut got = got.policies().to_vec();
            got.sort_by(|a, b| a.name().cmp(&b.name()));
            assert_eq!(got, want, "{values:?}");
        }
    }

    #[test]
    fn a_field_of_which_nothing_can_be_read_is_unsound() {
        for bad in ["api-usage", "api-usage=lots/5000", "", "api-usage=1/0"] {
            let got = info(&[bad]);
            assert!(!got.is_sound(), "{bad}");
            assert!(!got.is_empty(), "{bad}");
        }
        assert_eq!(info(&["api-usage=1/0"]).limit(), Some(0));
    }
}
