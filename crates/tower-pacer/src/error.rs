//! Why a layer cannot be made from a configuration.

/// A layer cannot be made from a limiter's settings ([`PacerLayer::from_settings`]).
///
/// [`PacerLayer::from_settings`]: crate::PacerLayer::from_settings
#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The limiter has strict windows, which the layer does not have yet: refused rather than
    /// left out.
    #[error("tower-pacer has no strict windows yet; the limiter configures {0:?}")]
    Windows(Vec<String>),
    /// The settings are invalid.
    #[error(transparent)]
    Config(#[from] pacer_config::ConfigError),
}
