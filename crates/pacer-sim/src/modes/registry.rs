//! Modes by name.

use super::{FleetMode, HeadersMode, LimiterMode, Mode, ModeError, NoLimiter};
use pacer_core::ControllerKind;

/// Every mode name the command line knows, in table order.
pub const MODE_NAMES: [&str; 12] = [
    "none",
    "fixed",
    "aimd",
    "cubic",
    "pacer",
    "headers",
    "default",
    "aimd-600",
    "pacer-buckets",
    "fleet",
    "fleet-default",
    "graphql",
];

/// The mode with this name (case-insensitive).
pub fn mode_by_name(name: &str) -> Result<Box<dyn Mode>, ModeError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "none" => Ok(Box::new(NoLimiter)),
        "fixed" => Ok(Box::new(LimiterMode::fixed())),
        "aimd" => Ok(Box::new(LimiterMode::builtin(ControllerKind::Aimd))),
        "cubic" => Ok(Box::new(LimiterMode::builtin(ControllerKind::Cubic))),
        "pacer" => Ok(Box::new(LimiterMode::builtin(ControllerKind::Pacer))),
        "headers" => Ok(Box::new(HeadersMode::default())),
        "default" => Ok(Box::new(LimiterMode::library_defaults())),
        "aimd-600" => Ok(Box::new(LimiterMode::aimd_600())),
        "pacer-buckets" => Ok(Box::new(LimiterMode::pacer_buckets())),
        "fleet" => Ok(Box::new(FleetMode::default())),
        "fleet-default" => Ok(Box::new(FleetMode::library_defaults())),
        "graphql" => Ok(Box::new(HeadersMode::graphql())),
        _ => Err(ModeError::Unknown {
            name: name.to_owned(),
        }),
    }
}

/// The modes that compare the library's defaults (`default`) with its defaults before the
/// unlimited start (`aimd-600`): named on the command line, or run by the sweep.
pub const LIBRARY_DEFAULT_MODES: [&str; 2] = ["default", "aimd-600"];

/// The modes a comparison runs only when named: the library's defaults, `pacer-buckets` (the
/// Pacer controller with the profile for buckets; `docs/controllers.md`), `fleet` and
/// `fleet-default` (the instances sharing one controller through a store, with the run's
/// options or the library's defaults; `docs/fleet.md`) and `graphql` (the API's numbers in a
/// GraphQL cost body; `docs/headers.md`).
pub const NAMED_ONLY_MODES: [&str; 6] = [
    "default",
    "aimd-600",
    "pacer-buckets",
    "fleet",
    "fleet-default",
    "graphql",
];

/// The modes a comparison runs when none is named: every mode that is available, but those of
/// [`NAMED_ONLY_MODES`].
#[must_use]
pub fn default_modes() -> Vec<Box<dyn Mode>> {
    MODE_NAMES
        .iter()
        .filter(|n| !NAMED_ONLY_MODES.contains(n))
        .filter_map(|n| mode_by_name(n).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_and_every_mode_runs_by_default() {
        for name in [
            "none",
            "fixed",
            "aimd",
            "CUBIC",
            "Pacer",
            "headers",
            "default",
            "AIMD-600",
            "Pacer-Buckets",
            "Fleet",
            "Fleet-Default",
            "GraphQL",
        ] {
            assert_eq!(
                mode_by_name(name).unwrap().name(),
                name.to_ascii_lowercase()
            );
        }
        assert!(mode_by_name("headers").unwrap().wants_headers());
        assert!(mode_by_name("graphql").unwrap().wants_headers());
        assert!(!mode_by_name("pacer").unwrap().wants_headers());
        assert_eq!(
            mode_by_name("vegas").unwrap_err().to_string(),
            "unknown mode \"vegas\": expected one of none, fixed, aimd, cubic, pacer, headers, default, aimd-600, pacer-buckets, fleet, fleet-default, graphql"
        );
        let names: Vec<_> = default_modes()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(names, MODE_NAMES[..6]);
    }
}
