//! Random configuration trees give an error or limiters, never a panic; and whatever loads,
//! builds.

use pacer_config::{ConfigError, ConfigLoader, Format};
use proptest::prelude::*;

/// A JSON value, rendered by hand (no serde in the tests' dependencies).
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<J>),
    Map(Vec<(String, J)>),
}

impl J {
    fn render(&self, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(&b.to_string()),
            J::Int(i) => out.push_str(&i.to_string()),
            J::Float(f) => out.push_str(&format!("{f:?}")),
            J::Str(s) => quote(s, out),
            J::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.render(out);
                }
                out.push(']');
            }
            J::Map(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    quote(k, out);
                    out.push(':');
                    v.render(out);
                }
                out.push('}');
            }
        }
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Keys a generated table draws from: known ones in several spellings, and random ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "Enabled", "Controller", "InitialUnitsPerMinute", "MinUnitsPerMinute",
            "max_units_per_minute", "Burst", "queue-limit", "MaxWait", "DecreaseCooldown",
            "InstanceCount", "QuotaWindow", "MaxConcurrent", "Aimd", "Cubic", "DecreaseFactor", "IncreaseInterval", "IncreaseStep",
            "Beta", "ScaleConstant", "MaxAttempts", "QueryCost", "MaxRetryAfter", "PauseWithoutRetryAfter", "Throttling", "Algorithm",
            "Algorithms", "Threshold", "Factor", "MaxDelay", "MinDelay", "Delay", "MinRemaining",
            "Reserve", "MinSpacing", "MaxExhaustedDelay", "EndpointKey", "Classifier", "Throttled",
            "ThrottledWithRetryAfter", "ThrottledWhenExhausted", "Overloaded", "GrpcThrottled",
            "MaxEndpoints", "EndpointIdleTtl",
            "Windows", "DefaultLimiter", "Limiters", "0", "1",
            "Dialects", "Name", "Unit", "Limit", "Remaining", "Used", "Reset", "ResetUnit",
            "RetryAfter", "RetryAfterUnit", "Window", "WindowHeader", "WindowUnit", "Field",
            "Grammar", "Separator", "LimitKey", "RemainingKey", "ResetKey", "UsedKey",
        ]).prop_map(str::to_owned),
        1 => "[a-zA-Z_\\-]{0,12}",
    ]
}

/// Scalars of every type, right and wrong: names, durations, numbers at and beyond the edges.
fn scalar() -> impl Strategy<Value = J> {
    prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(429),
            Just(700),
            any::<i64>()
        ]
        .prop_map(J::Int),
        prop_oneof![
            Just(0.0),
            Just(0.5),
            Just(1.5),
            Just(-0.4),
            Just(1e300),
            (-1e6f64..1e6)
        ]
        .prop_map(J::Float),
        prop::sample::select(vec![
            "Aimd",
            "cubic",
            "Percentage",
            "FixedThreshold",
            "AdaptiveDelay",
            "Pacing",
            "Global",
            "Composite",
            "None",
            "Host",
            "Global",
            "00:00:05",
            "1.02:03:04.5",
            "99:99:99",
            "5s",
            "250ms",
            "1m30s",
            "-5s",
            "0",
            "429,503",
            "true",
            "False",
            "",
            "lots",
        ])
        .prop_map(|s| J::Str(s.to_owned())),
        "\\PC{0,10}".prop_map(J::Str),
    ]
}

/// A random tree of bounded depth and width.
fn tree() -> impl Strategy<Value = J> {
    scalar().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::List),
            prop::collection::vec((key(), inner), 0..6).prop_map(J::Map),
        ]
    })
}

/// A limiter made of plausible keys and values, so that many load and reach the build.
fn plausible_limiter() -> impl Strategy<Value = J> {
    let s = |v: &str| J::Str(v.to_owned());
    let map = |e: Vec<(&str, J)>| J::Map(e.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    let entries = vec![
        ("Enabled", J::Bool(false)),
        ("Controller", s("Cubic")),
        ("controller", s("aimd")),
        ("InitialUnitsPerMinute", J::Int(300)),
        ("MinUnitsPerMinute", J::Float(30.5)),
        ("MaxUnitsPerMinute", J::Int(1200)),
        ("max_units_per_minute", s("900")),
        ("Burst", s("00:00:02")),
        ("QueueLimit", J::Int(0)),
        ("MaxWait", s("1m30s")),
        ("DecreaseCooldown", J::Int(3)),
        ("InstanceCount", J::Int(3)),
        ("MaxAttempts", s("2")),
        ("MaxConcurrent", J::Int(3)),
        ("max_concurrent", s("0")),
        ("QueryCost", J::Bool(true)),
        ("MaxRetryAfter", s("250ms")),
        ("PauseWithoutRetryAfter", s("0s")),
        ("QuotaWindow", s("10s")),
        (
            "Aimd",
            map(vec![
                ("IncreaseStep", J::Int(30)),
                ("DecreaseFactor", J::Float(0.5)),
            ]),
        ),
        ("Cubic", map(vec![("Beta", J::Float(0.8))])),
        ("Throttling", s("Pacing")),
        (
            "Throttling",
            map(vec![
                ("Algorithm", s("AdaptiveDelay")),
                ("MaxDelay", s("2s")),
            ]),
        ),
        (
            "Throttling",
            map(vec![
                ("Algorithm", s("Composite")),
                (
                    "Algorithms",
                    J::List(vec![
                        s("Global"),
                        map(vec![
                            ("Algorithm", s("FixedThreshold")),
                            ("Delay", J::Float(0.5)),
                        ]),
                    ]),
                ),
            ]),
        ),
        ("MaxExhaustedDelay", s("00:01:00")),
        ("EndpointKey", s("host")),
        (
            "Classifier",
            map(vec![
                ("Throttled", J::List(vec![J::Int(429), J::Int(420)])),
                ("Overloaded", J::List(vec![J::Int(503)])),
                ("GrpcThrottled", J::List(vec![J::Int(8)])),
            ]),
        ),
        ("MaxEndpoints", J::Int(5)),
        ("EndpointIdleTtl", s("10m")),
        (
            "Dialects",
            J::List(vec![
                map(vec![
                    ("Name", s("trello")),
                    ("Limit", s("x-rate-limit-api-token-max")),
                    ("Remaining", s("x-rate-limit-api-token-remaining")),
                    ("WindowHeader", s("x-rate-limit-api-token-interval-ms")),
                    ("WindowUnit", s("Milliseconds")),
                ]),
                map(vec![
                    ("Field", s("Foo-RateLimit-*")),
                    ("LimitKey", s("total")),
                    ("Separator", s(";")),
                ]),
            ]),
        ),
    ];
    prop::sample::subsequence(entries, 0..8)
        .prop_map(|e| J::Map(e.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

/// A configuration: mostly the right section with plausible or random limiters, sometimes
/// anything at all.
fn config() -> impl Strategy<Value = J> {
    let limiter = prop_oneof![plausible_limiter(), tree()];
    let limiters = prop::collection::vec(("[a-z\\-]{1,8}", limiter), 0..3).prop_map(J::Map);
    prop_oneof![
        4 => (limiters, prop::option::of(scalar())).prop_map(|(limiters, default)| {
            let mut section = vec![("Limiters".to_owned(), limiters)];
            if let Some(d) = default {
                section.push(("DefaultLimiter".to_owned(), d));
            }
            J::Map(vec![("AdaptiveRateLimiting".to_owned(), J::Map(section))])
        }),
        1 => tree(),
    ]
}

fn check(result: Result<pacer_config::PacerSettings, ConfigError>) -> Result<(), TestCaseError> {
    match result {
        Ok(settings) => {
            // Whatever loads is valid and builds.
            for (name, s) in settings.limiters() {
                prop_assert!(s.options.validate().is_ok(), "{name}: {s:?}");
            }
            prop_assert!(settings.build().is_ok());
        }
        Err(ConfigError::Invalid(problems)) => {
            prop_assert!(!problems.as_slice().is_empty());
            for p in problems.as_slice() {
                prop_assert!(!p.to_string().is_empty());
            }
        }
        Err(e) => {
            // A root that is not a table is a parse error of the source.
            prop_assert!(matches!(e, ConfigError::Source { .. }), "{e}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_trees_give_an_error_or_limiters_never_a_panic(tree in config()) {
        let mut text = String::new();
        tree.render(&mut text);
        check(ConfigLoader::new().string(text, Format::Json).load())?;
    }

    #[test]
    fn random_environment_overrides_never_panic(
        vars in prop::collection::vec(
            (prop::collection::vec(key(), 0..5), "\\PC{0,12}"),
            0..6,
        )
    ) {
        let vars: Vec<(String, String)> = vars
            .into_iter()
            .map(|(path, value)| {
                let mut name = "PACER__ADAPTIVERATELIMITING__LIMITERS__API".to_owned();
                for k in path {
                    name.push_str("__");
                    name.push_str(&k);
                }
                (name, value)
            })
            .collect();
        check(
            ConfigLoader::new()
                .string(r#"{ "AdaptiveRateLimiting": { "Limiters": { "api": {} } } }"#, Format::Json)
                .env_vars("PACER", vars)
                .load(),
        )?;
    }
}
