//! The `pacer-sim` binary (the command line comes in a later commit).

fn main() {}
