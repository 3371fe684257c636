//! Bad input, second round: each case is a clear error naming the key and the rule, or does
//! what it says (docs/RELIABILITY.md, "Bad input").

use crate::support::*;
use pacer_config::ProblemKind;

const P: &str = "AdaptiveRateLimiting.Limiters.x.";

fn one_limiter(body: &str) -> String {
    format!(r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "x": {body} }} }} }}"#)
}

#[test]
fn a_json_file_with_a_byte_order_mark_loads_as_dotnet_reads_it() {
    let text = format!("\u{feff}{}", one_limiter(r#"{ "MaxUnitsPerMinute": 900 }"#));
    let s = json(&text).unwrap();
    assert_eq!(s.limiter("x").unwrap().options.max_units_per_minute, 900.0);
    let toml_text = "\u{feff}[adaptive_rate_limiting.limiters.x]\nmax_units_per_minute = 900\n";
    assert_eq!(
        toml(toml_text)
            .unwrap()
            .limiter("x")
            .unwrap()
            .options
            .max_units_per_minute,
        900.0
    );
}

#[test]
fn numbers_json_cannot_write_name_their_key_and_say_what_to_write() {
    for (value, at, hint) in [
        (
            "NaN",
            "MaxUnitsPerMinute",
            "JSON has no NaN or Infinity; write a number",
        ),
        (
            "Infinity",
            "MaxUnitsPerMinute",
            "JSON has no NaN or Infinity; write a number",
        ),
        (
            "-Infinity",
            "MaxUnitsPerMinute",
            "JSON has no NaN or Infinity; write a number",
        ),
        (
            "1e309",
            "MaxUnitsPerMinute",
            "the number is past the largest a float holds (about 1.8e308)",
        ),
    ] {
        let text = one_limiter(&format!(
            r#"{{ "MaxWait": "00:00:05", "MaxUnitsPerMinute": {value} }}"#
        ));
        let e = json(&text).unwrap_err().to_string();
        assert!(e.contains(&format!("(at {P}{at})")), "{value}: {e}");
        assert!(e.ends_with(hint), "{value}: {e}");
    }
    // Inside a list too, with the item's index.
    let text = one_limiter(r#"{ "Windows": [ { "Limit": 5, "Per": "1s" }, { "Limit": NaN } ] }"#);
    let e = json(&text).unwrap_err().to_string();
    assert!(e.contains(&format!("(at {P}Windows[1].Limit)")), "{e}");
}

#[test]
fn a_fleet_s_rule_between_two_options_names_the_one_left_at_its_default() {
    let text =
        one_limiter(r#"{ "Fleet": { "Store": "redis://127.0.0.1:6379", "Period": "00:00:10" } }"#);
    let e = json(&text).unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}Fleet.Lease = 3s (the default): must be at least twice Period (10s)"
        )]
    );
}

#[test]
fn absurd_fleet_options_are_refused_not_ignored() {
    for (option, value, message) in [
        (
            "Period",
            "00:00:00.0000001",
            "must be at least 50ms: a member syncs no more often (a shorter period spends the store's time on syncs)",
        ),
        (
            "Lease",
            "10000000.00:00:00",
            "must be at most 3600s: a member that stopped holds its share from the others until its lease ends",
        ),
        (
            "FallbackAfter",
            "2.00:00:00",
            "must be at most 3600s: a member cut off from the store that long runs on a share the others no longer know",
        ),
        (
            "Timeout",
            "00:00:05",
            "must be at most Lease (3s): a member waiting longer on one call has lost its place in the fleet",
        ),
    ] {
        let text = one_limiter(&format!(
            r#"{{ "Fleet": {{ "Store": "redis://127.0.0.1:6379", "{option}": "{value}" }} }}"#
        ));
        let e = json(&text).unwrap_err();
        assert_eq!(
            lines(&e),
            [format!("{P}Fleet.{option} = \"{value}\": {message}")],
            "{option}"
        );
    }
}

#[test]
fn a_controller_s_table_beside_another_controller_is_a_warning() {
    let text = one_limiter(r#"{ "Controller": "Cubic", "Aimd": { "IncreaseStep": 60 } }"#);
    let s = json(&text).unwrap();
    let x = s.limiter("x").unwrap();
    assert_eq!(x.warnings.len(), 1);
    let w = &x.warnings[0];
    assert_eq!(w.kind, ProblemKind::Ignored);
    assert_eq!(
        w.to_string(),
        format!(
            "{P}Aimd: ignored: the limiter runs the Cubic controller (`Controller`), this table applies to Aimd only"
        )
    );
    // The selected controller's own table, or a table of defaults, says nothing.
    let quiet = one_limiter(
        r#"{ "Controller": "Aimd", "Aimd": { "IncreaseStep": 60 }, "Cubic": { "Beta": 0.7 } }"#,
    );
    assert!(
        json(&quiet)
            .unwrap()
            .limiter("x")
            .unwrap()
            .warnings
            .is_empty()
    );
}

#[test]
fn a_window_whose_frames_would_be_shorter_than_a_microsecond_is_refused() {
    let text = one_limiter(
        r#"{ "Windows": [ { "Limit": 5, "Per": "00:00:00.0000005", "Frames": 10 } ] }"#,
    );
    let e = json(&text).unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}Windows[0]: Per (500ns) cut into 10 Frames makes frames shorter than 1 µs, the shortest a window counts: it would be counted over 10µs; use at most 1 frames or a longer Per"
        )]
    );
}

#[cfg(feature = "redis")]
#[test]
fn a_redis_url_that_cannot_be_used_says_why() {
    let text = one_limiter(r#"{ "Fleet": { "Store": "redis://:pw@[::1" } }"#);
    let e = json(&text).unwrap_err().to_string();
    assert!(
        e.contains("Fleet.Store: not a valid Redis URL: Redis URL did not parse"),
        "{e}"
    );
    assert!(!e.contains(":pw@"), "the password is never repeated: {e}");
}
