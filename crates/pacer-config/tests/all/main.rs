//! pacer-config's integration tests: one binary, one module per concern.

mod bad_input;
mod bad_input_two;
mod dialects;
mod env;
mod fleet;
mod properties;
mod reload;
mod samples;
mod serde_settings;
mod support;
mod validation;
mod windows;
