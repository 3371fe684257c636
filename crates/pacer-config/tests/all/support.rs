//! Helpers shared by the tests.

use pacer_config::{ConfigError, ConfigLoader, Format, PacerSettings};
use std::path::PathBuf;

/// A sample file under the repository's `config/`.
pub(crate) fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config")
        .join(name)
}

/// Loads JSON text.
pub(crate) fn json(text: &str) -> Result<PacerSettings, ConfigError> {
    ConfigLoader::new().string(text, Format::Json).load()
}

/// Loads TOML text.
pub(crate) fn toml(text: &str) -> Result<PacerSettings, ConfigError> {
    ConfigLoader::new().string(text, Format::Toml).load()
}

/// The error's lines.
pub(crate) fn lines(e: &ConfigError) -> Vec<String> {
    e.to_string().lines().map(str::to_owned).collect()
}
