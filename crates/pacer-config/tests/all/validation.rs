//! Every validation rule, with the message it gives.

use crate::support::*;
use pacer_config::{ConfigError, ConfigLoader, Format, ProblemKind};

const P: &str = "AdaptiveRateLimiting.Limiters.orders-api.";

/// The problems of one limiter's body, with the limiter's path taken off the front.
fn limiter(body: &str) -> Vec<String> {
    let text =
        format!(r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "orders-api": {body} }} }} }}"#);
    let e = json(&text).expect_err(body);
    lines(&e)
        .into_iter()
        .map(|l| l.strip_prefix(P).map(str::to_owned).unwrap_or(l))
        .collect()
}

#[test]
fn the_issues_example_message() {
    let e = json(r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": { "MinUnitsPerMinute": 0 } } } }"#)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute = 0: must be greater than 0"
    );
    let p = &e.problems()[0];
    assert_eq!(
        p.path,
        "AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute"
    );
    assert_eq!(p.value.as_deref(), Some("0"));
    assert_eq!(p.message, "must be greater than 0");
    assert_eq!(p.kind, ProblemKind::OutOfRange);
}

#[test]
fn every_rule_of_the_adaptive_options() {
    let table: &[(&str, &str)] = &[
        (
            r#"{ "MinUnitsPerMinute": 0 }"#,
            "MinUnitsPerMinute = 0: must be greater than 0",
        ),
        (
            r#"{ "MaxUnitsPerMinute": -5 }"#,
            "MaxUnitsPerMinute = -5: must be greater than 0",
        ),
        (
            r#"{ "MinUnitsPerMinute": 100, "MaxUnitsPerMinute": 30, "InitialUnitsPerMinute": 50 }"#,
            "MaxUnitsPerMinute = 30: must be at least MinUnitsPerMinute (100)",
        ),
        (
            r#"{ "InitialUnitsPerMinute": 10000, "MaxUnitsPerMinute": 6000 }"#,
            "InitialUnitsPerMinute = 10000: must be between MinUnitsPerMinute (60) and MaxUnitsPerMinute (6000)",
        ),
        (
            r#"{ "MinUnitsPerMinute": 2000000000 }"#,
            "MaxUnitsPerMinute = 1000000000 (the default): must be at least MinUnitsPerMinute (2000000000)",
        ),
        (
            r#"{ "Burst": "00:00:00" }"#,
            "Burst = \"00:00:00\": must be greater than 0",
        ),
        (
            r#"{ "InstanceCount": 0 }"#,
            "InstanceCount = 0: must be at least 1",
        ),
        (
            r#"{ "MaxAttempts": 0 }"#,
            "MaxAttempts = 0: must be at least 1",
        ),
        (
            r#"{ "MaxConcurrent": 0 }"#,
            "MaxConcurrent = 0: must be at least 1 (leave it out for no cap)",
        ),
        (
            r#"{ "MaxConcurrent": -1 }"#,
            "MaxConcurrent = -1: must not be negative",
        ),
        (
            r#"{ "MaxConcurrent": 1.5 }"#,
            "MaxConcurrent = 1.5: expected a whole number",
        ),
        (
            r#"{ "QueryCost": 1 }"#,
            "QueryCost = 1: expected true or false",
        ),
        (
            r#"{ "QuotaWindow": "00:00:00" }"#,
            "QuotaWindow = \"00:00:00\": must be greater than 0",
        ),
        (
            r#"{ "MaxRetryAfter": "0s" }"#,
            "MaxRetryAfter = \"0s\": must be greater than 0",
        ),
        (
            r#"{ "Aimd": { "DecreaseFactor": 1.5 } }"#,
            "Aimd.DecreaseFactor = 1.5: must be greater than 0 and less than 1",
        ),
        (
            r#"{ "Aimd": { "IncreaseStep": 0 } }"#,
            "Aimd.IncreaseStep = 0: must be greater than 0",
        ),
        (
            r#"{ "Cubic": { "Beta": 0 } }"#,
            "Cubic.Beta = 0: must be greater than 0 and less than 1",
        ),
        (
            r#"{ "Cubic": { "ScaleConstant": -0.4 } }"#,
            "Cubic.ScaleConstant = -0.4: must be greater than 0",
        ),
        (
            r#"{ "Controller": "Pacer", "Pacer": { "HoldMargin": 1.5 } }"#,
            "Pacer.HoldMargin = 1.5: must be greater than 0 and less than 1",
        ),
        (
            r#"{ "Pacer": { "ProbeAfter": "00:05:00", "MaxProbeAfter": "00:01:00" } }"#,
            "Pacer.MaxProbeAfter = \"00:01:00\": must be at least ProbeAfter (300s)",
        ),
        (
            r#"{ "Pacer": { "Lead": 0.5 } }"#,
            "Pacer.Lead = 0.5: must be greater than 1",
        ),
    ];
    for (body, message) in table {
        assert_eq!(limiter(body), [*message], "{body}");
    }
}

#[test]
fn wrong_types_and_unparsable_values() {
    let table: &[(&str, &str)] = &[
        (
            r#"{ "MaxUnitsPerMinute": "lots" }"#,
            "MaxUnitsPerMinute = \"lots\": expected a number",
        ),
        (
            r#"{ "MaxUnitsPerMinute": [1] }"#,
            "MaxUnitsPerMinute = a list of 1: expected a number",
        ),
        (
            r#"{ "Enabled": "yes" }"#,
            "Enabled = \"yes\": expected true or false",
        ),
        (
            r#"{ "QueueLimit": -1 }"#,
            "QueueLimit = -1: must not be negative",
        ),
        (
            r#"{ "QueueLimit": 1.5 }"#,
            "QueueLimit = 1.5: expected a whole number",
        ),
        (
            r#"{ "InstanceCount": 5000000000 }"#,
            "InstanceCount = 5000000000: must be at most 4294967295",
        ),
        (
            r#"{ "MaxWait": "soon" }"#,
            "MaxWait = \"soon\": expected a duration: a TimeSpan like \"00:00:05\", a length like \"5s\", \"250ms\" or \"1m30s\", or a number of seconds",
        ),
        (
            r#"{ "MaxWait": "-5s" }"#,
            "MaxWait = \"-5s\": must not be negative",
        ),
        (r#"{ "MaxWait": -5 }"#, "MaxWait = -5: must not be negative"),
        (
            r#"{ "PauseWithoutRetryAfter": -1 }"#,
            "PauseWithoutRetryAfter = -1: must not be negative",
        ),
        (
            r#"{ "MaxWait": "25:00:00" }"#,
            "MaxWait = \"25:00:00\": has 25 hours: a TimeSpan's hours are 0 to 23 (write \"1.00:00:00\" for a day)",
        ),
        (
            r#"{ "DecreaseCooldown": "5 fortnights" }"#,
            "DecreaseCooldown = \"5 fortnights\": has an unknown unit \"fortnights\": expected ns, us, ms, s, m, h or d",
        ),
        (
            r#"{ "Controller": "Vegas" }"#,
            "Controller = \"Vegas\": unknown controller; expected one of Aimd, Cubic, Pacer",
        ),
        (
            r#"{ "Controller": "Cubc" }"#,
            "Controller = \"Cubc\": unknown controller; did you mean \"Cubic\"? (expected one of Aimd, Cubic, Pacer)",
        ),
        (
            r#"{ "Controller": 1 }"#,
            "Controller = 1: expected controller: one of Aimd, Cubic, Pacer",
        ),
        (
            r#"{ "EndpointKey": "Path" }"#,
            "EndpointKey = \"Path\": unknown endpoint key mode; expected one of SchemeHostPort, Host, HostAndFirstSegment, Global, DiscordRoute",
        ),
        (
            r#"{ "EndpointKey": "Hots" }"#,
            "EndpointKey = \"Hots\": unknown endpoint key mode; did you mean \"Host\"? (expected one of SchemeHostPort, Host, HostAndFirstSegment, Global, DiscordRoute)",
        ),
        (r#"{ "Aimd": 5 }"#, "Aimd = 5: expected a table"),
    ];
    for (body, message) in table {
        assert_eq!(limiter(body), [*message], "{body}");
    }
}

#[test]
fn unknown_keys_suggest_the_nearest() {
    let table: &[(&str, &str)] = &[
        (
            r#"{ "MaxUnitPerMinute": 1200 }"#,
            "MaxUnitPerMinute: unknown key; did you mean MaxUnitsPerMinute?",
        ),
        (
            r#"{ "Brust": "1s" }"#,
            "Brust: unknown key; did you mean Burst?",
        ),
        (r#"{ "Colour": "red" }"#, "Colour: unknown key"),
        (
            r#"{ "Aimd": { "Step": 5 } }"#,
            "Aimd.Step: unknown key; expected one of DecreaseFactor, IncreaseInterval, IncreaseStep",
        ),
        (
            r#"{ "Cubic": { "Betta": 0.5 } }"#,
            "Cubic.Betta: unknown key; did you mean Beta?",
        ),
        (
            r#"{ "Classifier": { "Throttle": [429] } }"#,
            "Classifier.Throttle: unknown key; did you mean Throttled?",
        ),
    ];
    for (body, message) in table {
        assert_eq!(limiter(body), [*message], "{body}");
    }
    let e = json(r#"{ "AdaptiveRateLimiting": { "Limiter": { "a": {} } } }"#).unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters: no limiter is configured; add one as AdaptiveRateLimiting.Limiters.<name>",
            "AdaptiveRateLimiting.Limiter: unknown key; did you mean Limiters?",
        ]
    );
    match &e.problems()[1].kind {
        ProblemKind::UnknownKey { suggestion } => {
            assert_eq!(suggestion.as_deref(), Some("Limiters"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_suggestion_follows_the_files_spelling() {
    let e = toml("[adaptive_rate_limiting.limiters.orders-api]\nmax_unit_per_minute = 5\n")
        .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "adaptive_rate_limiting.limiters.orders-api.max_unit_per_minute: unknown key; did you mean max_units_per_minute?"
        ]
    );
}

#[test]
fn snake_case_files_get_snake_case_paths() {
    let e = toml("[adaptive_rate_limiting.limiters.orders-api]\nmin_units_per_minute = 0\n")
        .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "adaptive_rate_limiting.limiters.orders-api.min_units_per_minute = 0: must be greater than 0"
        ]
    );
    // An option that was not given is named in the file's style, with the value in force.
    let e = toml(
        "[adaptive_rate_limiting.limiters.orders-api]\nmin_units_per_minute = 2000000000\naimd = { increase_step = 0 }\n",
    )
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "adaptive_rate_limiting.limiters.orders-api.max_units_per_minute = 1000000000 (the default): must be at least MinUnitsPerMinute (2000000000)",
            "adaptive_rate_limiting.limiters.orders-api.aimd.increase_step = 0: must be greater than 0",
        ]
    );
}

#[test]
fn the_same_key_twice_in_two_spellings() {
    assert_eq!(
        limiter(r#"{ "MaxWait": "5s", "max_wait": "6s" }"#),
        ["max_wait: given twice, as MaxWait and as max_wait"]
    );
    let e = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": {}, "Orders_API": {} } } }"#,
    )
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters.Orders_API: the same limiter as orders-api: names match without regard to case, _ or -"
        ]
    );
}

#[test]
fn every_rule_of_the_throttling_algorithms() {
    let table: &[(&str, &[&str])] = &[
        (
            r#"{ "Throttling": "Pacign" }"#,
            &[
                "Throttling = \"Pacign\": unknown throttling algorithm; did you mean \"Pacing\"? (expected one of Percentage, FixedThreshold, AdaptiveDelay, Pacing, Global, Composite, None)",
            ],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Percentage", "Threshold": 1.5 } }"#,
            &["Throttling.Threshold = 1.5: expected a fraction in (0, 1]"],
        ),
        (
            r#"{ "Throttling": { "Threshold": 0, "Factor": 0, "MaxDelay": "0s" } }"#,
            &[
                "Throttling.Threshold = 0: expected a fraction in (0, 1]",
                "Throttling.Factor = 0: expected a finite number above 0",
                "Throttling.MaxDelay = \"0s\": expected a duration above zero",
            ],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "FixedThreshold", "Delay": 0 } }"#,
            &["Throttling.Delay = 0: expected a duration above zero"],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "AdaptiveDelay", "MinDelay": "20s" } }"#,
            &["Throttling.MaxDelay = 10s (the default): expected a delay at least min_delay"],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Global", "Threshold": 2 } }"#,
            &["Throttling.Threshold = 2: expected a fraction in (0, 1]"],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Percentage", "Delay": "1s" } }"#,
            &[
                "Throttling.Delay: not a parameter of Percentage; its parameters are Threshold, Factor, MaxDelay",
            ],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "None", "Threshold": 0.1 } }"#,
            &["Throttling.Threshold: None takes no parameters, so Threshold does not apply"],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Pacing", "Reserv": 1 } }"#,
            &["Throttling.Reserv: unknown key; expected one of Algorithm"],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Composite", "Algorithms": [] } }"#,
            &[
                "Throttling.Algorithms = a list of 0: a composite algorithm needs at least one algorithm: list at least one",
            ],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Composite" } }"#,
            &["Throttling: a Composite needs Algorithms: a list of algorithms"],
        ),
        (
            r#"{ "Throttling": "Composite" }"#,
            &[
                "Throttling = \"Composite\": a Composite needs its Algorithms: write a table with Algorithm and Algorithms",
            ],
        ),
        (
            r#"{ "Throttling": { "Algorithm": "Composite", "Algorithms": [ "None", { "Algorithm": "Pacing", "MinSpacing": "x" } ] } }"#,
            &[
                "Throttling.Algorithms[0] = \"None\": None cannot be part of a Composite",
                "Throttling.Algorithms[1].MinSpacing = \"x\": expected a duration: a TimeSpan like \"00:00:05\", a length like \"5s\", \"250ms\" or \"1m30s\", or a number of seconds",
            ],
        ),
        (
            r#"{ "Throttling": 5 }"#,
            &[
                "Throttling = 5: expected an algorithm's name or a table with Algorithm and its parameters; algorithms: Percentage, FixedThreshold, AdaptiveDelay, Pacing, Global, Composite, None",
            ],
        ),
        (
            r#"{ "MaxExhaustedDelay": "0s" }"#,
            &["MaxExhaustedDelay = \"0s\": expected a duration above zero"],
        ),
    ];
    for (body, messages) in table {
        assert_eq!(limiter(body), *messages, "{body}");
    }
}

#[test]
fn every_rule_of_the_rest() {
    let table: &[(&str, &[&str])] = &[
        (
            r#"{ "Classifier": { "Throttled": [429, 700, "abc"] } }"#,
            &[
                "Classifier.Throttled[1] = 700: must be an HTTP status code from 100 to 599",
                "Classifier.Throttled[2] = \"abc\": expected an HTTP status code (a whole number from 100 to 599)",
            ],
        ),
        (
            r#"{ "Classifier": { "ThrottledWithRetryAfter": 99 } }"#,
            &[
                "Classifier.ThrottledWithRetryAfter = 99: must be an HTTP status code from 100 to 599",
            ],
        ),
        (
            r#"{ "Classifier": { "ThrottledWhenExhausted": true } }"#,
            &["Classifier.ThrottledWhenExhausted = true: expected a list"],
        ),
        (
            r#"{ "Classifier": { "Overloaded": [503, 1000] } }"#,
            &["Classifier.Overloaded[1] = 1000: must be an HTTP status code from 100 to 599"],
        ),
        (
            r#"{ "Classifier": { "GrpcThrottled": [8, 17, "x"] } }"#,
            &[
                "Classifier.GrpcThrottled[1] = 17: must be a gRPC status code from 0 to 16",
                "Classifier.GrpcThrottled[2] = \"x\": expected a gRPC status code (a whole number from 0 to 16)",
            ],
        ),
        (
            r#"{ "MaxEndpoints": 0 }"#,
            &["MaxEndpoints = 0: must be at least 1"],
        ),
        (
            r#"{ "EndpointIdleTtl": 0 }"#,
            &["EndpointIdleTtl = 0: must be greater than 0"],
        ),
        (
            r#"{ "Windows": [ { "Limit": 100, "Frames": 10, "FrameLength": "00:00:01" } ] }"#,
            &[
                "Windows[0].Per: a window needs its length",
                "Windows[0].FrameLength: unknown key; expected one of Name, Limit, Per, Frames, Store, KeyPrefix, OnStoreFailure",
            ],
        ),
        (
            r#"{ "Windows": [ { "Name": "a", "Limit": 0, "Per": "00:10:00" }, { "Name": "b", "Limit": 5, "Per": "1m" }, { "Name": "b", "Limit": 6, "Per": "1h" } ] }"#,
            &[
                "Windows[0].Limit = 0: must be at least 1",
                "Windows[2].Name = b: a window of this name is already configured for the limiter",
            ],
        ),
        (
            r#"{ "Windows": [ { "Limit": 5, "Per": "1m", "Store": "postgres://u:pw@h/db", "OnStoreFailure": "FailClose" } ] }"#,
            &[
                "Windows[0].Store: expected Memory or a Redis URL (redis://… or rediss://…)",
                "Windows[0].OnStoreFailure = \"FailClose\": unknown store-failure policy; did you mean \"FailClosed\"? (expected one of FailClosed, FailOpen, Fallback)",
            ],
        ),
        (
            r#"{ "Windows": [ { "Limit": 5, "Per": "0s", "Frames": 0 } ] }"#,
            &["Windows[0]: impossible window: per must be a positive duration, got 0ns"],
        ),
        (
            r#"{ "Windows": [ { "Limit": 5, "Per": "1m", "Store": "redis://:pw@[::1" } ] }"#,
            if cfg!(feature = "redis") {
                &[
                    "Windows[0].Store: not a valid Redis URL: Redis URL did not parse - InvalidClientConfig",
                ]
            } else {
                &["Windows[0].Store: a window kept in Redis needs Pacer's `redis` feature"]
            },
        ),
        (
            r#"{ "Windows": { "Limit": 5 } }"#,
            &["Windows = a table: expected a list"],
        ),
        (
            r#"5"#,
            &[
                "AdaptiveRateLimiting.Limiters.orders-api = 5: expected a table of the limiter's options",
            ],
        ),
    ];
    for (body, messages) in table {
        assert_eq!(limiter(body), *messages, "{body}");
    }
}

#[test]
fn sections_limiters_and_the_default() {
    let table: &[(&str, &[&str])] = &[
        (
            r#"{}"#,
            &[
                "AdaptiveRateLimiting: section not found: no limiter is configured; add one as AdaptiveRateLimiting.Limiters.<name>",
            ],
        ),
        (
            r#"{ "AdaptiveRateLimits": { "Limiters": { "a": {} } } }"#,
            &["AdaptiveRateLimits: unknown section; did you mean AdaptiveRateLimiting?"],
        ),
        (
            r#"{ "AdaptiveRateLimiting": 3 }"#,
            &["AdaptiveRateLimiting = 3: expected a table with Limiters"],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "Limiters": {} } }"#,
            &[
                "AdaptiveRateLimiting.Limiters: no limiter is configured; add one as AdaptiveRateLimiting.Limiters.<name>",
            ],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "Limiters": [] } }"#,
            &["AdaptiveRateLimiting.Limiters = a list of 0: expected a table"],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "DefaultLimiter": "orders", "Limiters": { "orders-api": {}, "search-api": {} } } }"#,
            &[
                "AdaptiveRateLimiting.DefaultLimiter = \"orders\": names no limiter; did you mean \"orders-api\"?",
            ],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "DefaultLimiter": "billing", "Limiters": { "orders-api": {} } } }"#,
            &[
                "AdaptiveRateLimiting.DefaultLimiter = \"billing\": names no limiter; the limiters are orders-api",
            ],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "DefaultLimiter": 1, "Limiters": { "orders-api": {} } } }"#,
            &["AdaptiveRateLimiting.DefaultLimiter = 1: expected the name of a limiter"],
        ),
        (
            r#"{ "AdaptiveRateLimiting": { "Limiters": { "": {} } } }"#,
            &["AdaptiveRateLimiting.Limiters.: a limiter needs a name"],
        ),
    ];
    for (text, messages) in table {
        assert_eq!(lines(&json(text).expect_err(text)), *messages, "{text}");
    }
}

#[test]
fn all_errors_are_reported_not_only_the_first() {
    let e = json(
        r#"{ "AdaptiveRateLimiting": {
            "Limiters": {
                "orders-api": { "MinUnitsPerMinute": 0, "Brust": 2, "Aimd": { "DecreaseFactor": 2 } },
                "search-api": { "Controller": "Cubc", "MaxWait": "soon", "Classifier": { "Throttled": [700] } }
            },
            "Default": "orders-api"
        } }"#,
    )
    .unwrap_err();
    let kinds: Vec<_> = e.problems().iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute",
            "AdaptiveRateLimiting.Limiters.orders-api.Aimd.DecreaseFactor",
            "AdaptiveRateLimiting.Limiters.orders-api.Brust",
            "AdaptiveRateLimiting.Limiters.search-api.Controller",
            "AdaptiveRateLimiting.Limiters.search-api.MaxWait",
            "AdaptiveRateLimiting.Limiters.search-api.Classifier.Throttled[0]",
            "AdaptiveRateLimiting.Default",
        ]
    );
    assert_eq!(e.to_string().lines().count(), 7);
    assert_eq!(
        lines(&e)[6],
        "AdaptiveRateLimiting.Default: unknown key; did you mean DefaultLimiter?"
    );
}

#[test]
fn unreadable_sources() {
    let missing = ConfigLoader::new()
        .file("/no/such/pacer.toml")
        .load()
        .unwrap_err();
    assert!(matches!(missing, ConfigError::Source { .. }));
    assert!(
        missing
            .to_string()
            .starts_with("/no/such/pacer.toml: cannot be read: "),
        "{missing}"
    );
    assert!(missing.problems().is_empty());

    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("pacer.yaml");
    std::fs::write(&yaml, "a: 1").unwrap();
    let e = ConfigLoader::new().file(&yaml).load().unwrap_err();
    assert!(
        e.to_string()
            .ends_with("pacer.yaml: unknown configuration format: expected a .json or .toml file"),
        "{e}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ \"AdaptiveRateLimiting\": ").unwrap();
    let e = ConfigLoader::new().file(&bad).load().unwrap_err();
    assert!(matches!(e, ConfigError::Source { .. }));
    assert!(e.to_string().contains("bad.json"), "{e}");

    let e = ConfigLoader::new()
        .string("limiters = [", Format::Toml)
        .load()
        .unwrap_err();
    assert!(e.to_string().starts_with("configuration text: "), "{e}");
}

#[test]
fn query_cost_is_read_into_the_rules_of_both_drivers() {
    let text =
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "shopify": { "QueryCost": true } } } }"#;
    let s = json(text).unwrap();
    let shopify = s.limiter("shopify").unwrap();
    assert!(shopify.query_cost);
    assert!(shopify.rules().unwrap().reads_query_cost());
    assert!(shopify.to_limiter_config().unwrap().reads_query_cost());
    let off = json(r#"{ "AdaptiveRateLimiting": { "Limiters": { "a": {} } } }"#).unwrap();
    assert!(
        !off.limiter("a")
            .unwrap()
            .rules()
            .unwrap()
            .reads_query_cost()
    );
}
