//! The `pacer-sim` binary: parses the command line and prints what the library computes.

use clap::Parser;
use pacer_sim::SimError;
use pacer_sim::cli::{Cli, execute};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match execute(&cli) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let SimError::PlotAfterRun { output, .. } = &e {
                print!("{output}");
            }
            eprintln!("pacer-sim: {e}");
            ExitCode::from(2)
        }
    }
}
