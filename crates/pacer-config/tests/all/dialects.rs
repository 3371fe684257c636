//! Declared dialects in configuration: docs/dialects.md's Freshdesk and Trello snippets, in
//! JSON and TOML, read a response into the right policies through the built rules; every bad
//! value is reported at its key path; the settings are written back.

use crate::support::*;
use http::{HeaderMap, HeaderValue, StatusCode};
use pacer_config::{ConfigLoader, Format, PacerSettings};
use pacer_core::{Dialect, Policy, RateLimitInfo};
use std::time::{Duration, SystemTime};

/// docs/dialects.md's appsettings snippet.
const JSON: &str = r#"{ "AdaptiveRateLimiting": { "Limiters": {
  "freshdesk": {
    "Dialects": [
      { "Name": "freshdesk", "Limit": "X-Ratelimit-Total", "Remaining": "X-Ratelimit-Remaining",
        "Window": "00:01:00" }
    ]
  },
  "trello": {
    "Dialects": [
      { "Name": "trello-token", "Limit": "x-rate-limit-api-token-max",
        "Remaining": "x-rate-limit-api-token-remaining",
        "WindowHeader": "x-rate-limit-api-token-interval-ms", "WindowUnit": "Milliseconds" },
      { "Name": "trello-key", "Limit": "x-rate-limit-api-key-max",
        "Remaining": "x-rate-limit-api-key-remaining",
        "WindowHeader": "x-rate-limit-api-key-interval-ms", "WindowUnit": "Milliseconds" }
    ]
  }
} } }"#;

/// docs/dialects.md's TOML snippet.
const TOML: &str = r#"
[[adaptive_rate_limiting.limiters.freshdesk.dialects]]
name = "freshdesk"
limit = "X-Ratelimit-Total"
remaining = "X-Ratelimit-Remaining"
window = "1m"

[[adaptive_rate_limiting.limiters.trello.dialects]]
name = "trello-token"
limit = "x-rate-limit-api-token-max"
remaining = "x-rate-limit-api-token-remaining"
window_header = "x-rate-limit-api-token-interval-ms"
window_unit = "Milliseconds"

[[adaptive_rate_limiting.limiters.trello.dialects]]
name = "trello-key"
limit = "x-rate-limit-api-key-max"
remaining = "x-rate-limit-api-key-remaining"
window_header = "x-rate-limit-api-key-interval-ms"
window_unit = "Milliseconds"
"#;

/// What `limiter`'s built rules read in a 200 with `fields`.
fn reading(settings: &PacerSettings, limiter: &str, fields: &[(&str, &str)]) -> RateLimitInfo {
    let mut headers = HeaderMap::new();
    for (k, v) in fields {
        headers.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let rules = settings.limiter(limiter).unwrap().rules().unwrap();
    let reading = rules.read(
        StatusCode::OK,
        &headers,
        None,
        SystemTime::UNIX_EPOCH,
        Duration::from_secs(60),
    );
    reading.info().clone()
}

fn declared(name: &'static str, limit: u64, remaining: u64, window: u64) -> Policy {
    Policy::new(Dialect::Declared)
        .with_name(name)
        .with_limit(limit)
        .with_remaining(remaining)
        .with_window(Duration::from_secs(window))
}

#[test]
fn freshdesk_and_trello_from_the_docs_snippets_read_their_responses() {
    let from_json = json(JSON).unwrap();
    let from_toml = toml(TOML).unwrap();
    assert_eq!(from_json, from_toml);
    for settings in [&from_json, &from_toml] {
        // Freshdesk's documented fields.
        let got = reading(
            settings,
            "freshdesk",
            &[
                ("X-Ratelimit-Total", "700"),
                ("X-Ratelimit-Remaining", "699"),
                ("X-Ratelimit-Used-CurrentRequest", "1"),
            ],
        );
        assert_eq!(got.policies(), [declared("freshdesk", 700, 699, 60)]);
        // Trello's documented fields: a token's and an API key's limit per 10 s.
        let got = reading(
            settings,
            "trello",
            &[
                ("x-rate-limit-api-token-interval-ms", "10000"),
                ("x-rate-limit-api-token-max", "100"),
                ("x-rate-limit-api-token-remaining", "99"),
                ("x-rate-limit-api-key-interval-ms", "10000"),
                ("x-rate-limit-api-key-max", "300"),
                ("x-rate-limit-api-key-remaining", "299"),
            ],
        );
        assert_eq!(
            got.policies(),
            [
                declared("trello-token", 100, 99, 10),
                declared("trello-key", 300, 299, 10)
            ]
        );
        // The middleware builds with them.
        assert!(settings.build().is_ok());
    }
}

#[test]
fn field_grammars_and_units_in_both_spellings() {
    let json = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "api": { "Dialects": [
            { "Name": "endpoints", "Field": "Foo-RateLimit-*", "LimitKey": "total",
              "ResetKey": "resets", "ResetUnit": "Seconds" },
            { "Name": "usage", "Field": "X-Usage", "Grammar": "UsedOfLimit", "Separator": ",",
              "Window": "1.00:00:00", "Unit": "tokens" },
            { "Name": "wait", "RetryAfter": "X-Wait", "RetryAfterUnit": "iso8601" }
        ] } } } }"#,
    )
    .unwrap();
    let toml = toml(
        r#"
[[adaptive_rate_limiting.limiters.api.dialects]]
name = "endpoints"
field = "Foo-RateLimit-*"
limit_key = "total"
reset_key = "resets"
reset_unit = "seconds"
[[adaptive_rate_limiting.limiters.api.dialects]]
name = "usage"
field = "X-Usage"
grammar = "used-of-limit"
separator = ","
window = "1d"
unit = "tokens"
[[adaptive_rate_limiting.limiters.api.dialects]]
name = "wait"
retry_after = "X-Wait"
retry_after_unit = "Rfc3339"
"#,
    )
    .unwrap();
    assert_eq!(json, toml);
    let got = reading(
        &json,
        "api",
        &[
            ("foo-ratelimit-search", "total=10; remaining=1; resets=5"),
            ("x-usage", "a=400/1000, b=1/2"),
        ],
    );
    let names: Vec<_> = got.policies().iter().map(|p| p.name()).collect();
    assert_eq!(names, [Some("search"), Some("b"), Some("a")]);
}

#[test]
fn every_bad_value_names_its_key_path() {
    const P: &str = "AdaptiveRateLimiting.Limiters.api.Dialects";
    let table: &[(&str, &[&str])] = &[
        (
            r#"{ "Name": "x", "Limit": "" }"#,
            &["[0].Limit = \"\": must not be empty"],
        ),
        (
            r#"{ "Remaining": "X Left" }"#,
            &[
                "[0].Remaining = \"X Left\": must be a header name: letters, digits and !#$%&'*+-.^_`|~",
            ],
        ),
        (
            r#"{ "Name": "x" }"#,
            &["[0]: a dialect reads at least one of Limit, Remaining, Used, Field or RetryAfter"],
        ),
        (
            r#"{ "Remaining": "r", "Window": "00:00:00" }"#,
            &["[0].Window = \"00:00:00\": must be greater than 0"],
        ),
        (
            r#"{ "Remaining": "r", "WindowHeader": "w", "WindowUnit": "HttpDate" }"#,
            &[
                "[0].WindowUnit = \"HttpDate\": must be Seconds, Milliseconds or GoDuration: a window is a length",
            ],
        ),
        (
            r#"{ "Remaining": "r", "WindowHeader": "w", "WindowUnit": "Milisecond" }"#,
            &[
                "[0].WindowUnit = \"Milisecond\": unknown time unit; did you mean \"Milliseconds\"? (expected one of Auto, Seconds, Milliseconds, EpochSeconds, EpochMilliseconds, HttpDate, Rfc3339, GoDuration, Iso8601)",
            ],
        ),
        (
            r#"{ "Field": "f", "Limit": "l" }"#,
            &[
                "[0].Field = \"f\": cannot be given with Limit, Remaining, Used or Reset: a dialect reads one field, or separate headers",
            ],
        ),
        (
            r#"{ "Field": "f", "Separator": ";;" }"#,
            &["[0].Separator = \";;\": must be one character"],
        ),
        (
            r#"{ "Remaining": "r", "LimitKey": "total" }"#,
            &["[0].LimitKey = \"total\": applies only with Field and the Pairs grammar"],
        ),
        (
            r#"{ "Remaining": "r", "Remainig": "x" }"#,
            &["[0].Remainig: unknown key; did you mean Remaining?"],
        ),
        (
            r#"{ "Name": "a", "Remaining": "r" }, { "Name": "a", "Limit": "l" }"#,
            &["[1].Name = \"a\": a dialect of this name is already declared for the limiter"],
        ),
    ];
    for (items, want) in table {
        let text = format!(
            r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "api": {{ "Dialects": [ {items} ] }} }} }} }}"#
        );
        let e = json(&text).expect_err(items);
        let got: Vec<String> = lines(&e)
            .into_iter()
            .map(|l| l.strip_prefix(P).map(str::to_owned).unwrap_or(l))
            .collect();
        assert_eq!(got, *want, "{items}");
    }
}

#[test]
fn dialects_are_written_back_and_read_the_same() {
    let settings = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "api": { "Dialects": [
            { "Name": "quota", "Unit": "input-tokens", "Limit": "X-Cap", "Remaining": "X-Left",
              "Used": "X-Spent", "Reset": "X-Back", "ResetUnit": "EpochMilliseconds",
              "RetryAfter": "X-Wait", "RetryAfterUnit": "GoDuration",
              "WindowHeader": "X-Span", "WindowUnit": "Milliseconds" },
            { "Name": "endpoints", "Field": "Foo-RateLimit-*", "Separator": ",",
              "LimitKey": "total", "UsedKey": "spent" },
            { "Name": "usage", "Field": "X-Usage", "Grammar": "UsedOfLimit", "Window": "01:00:00" }
        ] } } } }"#,
    )
    .unwrap();
    let written = serde_json::to_value(&settings).unwrap();
    let dialects = &written["Limiters"]["api"]["Dialects"];
    assert_eq!(dialects[0]["ResetUnit"], "EpochMilliseconds");
    assert_eq!(dialects[1]["Field"], "foo-ratelimit-*");
    assert!(
        dialects[2].get("LimitKey").is_none(),
        "keys apply to Pairs only"
    );
    let back: PacerSettings = serde_json::from_value(written).unwrap();
    assert_eq!(back, settings);
    let toml_text = ::toml::to_string(&settings).unwrap();
    let back: PacerSettings = ::toml::from_str(&toml_text).unwrap();
    assert_eq!(back, settings, "{toml_text}");
}

#[test]
fn an_environment_variable_declares_or_changes_a_dialect() {
    let settings = ConfigLoader::new()
        .string(JSON, Format::Json)
        .env_vars(
            "PACER",
            [(
                "PACER__ADAPTIVERATELIMITING__LIMITERS__FRESHDESK__DIALECTS__0__WINDOW",
                "00:02:00",
            )],
        )
        .load()
        .unwrap();
    let d = &settings.limiter("freshdesk").unwrap().dialects[0];
    assert_eq!(d.window(), Some(Duration::from_secs(120)));
}
