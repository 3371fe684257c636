//! The benchmarks' flags: `--name value` pairs, each read once with its type; the benches take
//! a handful of numbers, not worth a parser of their own.

use std::collections::HashMap;
use std::str::FromStr;

/// The command line's `--name value` pairs.
pub(crate) struct Flags(HashMap<String, String>);

impl Flags {
    /// Reads the process's arguments: every flag must have a value.
    pub(crate) fn parse() -> Result<Self, String> {
        let mut map = HashMap::new();
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
            let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
            map.insert(name.to_owned(), value);
        }
        Ok(Flags(map))
    }

    /// `--name`'s value, or `default` (`None`: the flag is required).
    pub(crate) fn get<T: FromStr>(&mut self, name: &str, default: Option<T>) -> Result<T, String> {
        match self.0.remove(name) {
            Some(v) => v.parse().map_err(|_| format!("--{name}: bad value {v:?}")),
            None => default.ok_or_else(|| format!("--{name} is required")),
        }
    }

    /// An error for the first flag no one read.
    pub(crate) fn finish(self) -> Result<(), String> {
        match self.0.keys().next() {
            Some(name) => Err(format!("unknown flag --{name}")),
            None => Ok(()),
        }
    }
}
