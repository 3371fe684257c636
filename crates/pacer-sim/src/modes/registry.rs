//! Modes by name: the built-in ones, and the ones still to come.

use super::{LimiterMode, Mode, ModeError, NoLimiter};
use pacer_core::ControllerKind;

/// Every mode name the command line knows, in table order. `headers` is planned: asking for it
/// gives [`ModeError::NotYetAvailable`].
pub const MODE_NAMES: [&str; 5] = ["none", "fixed", "aimd", "cubic", "headers"];

/// The mode with this name (case-insensitive).
pub fn mode_by_name(name: &str) -> Result<Box<dyn Mode>, ModeError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "none" => Ok(Box::new(NoLimiter)),
        "fixed" => Ok(Box::new(LimiterMode::fixed())),
        "aimd" => Ok(Box::new(LimiterMode::builtin(ControllerKind::Aimd))),
        "cubic" => Ok(Box::new(LimiterMode::builtin(ControllerKind::Cubic))),
        "headers" => Err(ModeError::NotYetAvailable {
            name: "headers".to_owned(),
            needs: "Pacer's header parser and proactive throttling wired into a simulator \
                    client (the model API already sends the draft-11 fields)"
                .to_owned(),
        }),
        _ => Err(ModeError::Unknown {
            name: name.to_owned(),
        }),
    }
}

/// The modes a comparison runs when none is named: every mode that is available.
#[must_use]
pub fn default_modes() -> Vec<Box<dyn Mode>> {
    MODE_NAMES
        .iter()
        .filter_map(|n| mode_by_name(n).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_and_headers_is_not_faked() {
        for name in ["none", "fixed", "aimd", "CUBIC"] {
            assert_eq!(
                mode_by_name(name).unwrap().name(),
                name.to_ascii_lowercase()
            );
        }
        let e = mode_by_name("headers").unwrap_err();
        assert!(matches!(e, ModeError::NotYetAvailable { .. }));
        assert!(e.to_string().contains("not yet available"));
        assert_eq!(
            mode_by_name("vegas").unwrap_err().to_string(),
            "unknown mode \"vegas\": expected one of none, fixed, aimd, cubic, headers"
        );
        let names: Vec<_> = default_modes()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(names, ["none", "fixed", "aimd", "cubic"]);
    }
}
