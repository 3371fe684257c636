//! Header parsing: Pacer's `RateLimitInfo::from_headers` beside the `rate-limits` crate, on the
//! same header maps. Run with `cargo bench -p pacer-core --bench headers`.

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use pacer_core::RateLimitInfo;

/// A GitHub REST response's headers (rate-limit fields plus the usual others).
fn github() -> HeaderMap {
    map(&[
        ("server", "github.com"),
        ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ("content-type", "application/json; charset=utf-8"),
        ("cache-control", "private, max-age=60, s-maxage=60"),
        ("etag", "W/\"0c5a9d8b1e2f3a4b5c6d7e8f9a0b1c2d\""),
        ("x-github-media-type", "github.v3; format=json"),
        ("x-ratelimit-limit", "5000"),
        ("x-ratelimit-remaining", "4987"),
        ("x-ratelimit-reset", "1767229200"),
        ("x-ratelimit-used", "13"),
        ("x-ratelimit-resource", "core"),
        ("x-github-request-id", "C3A1:2F4B:1E2D3C:1F3E4D:6954A1B0"),
    ])
}

/// An IETF response in the separate-fields form both parsers read (drafts -00 .. -06, as
/// SharePoint, Kong and Envoy send it).
fn ietf_fields() -> HeaderMap {
    map(&[
        ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ("content-type", "application/json"),
        ("ratelimit-limit", "100"),
        ("ratelimit-remaining", "50"),
        ("ratelimit-reset", "30"),
        ("ratelimit-policy", "100;w=60"),
        ("x-request-id", "5b1f0c2e-8d3a-4f6b-9c7e-1a2b3c4d5e6f"),
    ])
}

/// An IETF draft-11 response (Cloudflare-style structured fields, two policies). `rate-limits`
/// does not read this form; its figure shows the cost of finding nothing.
fn ietf_structured() -> HeaderMap {
    map(&[
        ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ("content-type", "application/json"),
        (
            "ratelimit-policy",
            "\"burst\";q=100;w=60, \"daily\";q=1000;w=86400",
        ),
        ("ratelimit", "\"burst\";r=50;t=30, \"daily\";r=900;t=43200"),
        ("x-request-id", "5b1f0c2e-8d3a-4f6b-9c7e-1a2b3c4d5e6f"),
    ])
}

fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut m = HeaderMap::new();
    for (k, v) in pairs {
        m.append(*k, HeaderValue::from_static(v));
    }
    m
}

fn header_parsing(c: &mut Criterion) {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let mut group = c.benchmark_group("header_parsing");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    for (name, headers) in [
        ("github", github()),
        ("ietf-fields", ietf_fields()),
        ("ietf-draft11", ietf_structured()),
    ] {
        // Both parsers must understand the maps they are compared on.
        let info = RateLimitInfo::from_headers(&headers, now);
        assert!(info.is_valid(), "pacer parses {name}");
        let theirs = rate_limits::RateLimit::new(&headers);
        assert_eq!(
            theirs.is_ok(),
            name != "ietf-draft11",
            "rate-limits on {name}"
        );

        group.bench_function(format!("pacer/{name}"), |b| {
            b.iter(|| RateLimitInfo::from_headers(black_box(&headers), black_box(now)))
        });
        group.bench_function(format!("rate-limits/{name}"), |b| {
            b.iter(|| rate_limits::RateLimit::new(black_box(&headers)))
        });
    }
    group.finish();
}

criterion_group!(benches, header_parsing);
criterion_main!(benches);
