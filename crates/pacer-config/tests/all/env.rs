//! Environment overrides: they win over files, whatever their spelling.
//!
//! Most tests pass the variables as a map, so no test changes the process environment; one test
//! runs this binary again as a child process with real variables set.

use crate::support::*;
use pacer_config::{ConfigLoader, from_config_file_with_env};
use pacer_core::ControllerKind;
use std::process::Command;
use std::time::Duration;

fn with_env(
    vars: &[(&str, &str)],
) -> Result<pacer_config::PacerSettings, pacer_config::ConfigError> {
    ConfigLoader::new()
        .file(sample("appsettings.json"))
        .env_vars("PACER", vars.iter().copied())
        .load()
}

#[test]
fn environment_overrides_win_over_the_file() {
    let s = with_env(&[
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE",
            "900",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__AIMD__INCREASEINTERVAL",
            "00:00:20",
        ),
        // Any spelling: snake case, and a limiter name with `_` for its `-`.
        (
            "PACER__ADAPTIVE_RATE_LIMITING__LIMITERS__SEARCH_API__CONTROLLER",
            "aimd",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__SEARCH-API__ENABLED",
            "False",
        ),
        // A list item by index, as .NET writes lists in the environment.
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__SEARCH-API__CLASSIFIER__THROTTLED__1",
            "420",
        ),
        // And a whole list as one value.
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__SEARCH-API__CLASSIFIER__THROTTLEDWHENEXHAUSTED",
            "403, 409",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__SEARCH-API__THROTTLING__ALGORITHMS__0__RESERVE",
            "7",
        ),
        // Not under the prefix: ignored.
        (
            "OTHER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE",
            "1",
        ),
    ])
    .unwrap();
    let orders = &s.limiter("orders-api").unwrap().options;
    assert_eq!(orders.max_units_per_minute, 900.0);
    assert_eq!(orders.aimd.increase_interval, Duration::from_secs(20));
    assert_eq!(orders.aimd.increase_step, 60.0); // from the file
    let search = s.limiter("search-api").unwrap();
    assert_eq!(search.options.controller, ControllerKind::Aimd);
    assert!(!search.options.enabled);
    let statuses = search.classifier.statuses();
    let codes = |s: &[http::StatusCode]| s.iter().map(|c| c.as_u16()).collect::<Vec<_>>();
    assert_eq!(codes(statuses.throttled), [429, 420]);
    assert_eq!(codes(statuses.throttled_when_exhausted), [403, 409]);
    match &search.throttling {
        pacer_config::ThrottlingSettings::Composite(parts) => match &parts[0] {
            pacer_config::ThrottlingSettings::Pacing(p) => assert_eq!(p.reserve(), 7),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // The names keep the file's spelling.
    assert_eq!(s.names().collect::<Vec<_>>(), ["orders-api", "search-api"]);
}

#[test]
fn a_bad_override_is_reported_at_the_files_path() {
    let e = with_env(&[(
        "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE",
        "lots",
    )])
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters.orders-api.MaxUnitsPerMinute = \"lots\": expected a number"
        ]
    );
    let e = with_env(&[(
        "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MINUNITSPERMINUTE",
        "0",
    )])
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters.orders-api.MinUnitsPerMinute = \"0\": must be greater than 0"
        ]
    );
}

#[test]
fn a_misspelt_override_is_an_error_not_ignored() {
    let e = with_env(&[(
        "PACER__ADAPTIVERATELIMTING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE",
        "900",
    )])
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "PACER__ADAPTIVERATELIMTING: unknown key in the environment; did you mean PACER__ADAPTIVERATELIMITING?"
        ]
    );
    let e = with_env(&[(
        "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITPERMINUTE",
        "900",
    )])
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters.orders-api.maxunitperminute: unknown key; did you mean MaxUnitsPerMinute?"
        ]
    );
}

#[test]
fn a_limiter_only_in_the_environment() {
    let s = ConfigLoader::new()
        .env_vars(
            "APP",
            [
                (
                    "APP__ADAPTIVERATELIMITING__LIMITERS__BILLING__MAXUNITSPERMINUTE",
                    "120",
                ),
                (
                    "APP__ADAPTIVERATELIMITING__LIMITERS__BILLING__INITIALUNITSPERMINUTE",
                    "100",
                ),
            ],
        )
        .load()
        .unwrap();
    assert_eq!(s.names().collect::<Vec<_>>(), ["billing"]);
    // Its paths in errors follow the environment's lowercase keys, in snake case.
    let e = ConfigLoader::new()
        .env_vars(
            "APP",
            [(
                "APP__ADAPTIVERATELIMITING__LIMITERS__BILLING__MINUNITSPERMINUTE",
                "2000000000",
            )],
        )
        .load()
        .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "adaptiveratelimiting.limiters.billing.max_units_per_minute = 1000000000 (the default): must be at least MinUnitsPerMinute (2000000000)"
        ]
    );
}

/// The variable the child process reads, and the marker that makes the child test run.
const CHILD_MARKER: &str = "PACER_CONFIG_TEST_CHILD";

#[test]
fn the_real_environment_overrides_the_file() {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "env::real_environment_child", "--nocapture"])
        .env(CHILD_MARKER, "1")
        .env(
            "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE",
            "777",
        )
        .env(
            "PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS_API__QUEUELIMIT",
            "5",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// Runs only as the child of the test above, in a process of its own.
#[test]
fn real_environment_child() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        return;
    }
    let pacer = from_config_file_with_env(sample("appsettings.json")).unwrap();
    let o = pacer.options("orders-api").unwrap();
    assert_eq!(o.max_units_per_minute, 777.0);
    assert_eq!(o.queue_limit, 5);
}
