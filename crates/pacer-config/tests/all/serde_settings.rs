//! Pacer's settings as a field of an application's own configuration struct, loaded by
//! config-rs: the same limiters as Pacer's own loader gives on the same content, and the same
//! errors with the key path.

use crate::support::*;
use pacer_config::{ConfigLoader, LimiterSettings, PacerSettings};
use std::path::Path;

#[derive(Debug, serde::Deserialize)]
struct AppConfig {
    database_url: String,
    pacer: PacerSettings,
}

/// The application's configuration from one file, through config-rs.
fn load(path: &Path) -> Result<AppConfig, config::ConfigError> {
    config::Config::builder()
        .add_source(config::File::from(path))
        .build()?
        .try_deserialize()
}

/// A sample's text with its Pacer section renamed to `pacer`, beside the application's own key,
/// written to a temporary file.
fn app_file(dir: &Path, sample_name: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(sample(sample_name)).unwrap();
    let text = if sample_name.ends_with(".json") {
        let text = text.replacen("\"AdaptiveRateLimiting\"", "\"pacer\"", 1);
        text.replacen('{', "{ \"database_url\": \"postgres://db/app\",", 1)
    } else {
        let text = text.replace("[adaptive_rate_limiting", "[pacer");
        format!("database_url = \"postgres://db/app\"\n{text}")
    };
    let path = dir.join(format!("app-{sample_name}"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_app_config_with_pacer_settings_loads_from_toml_and_json_as_pacer_loads_them() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["pacer.toml", "appsettings.json"] {
        let app = load(&app_file(dir.path(), name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let own = ConfigLoader::new().file(sample(name)).load().unwrap();
        assert_eq!(app.database_url, "postgres://db/app");
        assert_eq!(app.pacer, own, "{name}");
        assert_eq!(
            app.pacer.names().collect::<Vec<_>>(),
            ["orders-api", "search-api"]
        );
        assert_eq!(app.pacer.default_limiter(), "orders-api");
        // What the middleware gets is the same too.
        for ((a, x), (b, y)) in app.pacer.limiters().zip(own.limiters()) {
            assert_eq!(a, b);
            assert_eq!(
                format!("{:?}", x.to_limiter_config()),
                format!("{:?}", y.to_limiter_config())
            );
        }
        app.pacer.build().unwrap();
    }
}

#[test]
fn a_bad_value_inside_the_field_names_its_key_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad.toml",
            "database_url = \"x\"\n[pacer.limiters.orders-api]\nmax_wait = \"soon\"\nmax_unitz_per_minute = 5\n",
            [
                "limiters.orders-api.max_wait = \"soon\": expected a duration",
                "limiters.orders-api.max_unitz_per_minute: unknown key; did you mean max_units_per_minute?",
            ],
        ),
        (
            "bad.json",
            r#"{ "database_url": "x", "pacer": { "Limiters": { "orders-api": {
                "MaxWait": "soon", "MaxUnitzPerMinute": 5 } } } }"#,
            [
                "Limiters.orders-api.MaxWait = \"soon\": expected a duration",
                "Limiters.orders-api.MaxUnitzPerMinute: unknown key; did you mean MaxUnitsPerMinute?",
            ],
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = load(&path).unwrap_err().to_string();
        for line in expected {
            assert!(err.contains(line), "{name}: {line:?} not in {err}");
        }
        // One problem a line, as Pacer's loader reports them; config-rs adds the field's key.
        assert_eq!(err.lines().count(), 2, "{name}: {err}");
        assert!(err.ends_with(" for key `pacer`"), "{name}: {err}");
    }
}

#[test]
fn one_limiter_as_a_field_reads_both_spellings() {
    #[derive(serde::Deserialize)]
    struct Client {
        limiter: LimiterSettings,
    }
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("client.toml");
    std::fs::write(
        &toml,
        "[limiter]\nmax_units_per_minute = 1200\nmax_wait = \"30s\"\n",
    )
    .unwrap();
    let json = dir.path().join("client.json");
    std::fs::write(
        &json,
        r#"{ "limiter": { "MaxUnitsPerMinute": 1200, "MaxWait": "00:00:30" } }"#,
    )
    .unwrap();
    let read = |path: &Path| -> LimiterSettings {
        config::Config::builder()
            .add_source(config::File::from(path))
            .build()
            .unwrap()
            .try_deserialize::<Client>()
            .unwrap()
            .limiter
    };
    assert_eq!(read(&toml), read(&json));
    assert_eq!(
        read(&toml).options.max_wait,
        std::time::Duration::from_secs(30)
    );
}
