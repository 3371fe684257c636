//! pacer-config's integration tests: one binary, one module per concern.

mod env;
mod properties;
mod reload;
mod samples;
mod support;
mod validation;
mod windows;
