use super::*;
use crate::SimOptions;
use crate::metrics::Series;

fn row(mode: &str, recovery: Recovery) -> Row {
    Row {
        story: "noisy-neighbour".to_owned(),
        mode: mode.to_owned(),
        metrics: RunMetrics {
            throughput: 2625.04,
            share: 0.905_17,
            throttled: 56,
            rejected: 11_278,
            gave_up: 0,
            p95_wait_s: 44.04,
            recovery_s: recovery.seconds(),
            recovery: recovery.as_str(),
            mean_quota: 2900.0,
            requests: 33_000,
            succeeded: 21_000,
            accepted_units: 39_375,
            attempts: 21_056,
            unfinished: 722,
            evenness: Some(0.912_34),
            identified: None,
            identified_by_fifth: None,
        },
        series: Series::default(),
    }
}

fn comparison() -> Comparison {
    Comparison {
        options: SimOptions::default(),
        rows: vec![
            row("aimd", Recovery::After(8)),
            row("x", Recovery::Never),
            row("y", Recovery::NoDrop),
        ],
    }
}

#[test]
fn thousands_separates_by_three() {
    for (n, s) in [(0, "0"), (999, "999"), (1000, "1,000"), (64_931, "64,931")] {
        assert_eq!(thousands(n), s);
    }
    assert_eq!(thousands(1_234_567), "1,234,567");
}

#[test]
fn csv_has_the_issue_s_columns_in_order() {
    let mut c = comparison();
    c.rows[0].metrics.identified = Some(Identified {
        kind: "fixed",
        limit: 2_912.0,
        window_s: 60.0,
        confidence: 0.8,
    });
    assert_eq!(
        csv(&c),
        format!(
            "{CSV_HEADER}\n\
             noisy-neighbour,aimd,2625.0,0.9052,56,11278,0,44.0,8,\
             sliding,3000.0,60,fixed,2912.0,60,0.800,,,\n\
             noisy-neighbour,x,2625.0,0.9052,56,11278,0,44.0,never,sliding,3000.0,60,,,,,,,\n\
             noisy-neighbour,y,2625.0,0.9052,56,11278,0,44.0,,sliding,3000.0,60,,,,,,,\n"
        )
    );
    assert!(CSV_HEADER.starts_with(
        "story,mode,throughput,share,throttled,rejected,gave_up,p95_wait_s,recovery_s,"
    ));
    let t = table(&c);
    assert!(
        t.contains("The server's limiter: sliding, 3,000 per 60 s.")
            && t.contains("- aimd: fixed, 2,912 per 60.0 s (confidence 0.80)"),
        "{t}"
    );
}

#[test]
fn the_table_looks_like_the_dotnet_limiter_s() {
    let t = table(&comparison());
    assert!(t.starts_with("noisy-neighbour: another client takes half"));
    assert!(
        t.contains(
            "| Mode | Throughput | Share | 429s | Rejected | Gave up | p95 wait | Recovery |"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "| aimd |      2,625 |   91% |   56 |   11,278 |       0 |   44.0 s |      8 s |"
        ),
        "{t}"
    );
    assert!(t.contains("never |"));
    assert!(t.contains("–"));
}

#[test]
fn json_carries_the_settings_and_rounded_rows() {
    let v: serde_json::Value = serde_json::from_str(&json(&comparison())).unwrap();
    assert_eq!(v["options"]["quota"], 3000);
    assert_eq!(v["options"]["queue_limit"], 500);
    assert_eq!(v["options"]["window_s"], 60);
    assert_eq!(v["options"]["forward"], 0.0);
    assert_eq!(v["options"]["phase_s"], 0.0);
    assert_eq!(v["options"]["sends_retry_after"], true);
    assert_eq!(v["rows"][0]["share"], 0.9052);
    assert_eq!(v["rows"][0]["evenness"], 0.912);
    assert_eq!(v["rows"][0]["recovery_s"], 8);
    assert_eq!(v["rows"][1]["recovery"], "never");
    assert!(v["rows"][2]["recovery_s"].is_null());
}

#[test]
fn an_unknown_share_and_quota_are_said_so() {
    let mut c = comparison();
    c.options.quota = 0;
    c.rows.truncate(1);
    c.rows[0].metrics.share = f64::NAN;
    let t = table(&c);
    assert!(t.contains("quota unknown, 2 instances"), "{t}");
    assert!(t.contains("|   n/a |"), "{t}");
    assert!(csv(&c).contains(",2625.0,,56,"));
    let v: serde_json::Value = serde_json::from_str(&json(&c)).unwrap();
    assert!(v["rows"][0]["share"].is_null());
}

fn traced() -> Comparison {
    let mut c = comparison();
    c.rows.truncate(2);
    c.rows[1].story = "quota-cut".to_owned();
    let series = &mut c.rows[0].series;
    *series = Series::new(70);
    for s in 0..70 {
        series.accepted[s] = 10 + s as u64;
        series.quota[s] = 3000.0;
        series.rate[s] = Some(2400.0 + s as f64);
    }
    series.throttled[65] = 2;
    c
}

#[test]
fn the_trace_sums_the_window_and_keeps_to_its_story_and_seconds() {
    let t = trace(&traced(), "noisy-neighbour", 60..=200);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines.len(),
        1 + 10 + 1,
        "header, seconds 60–69 (the run's end), summary\n{t}"
    );
    assert!(
        lines[0].contains("aimd") && !lines[0].contains(" x "),
        "{t}"
    );
    // Second 60: its own 70 units and those of seconds 1–59, 11 to 69.
    let window: u64 = (1..=60).map(|s| 10 + s).sum();
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["60", "3000", "|", "2460", "70", &window.to_string(), "0"],
        "{t}"
    );
    assert!(lines[6].ends_with(" 2"), "the 429s of second 65: {t}");
    assert_eq!(
        lines[11],
        "aimd: share 0.9052, 429s 56, rejected 11278, recovery 8 s"
    );
    assert_eq!(trace(&traced(), "free-run", 0..=10), "");
}

#[test]
fn a_trace_of_a_mode_without_a_limiter_shows_no_rate() {
    let mut c = traced();
    c.rows[0].series.rate[3] = None;
    let t = trace(&c, "noisy-neighbour", 3..=3);
    assert_eq!(
        t.lines().nth(1).unwrap().split_whitespace().nth(3),
        Some("-"),
        "{t}"
    );
}

#[test]
fn formats_parse() {
    assert_eq!("csv".parse::<Format>(), Ok(Format::Csv));
    assert!("xml".parse::<Format>().is_err());
}
