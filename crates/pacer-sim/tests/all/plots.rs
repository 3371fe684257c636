//! The plots in the docs are what the simulator draws now: each is redrawn with the command
//! the docs give for it and compared with the file, byte for byte. A change that moves a plotted
//! run fails here until the plot is redrawn (the command is in the failure).

use clap::Parser;
use pacer_sim::cli::{Cli, execute};
use std::path::{Path, PathBuf};

/// Each plot in `docs/img`, and the arguments of `pacer-sim` that draw it (as the docs give them).
const PLOTS: [(&str, &str); 8] = [
    ("noisy-neighbour.svg", ""),
    (
        "controllers-noisy-neighbour.svg",
        "--mode aimd --mode cubic --mode pacer --mode headers",
    ),
    (
        "controllers-quota-cut.svg",
        "--story quota-cut --mode aimd --mode pacer --mode headers",
    ),
    (
        "shape-leaky-bucket-10s.svg",
        "--story free-run --window 10 --server leaky-bucket --instances 2 --mode aimd --mode pacer --mode headers",
    ),
    (
        "shape-fixed-10s.svg",
        "--story free-run --window 10 --server fixed --instances 2 --mode aimd --mode pacer --mode headers",
    ),
    (
        "shape-sliding-1s.svg",
        "--story free-run --window 1 --server sliding --instances 2 --mode aimd --mode pacer --mode headers",
    ),
    (
        "fleet-noisy-neighbour.svg",
        "--story noisy-neighbour --instances 32 --demand 125 --mode pacer --mode fleet",
    ),
    (
        "fleet-autoscale.svg",
        "--story autoscale --instances 8 --demand 500 --mode pacer --mode fleet",
    ),
];

fn docs_img() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/img")
}

#[test]
fn every_plot_in_the_docs_is_listed_here() {
    let mut files: Vec<String> = std::fs::read_dir(docs_img())
        .expect("docs/img")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".svg"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = PLOTS.iter().map(|(f, _)| (*f).to_owned()).collect();
    listed.sort();
    assert_eq!(files, listed);
}

#[test]
fn the_plots_in_the_docs_are_what_the_simulator_draws_now() {
    let dir = std::env::temp_dir().join(format!("pacer-sim-plots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut stale = Vec::new();
    for (file, args) in PLOTS {
        let drawn = dir.join(file);
        let argv = std::iter::once("pacer-sim")
            .chain(args.split_whitespace())
            .chain(["--plot", drawn.to_str().expect("a UTF-8 path")]);
        let cli = Cli::try_parse_from(argv).expect("the docs' arguments parse");
        execute(&cli).expect("runs");
        let drawn = std::fs::read(&drawn).expect("drawn");
        let documented = std::fs::read(docs_img().join(file)).expect("in docs/img");
        if drawn != documented {
            stale.push(format!(
                "docs/img/{file}: cargo run --release -p pacer-sim -- {args} --plot docs/img/{file}"
            ));
        }
    }
    std::fs::remove_dir_all(&dir).expect("removed");
    assert!(stale.is_empty(), "plots to redraw:\n{}", stale.join("\n"));
}
