//! The command line, end to end through `execute`.

use clap::Parser;
use pacer_sim::cli::{Cli, execute};
use pacer_sim::report::CSV_HEADER;

fn execute_args(args: &[&str]) -> Result<String, String> {
    let cli = Cli::try_parse_from(std::iter::once("pacer-sim").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    execute(&cli).map_err(|e| e.to_string())
}

#[test]
fn csv_of_chosen_modes_in_the_order_given() {
    let out = execute_args(&[
        "--minutes",
        "3",
        "--format",
        "csv",
        "--mode",
        "cubic",
        "--mode",
        "none",
    ])
    .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert!(lines[1].starts_with("noisy-neighbour,cubic,"));
    assert!(lines[2].starts_with("noisy-neighbour,none,"));
    assert_eq!(lines.len(), 3);
}

#[test]
fn the_compare_command_is_the_default() {
    let args = ["--minutes", "2", "--story", "quota-cut", "--mode", "fixed"];
    let plain = execute_args(&args).unwrap();
    let mut with_command = vec!["compare"];
    with_command.extend(args);
    assert_eq!(execute_args(&with_command).unwrap(), plain);
    assert!(plain.starts_with("quota-cut: the server cuts the quota"));
    assert!(plain.contains("| fixed |"));
}

#[test]
fn json_and_a_plot_file() {
    let dir = std::env::temp_dir().join(format!("pacer-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plot.svg");
    let out = execute_args(&[
        "--minutes",
        "2",
        "--format",
        "json",
        "--mode",
        "aimd",
        "--plot",
        path.to_str().unwrap(),
    ])
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][0]["mode"], "aimd");
    assert_eq!(v["options"]["minutes"], 2);
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("aimd · noisy-neighbour"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_default_modes_include_pacer_and_headers() {
    let out = execute_args(&["--minutes", "2", "--format", "csv"]).unwrap();
    let modes: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(
        modes,
        ["none", "fixed", "aimd", "cubic", "pacer", "headers"]
    );
}

#[test]
fn bad_settings_are_named() {
    let e = execute_args(&["--instances", "0"]).unwrap_err();
    assert!(
        e.contains("invalid value '0' for '--instances <INSTANCES>': must be from 1 to 1000"),
        "{e}"
    );
    // A negative number is the flag's value, out of range, not an unknown flag.
    let e = execute_args(&["--instances", "-1"]).unwrap_err();
    assert!(
        e.contains("invalid value '-1' for '--instances <INSTANCES>': must be from 1 to 1000"),
        "{e}"
    );
}

#[test]
fn bad_plot_path_is_refused_before_the_run() {
    // A day of every story: the refusal comes before any of it runs.
    let cli = Cli::try_parse_from([
        "pacer-sim",
        "--story",
        "all",
        "--minutes",
        "1440",
        "--plot",
        "/no-such-dir/plot.svg",
    ])
    .unwrap();
    let e = execute(&cli).unwrap_err();
    assert!(
        matches!(e, pacer_sim::SimError::Plot(_)),
        "refused before the run, not after: {e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("--plot /no-such-dir/plot.svg: cannot write the plot there"),
        "{e}"
    );
    // live: before any traffic (the target is not even asked).
    let e = execute_args(&[
        "live",
        "--target",
        "http://127.0.0.1:1",
        "--plot",
        "/no-such-dir/plot.svg",
    ])
    .unwrap_err();
    assert!(e.contains("--plot /no-such-dir/plot.svg"), "{e}");
}

#[test]
fn server_takes_each_shape_and_refuses_others_with_the_list() {
    let args = |shape: &'static str| {
        [
            "--minutes",
            "2",
            "--story",
            "free-run",
            "--format",
            "csv",
            "--mode",
            "aimd",
            "--window",
            "10",
            "--quota",
            "1000",
            "--server",
            shape,
        ]
    };
    let sliding = execute_args(&args("sliding")).unwrap();
    let default: Vec<&str> = args("sliding")[..12].to_vec();
    assert_eq!(
        execute_args(&default).unwrap(),
        sliding,
        "sliding is the default"
    );
    for shape in ["fixed", "token-bucket", "leaky-bucket", "gcra"] {
        let out = execute_args(&args(shape)).unwrap();
        assert!(
            out.lines().nth(1).unwrap().starts_with("free-run,aimd,"),
            "{shape}"
        );
        assert_ne!(out, sliding, "{shape} admits differently");
    }
    let e = execute_args(&args("redis")).unwrap_err();
    assert!(
        e.contains(
            "invalid value 'redis' for '--server <SHAPE>': unknown server shape \"redis\": \
             expected one of sliding, fixed, token-bucket, leaky-bucket, gcra"
        ),
        "{e}"
    );
}
