use super::*;

fn errors(b: DeclaredDialectBuilder) -> Vec<String> {
    match b.build() {
        Ok(d) => panic!("built {d:?}"),
        Err(e) => e.errors().iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn every_rule_names_its_setting_and_value() {
    let b = DeclaredDialect::builder;
    let cases: Vec<(DeclaredDialectBuilder, &[&str])> = vec![
        (
            b("a"),
            &[
                "Remaining = none: a dialect reads at least one of Limit, Remaining, Used, Field or RetryAfter",
            ],
        ),
        (b("").remaining("r"), &["Name = \"\": must not be empty"]),
        (
            b("a b").remaining("r"),
            &["Name = \"a b\": must be 1 to 64 visible ASCII characters"],
        ),
        (b("a").limit(" "), &["Limit = \" \": must not be empty"]),
        (
            b("a").remaining("x:y"),
            &["Remaining = \"x:y\": must be a header name: letters, digits and !#$%&'*+-.^_`|~"],
        ),
        (
            b("a").remaining("x-*"),
            &["Remaining = \"x-*\": a pattern (*) is allowed only in Field"],
        ),
        (
            b("a").field("*"),
            &[
                "Field = \"*\": must be a header name, or a header name's start followed by one * (Foo-RateLimit-*)",
            ],
        ),
        (
            b("a").field("a*b*"),
            &[
                "Field = \"a*b*\": must be a header name, or a header name's start followed by one * (Foo-RateLimit-*)",
            ],
        ),
        (
            b("a").field("f").limit("l"),
            &[
                "Field = \"f\": cannot be given with Limit, Remaining, Used or Reset: a dialect reads one field, or separate headers",
            ],
        ),
        (
            b("a").remaining("r").window(Duration::ZERO),
            &["Window = 0s: must be greater than 0"],
        ),
        (
            b("a")
                .remaining("r")
                .window(MAX_WINDOW + Duration::from_secs(1)),
            &["Window = 31536001s: must be at most 365 days"],
        ),
        (
            b("a")
                .remaining("r")
                .window(Duration::from_secs(60))
                .window_header("w"),
            &["WindowHeader = \"w\": cannot be given with Window"],
        ),
        (
            b("a")
                .remaining("r")
                .window_header("w")
                .window_unit(TimeUnit::EpochSeconds),
            &[
                "WindowUnit = EpochSeconds: must be Seconds, Milliseconds or GoDuration: a window is a length",
            ],
        ),
        (
            b("a").remaining("r").reset_unit(TimeUnit::Seconds),
            &["ResetUnit = Seconds: applies only with Reset or Field"],
        ),
        (
            b("a").remaining("r").retry_after_unit(TimeUnit::Seconds),
            &["RetryAfterUnit = Seconds: applies only with RetryAfter"],
        ),
        (
            b("a").remaining("r").window_unit(TimeUnit::Seconds),
            &["WindowUnit = Seconds: applies only with WindowHeader"],
        ),
        (
            b("a").remaining("r").separator(','),
            &["Separator = \",\": applies only with Field"],
        ),
        (
            b("a").remaining("r").grammar(FieldGrammar::UsedOfLimit),
            &["Grammar = UsedOfLimit: applies only with Field"],
        ),
        (
            b("a").remaining("r").limit_key("total"),
            &["LimitKey = \"total\": applies only with Field and the Pairs grammar"],
        ),
        (
            b("a")
                .field("f")
                .grammar(FieldGrammar::UsedOfLimit)
                .reset_key("t"),
            &["ResetKey = \"t\": applies only with Field and the Pairs grammar"],
        ),
        (
            b("a").field("f").separator('='),
            &[
                "Separator = \"=\": must be one visible ASCII character other than a letter, a digit, =, /, (, ) or \"",
            ],
        ),
        (
            b("a").field("f").limit_key(""),
            &["LimitKey = \"\": must not be empty"],
        ),
        (
            b("a").field("f").limit_key("a;b"),
            &["LimitKey = \"a;b\": must not hold = or the separator"],
        ),
        (
            b("a").field("f").reset_key("Remaining"),
            &["ResetKey = \"remaining\": must differ from RemainingKey"],
        ),
        (
            b("a").remaining("r").unit(QuotaUnit::Other("".into())),
            &["Unit = \"\": must not be empty"],
        ),
    ];
    for (builder, want) in cases {
        assert_eq!(errors(builder), *want);
    }
    // Every problem at once.
    assert_eq!(errors(b("").limit("").separator('x')).len(), 4);
}

#[test]
fn what_was_declared_reads_back() {
    let d = DeclaredDialect::builder(" trello ")
        .limit("X-Rate-Limit-Api-Token-Max")
        .remaining("x-rate-limit-api-token-remaining")
        .window_header("x-rate-limit-api-token-interval-ms")
        .window_unit(TimeUnit::Milliseconds)
        .retry_after("X-Retry-In")
        .build()
        .unwrap();
    assert_eq!(d.name(), "trello");
    assert_eq!(d.limit_header(), Some("x-rate-limit-api-token-max"));
    assert_eq!(
        d.remaining_header(),
        Some("x-rate-limit-api-token-remaining")
    );
    assert_eq!(
        d.window_header(),
        Some(("x-rate-limit-api-token-interval-ms", TimeUnit::Milliseconds))
    );
    assert_eq!(d.retry_after_header(), Some(("x-retry-in", TimeUnit::Auto)));
    assert_eq!((d.field(), d.pair_keys(), d.window()), (None, None, None));
    let z = DeclaredDialect::builder("zendesk")
        .field("Zendesk-RateLimit-*")
        .limit_key("Total")
        .reset_key("resets")
        .reset_unit(TimeUnit::Seconds)
        .build()
        .unwrap();
    assert_eq!(
        z.field(),
        Some(("zendesk-ratelimit-*".to_owned(), FieldGrammar::Pairs, ';'))
    );
    assert_eq!(
        z.pair_keys(),
        Some(["total", "remaining", "resets", "used"])
    );
    assert_eq!(z.reset_unit(), TimeUnit::Seconds);
    assert_eq!(z.clone(), z);
    assert_ne!(z, d);
}

#[test]
fn time_units_by_name() {
    for unit in TimeUnit::ALL {
        assert_eq!(TimeUnit::from_name(unit.as_str()), Some(unit));
    }
    assert_eq!(TimeUnit::from_name("http_date"), Some(TimeUnit::HttpDate));
    assert_eq!(TimeUnit::from_name("minutes"), None);
}
