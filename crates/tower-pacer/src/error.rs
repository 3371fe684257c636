//! Why a layer cannot be made from a configuration.

/// A layer cannot be made from a limiter's settings ([`PacerLayer::from_settings`]).
///
/// [`PacerLayer::from_settings`]: crate::PacerLayer::from_settings
#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A strict window cannot be built: refused rather than left out.
    #[error("the window {name:?} cannot be built: {message}")]
    Window {
        /// The window's name.
        name: String,
        /// Why.
        message: String,
    },
    /// The settings are invalid.
    #[error(transparent)]
    Config(#[from] pacer_config::ConfigError),
}
