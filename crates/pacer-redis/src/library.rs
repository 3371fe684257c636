//! Pacer's Lua function library: its source, its name, its functions.
//!
//! The library name carries a version (`pacer_window_v1`), and so do its functions
//! (`pacer_window_v1_try`, ...). A Pacer with another version of the Lua loads its own library
//! beside the old one instead of replacing it under the feet of processes still running the old
//! code; any change to the Lua must bump the version (a test pins the source's digest to the
//! version). Loading uses `FUNCTION LOAD REPLACE`, so loading the same version twice is harmless.

/// The Lua source of the library, loaded with `FUNCTION LOAD REPLACE`.
pub const LIBRARY_SOURCE: &str = include_str!("lua/pacer_window.lua");

/// The library's name: `pacer_window_v1`. Its functions are this name followed by `_try`,
/// `_fill`, `_events`, `_eta` and `_now`.
pub const LIBRARY_NAME: &str = "pacer_window_v1";

/// The names and source of one build of the library: the real one, or the test build that reads
/// the time from an extra argument.
#[derive(Clone)]
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) source: String,
    pub(crate) try_take: String,
    pub(crate) fill: String,
    pub(crate) events: String,
    pub(crate) eta: String,
    pub(crate) now: String,
}

impl Library {
    /// The library as shipped: Redis `TIME` is the clock.
    pub(crate) fn real() -> Self {
        Library::named(LIBRARY_NAME.to_owned(), LIBRARY_SOURCE.to_owned())
    }

    /// The test build: another library name (so both can be loaded at once), and `now` read
    /// from the calls' last argument instead of `TIME`. Its keys also live 60 s longer than
    /// their events, since the caller's clock is not the one Redis expires keys by.
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn test_clock() -> Self {
        const FLAG: &str = "local TEST_CLOCK = false";
        assert!(LIBRARY_SOURCE.contains(FLAG), "the Lua lost its test flag");
        let name = format!("{LIBRARY_NAME}_testclock");
        let source = LIBRARY_SOURCE
            .replace(FLAG, "local TEST_CLOCK = true")
            .replace(LIBRARY_NAME, &name);
        Library::named(name, source)
    }

    fn named(name: String, source: String) -> Self {
        Library {
            try_take: format!("{name}_try"),
            fill: format!("{name}_fill"),
            events: format!("{name}_events"),
            eta: format!("{name}_eta"),
            now: format!("{name}_now"),
            name,
            source,
        }
    }
}

/// The Lua source of the fleet library (`pacer_fleet_v2`), loaded with `FUNCTION LOAD REPLACE`
/// by a [`RedisFleetStore`](crate::RedisFleetStore).
pub const FLEET_LIBRARY_SOURCE: &str = include_str!("lua/pacer_fleet.lua");

/// The fleet library's name: `pacer_fleet_v2` (v1 had no pool). Its functions are this name
/// followed by `_sync`, `_commit`, `_leave` and `_draw`.
pub const FLEET_LIBRARY_NAME: &str = "pacer_fleet_v2";

/// The fleet library's names and source: the real one, or the test build that reads the time
/// from an extra argument.
#[derive(Debug, Clone)]
pub(crate) struct FleetLibrary {
    pub(crate) name: String,
    pub(crate) source: String,
    pub(crate) sync: String,
    pub(crate) commit: String,
    pub(crate) leave: String,
    pub(crate) draw: String,
}

impl FleetLibrary {
    /// The library as shipped: Redis `TIME` is the clock.
    pub(crate) fn real() -> Self {
        FleetLibrary::named(
            FLEET_LIBRARY_NAME.to_owned(),
            FLEET_LIBRARY_SOURCE.to_owned(),
        )
    }

    /// The test build: another name, and `now` read from the sync's last argument.
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn test_clock() -> Self {
        const FLAG: &str = "local TEST_CLOCK = false";
        assert!(
            FLEET_LIBRARY_SOURCE.contains(FLAG),
            "the Lua lost its test flag"
        );
        let name = format!("{FLEET_LIBRARY_NAME}_testclock");
        let source = FLEET_LIBRARY_SOURCE
            .replace(FLAG, "local TEST_CLOCK = true")
            .replace(FLEET_LIBRARY_NAME, &name);
        FleetLibrary::named(name, source)
    }

    fn named(name: String, source: String) -> Self {
        FleetLibrary {
            sync: format!("{name}_sync"),
            commit: format!("{name}_commit"),
            leave: format!("{name}_leave"),
            draw: format!("{name}_draw"),
            name,
            source,
        }
    }
}

// By hand: the source is kilobytes of Lua, the name says which.
impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// The digest of the Lua source that `LIBRARY_NAME` was released with. If this test fails,
    /// the Lua changed: bump the version in `LIBRARY_NAME` and in the Lua's `#!lua name=` line
    /// and `LIB` constant, then update the digest.
    const RELEASED: (&str, &str) = (
        "pacer_window_v1",
        "c8a96b444aae66ac0c4f91a28729660350cf27a6474be35c3e2ecdb49aa54aef",
    );

    #[test]
    fn the_source_names_the_library_and_its_version() {
        assert!(LIBRARY_SOURCE.starts_with(&format!("#!lua name={LIBRARY_NAME}\n")));
        assert!(LIBRARY_SOURCE.contains(&format!("local LIB = '{LIBRARY_NAME}'")));
    }

    #[test]
    fn a_changed_lua_bumps_the_version() {
        let digest = Sha256::digest(LIBRARY_SOURCE.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            (LIBRARY_NAME, hex.as_str()),
            RELEASED,
            "the Lua changed: bump the library version"
        );
    }

    /// The fleet library's released digest, as [`RELEASED`] for the window library.
    const FLEET_RELEASED: (&str, &str) = (
        "pacer_fleet_v2",
        "d60daad04b3dfd4b11ade7d49e2238f16b25aa01c31623ab8d32b219a09b9994",
    );

    #[test]
    fn a_changed_fleet_lua_bumps_the_version() {
        assert!(FLEET_LIBRARY_SOURCE.starts_with(&format!("#!lua name={FLEET_LIBRARY_NAME}\n")));
        let digest = Sha256::digest(FLEET_LIBRARY_SOURCE.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            (FLEET_LIBRARY_NAME, hex.as_str()),
            FLEET_RELEASED,
            "the fleet Lua changed: bump the library version"
        );
        let t = FleetLibrary::test_clock();
        assert_eq!(t.sync, "pacer_fleet_v2_testclock_sync");
        assert!(t.source.contains("local TEST_CLOCK = true"));
        assert!(!t.source.contains("'pacer_fleet_v2_sync'"));
    }

    #[test]
    fn the_test_build_has_its_own_names_and_clock() {
        let t = Library::test_clock();
        assert_eq!(t.name, "pacer_window_v1_testclock");
        assert_eq!(t.try_take, "pacer_window_v1_testclock_try");
        assert!(
            t.source
                .starts_with("#!lua name=pacer_window_v1_testclock\n")
        );
        assert!(t.source.contains("local TEST_CLOCK = true"));
        assert!(!t.source.contains("'pacer_window_v1'"));
        let r = Library::real();
        assert_eq!(r.now, "pacer_window_v1_now");
        assert!(r.source.contains("local TEST_CLOCK = false"));
    }
}
