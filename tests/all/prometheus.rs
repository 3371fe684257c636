//! The `prometheus` example's exporter: what it serves on `/metrics` after a few requests through
//! the middleware is Prometheus text format, checked line by line by a strict parser, with
//! Pacer's series labelled by limiter. The recorder is this test's thread's own (the test runs
//! on a current-thread runtime), never the global one.

#[path = "../../examples/support/demo_api.rs"]
mod demo_api;
#[path = "../../examples/support/prometheus_exporter.rs"]
mod prometheus_exporter;

use pacer::{LimiterConfig, LimiterOptions, PacerErrorExt, PacerMiddleware};
use reqwest_middleware::ClientBuilder;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the Prometheus text exposition format (version 0.0.4) strictly: `# HELP` and
/// `# TYPE` lines, samples with optional labels and timestamp; a family's `# TYPE` comes once,
/// before its samples, which stand together; a histogram's samples are `_bucket` (with `le`),
/// `_sum` and `_count`, a summary's the name (with `quantile`), `_sum` and `_count`.
fn parse(text: &str) -> Result<(HashMap<String, String>, Vec<Sample>), String> {
    let mut types: HashMap<String, String> = HashMap::new();
    let mut samples = Vec::new();
    let mut done: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the text does not end with a newline".into());
    }
    for (n, line) in text.lines().enumerate() {
        let err = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.trim_start().splitn(3, ' ');
            match words.next() {
                Some("HELP") => {
                    let name = words.next().ok_or_else(|| err("HELP without a name"))?;
                    metric_name(name).map_err(|e| err(&e))?;
                }
                Some("TYPE") => {
                    let name = words.next().ok_or_else(|| err("TYPE without a name"))?;
                    metric_name(name).map_err(|e| err(&e))?;
                    let kind = words.next().ok_or_else(|| err("TYPE without a type"))?;
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(err("unknown type"));
                    }
                    if types.insert(name.to_owned(), kind.to_owned()).is_some() {
                        return Err(err("a second TYPE for the family"));
                    }
                    if done.iter().any(|d| d == name) || current.as_deref() == Some(name) {
                        return Err(err("TYPE after the family's samples"));
                    }
                }
                _ => {} // another comment
            }
            continue;
        }
        let sample = sample(line).map_err(|e| err(&e))?;
        let family = family(&types, &sample.name);
        if let Some(kind) = types.get(&family) {
            let suffix = &sample.name[family.len()..];
            let fits = match kind.as_str() {
                "histogram" => match suffix {
                    "_bucket" => sample.label("le").is_some(),
                    "_sum" | "_count" => true,
                    _ => false,
                },
                "summary" => match suffix {
                    "" => sample.label("quantile").is_some(),
                    "_sum" | "_count" => true,
                    _ => false,
                },
                _ => suffix.is_empty(),
            };
            if !fits {
                return Err(err(&format!("not a sample of the {kind} {family}")));
            }
        }
        if current.as_deref() != Some(family.as_str()) {
            if done.contains(&family) {
                return Err(err("the family's samples do not stand together"));
            }
            if let Some(previous) = current.replace(family) {
                done.push(previous);
            }
        }
        samples.push(sample);
    }
    Ok((types, samples))
}

/// The family of a sample name: the name itself, or without `_bucket`, `_sum` or `_count` when
/// that is a histogram or summary.
fn family(types: &HashMap<String, String>, name: &str) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && matches!(
                types.get(base).map(String::as_str),
                Some("histogram" | "summary")
            )
        {
            return base.to_owned();
        }
    }
    name.to_owned()
}

fn metric_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first = chars.next().ok_or("an empty name")?;
    if (first.is_ascii_alphabetic() || first == '_' || first == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        Ok(())
    } else {
        Err(format!("not a metric name: {name:?}"))
    }
}

fn sample(line: &str) -> Result<Sample, String> {
    let end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..end];
    metric_name(name)?;
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = rest.find('=').ok_or("a label without '='")?;
            let label = &rest[..eq];
            let mut chars = label.chars();
            if !chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(format!("not a label name: {label:?}"));
            }
            rest = rest[eq + 1..]
                .strip_prefix('"')
                .ok_or("a label value without quotes")?;
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next().ok_or("an unclosed label value")? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().ok_or("a lone backslash")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        c => return Err(format!("an unknown escape \\{c}")),
                    },
                    (_, c) => value.push(c),
                }
            };
            if labels.iter().any(|(l, _): &(String, String)| l == label) {
                return Err(format!("label {label} twice"));
            }
            labels.push((label.to_owned(), value));
            rest = &rest[close + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let mut parts = rest.split(' ');
    let value = parts.next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("not a value: {v:?}"))?,
    };
    if let Some(ts) = parts.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("not a timestamp: {ts:?}"))?;
    }
    if parts.next().is_some() {
        return Err("more after the timestamp".into());
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

#[test]
fn the_parser_refuses_what_is_not_the_text_format() {
    let good = "# HELP a_total What.\n# TYPE a_total counter\na_total{limiter=\"x\\\"y\"} 3\n\
                # TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1 1700000000\n";
    let (types, samples) = parse(good).unwrap();
    assert_eq!(types["h"], "histogram");
    assert_eq!(samples.len(), 4);
    assert_eq!(samples[0].label("limiter"), Some("x\"y"));
    for bad in [
        "a 1",
        "1a 1\n",
        "a{l=x} 1\n",
        "a{l=\"x} 1\n",
        "a{l=\"x\",l=\"y\"} 1\n",
        "a one\n",
        "a 1 2 3\n",
        "a  1\n",
        "# TYPE a countr\na 1\n",
        "# TYPE a counter\n# TYPE a counter\na 1\n",
        "a 1\n# TYPE a counter\n",
        "# TYPE h histogram\nh_bucket 1\n",
        "# TYPE s summary\ns 1\n",
        "a 1\nb 1\na 2\n",
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}

/// A loopback port free a moment ago.
fn free_port() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap()
}

#[tokio::test]
async fn the_exporter_serves_pacer_s_metrics_in_the_text_format() {
    // The port was free a moment ago; another test may take it meanwhile, so try a few.
    let (addr, (recorder, exporter)) = (0..5)
        .find_map(|_| {
            let addr = free_port();
            let built = prometheus_exporter::builder(addr).ok()?.build().ok()?;
            Some((addr, built))
        })
        .expect("a free loopback port");
    tokio::spawn(exporter);
    let _recording = metrics::set_default_local_recorder(&recorder);

    // Three requests a minute: the fourth gets a 429 with a Retry-After far beyond MaxWait,
    // so the ones after it are refused.
    let api = demo_api::start(3, Duration::from_secs(60), false).await;
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(600.0);
    options.max_wait = Duration::from_secs(1);
    let pacer = PacerMiddleware::builder()
        .limiter(
            "orders",
            LimiterConfig::new(options).max_attempts(std::num::NonZeroU32::MIN),
        )
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();
    let mut statuses = Vec::new();
    for _ in 0..6 {
        match client.get(format!("{}/orders", api.url)).send().await {
            Ok(r) => statuses.push(r.status().as_u16()),
            Err(e) if e.is_rejected() => statuses.push(0),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(statuses, [200, 200, 200, 429, 0, 0], "0: refused");

    let response = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let (types, samples) = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for (name, kind) in [
        ("pacer_units_total", "counter"),
        ("pacer_throttled_total", "counter"),
        ("pacer_rejected_total", "counter"),
        ("pacer_wait_seconds", "histogram"),
        ("pacer_rate", "gauge"),
        ("pacer_waiting_requests", "gauge"),
    ] {
        assert_eq!(types.get(name).map(String::as_str), Some(kind), "{text}");
    }
    let value = |name: &str| {
        samples
            .iter()
            .filter(|s| s.name == name && s.label("limiter") == Some("orders"))
            .map(|s| s.value)
            .sum::<f64>()
    };
    assert_eq!(value("pacer_units_total"), 4.0, "{text}");
    assert_eq!(value("pacer_throttled_total"), 1.0, "{text}");
    assert_eq!(value("pacer_rejected_total"), 2.0, "{text}");
    assert_eq!(value("pacer_wait_seconds_count"), 4.0, "{text}");
    assert!(value("pacer_rate") > 0.0, "{text}");
    assert!(
        samples
            .iter()
            .any(|s| s.name == "pacer_rejected_total" && s.label("reason").is_some()),
        "{text}"
    );
    assert!(
        samples
            .iter()
            .filter(|s| s.name.starts_with("pacer_"))
            .all(|s| s.label("limiter") == Some("orders")),
        "every pacer_ series has the limiter label: {text}"
    );
}
