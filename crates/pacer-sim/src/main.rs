//! The `pacer-sim` binary: parses the command line and prints what the library computes.

use clap::Parser;
use pacer_sim::SimError;
use pacer_sim::cli::{Cli, execute};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `PACER_SIM_LOG=info` (or debug, trace, warn, error): the middleware's tracing events
    // (each rate change, each pause) on standard error, for `live` and `serve`.
    if let Some(level) = std::env::var_os("PACER_SIM_LOG") {
        let Some(level) = level
            .to_str()
            .and_then(|l| l.parse::<tracing::Level>().ok())
        else {
            eprintln!(
                "pacer-sim: PACER_SIM_LOG = {level:?}: expected a level (error, warn, info, debug or trace)"
            );
            return ExitCode::from(2);
        };
        tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stderr)
            .init();
    }
    match execute(&cli) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let SimError::PlotAfterRun { output, .. } | SimError::FailedRun { output, .. } = &e {
                print!("{output}");
            }
            eprintln!("pacer-sim: {e}");
            ExitCode::from(2)
        }
    }
}
