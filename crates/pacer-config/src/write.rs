//! Settings back into the tree, in the appsettings form (PascalCase keys, TimeSpan durations):
//! what the settings' `Serialize` writes. Reading the result gives the same settings.
//!
//! Every value is written, defaults included, so the output says what is in force; only an
//! unset `InitialUnitsPerMinute` (unlimited until throttled) and an unset `MaxConcurrent` (no
//! cap on requests in flight) are left out, as there is no value for them.

use crate::duration;
use crate::settings::{LimiterSettings, PacerSettings, ThrottlingSettings};
use crate::tree::Node;
use crate::window::{WindowSettings, WindowStoreSettings};
use pacer_core::{DeclaredDialect, FieldGrammar, LimiterOptions};
use std::time::Duration;

/// A table from its entries.
fn table<const N: usize>(entries: [(&str, Node); N]) -> Node {
    Node::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn time(d: Duration) -> Node {
    Node::Str(duration::text(d))
}

fn int(n: impl Into<u64>) -> Node {
    Node::Int(i128::from(n.into()))
}

fn size(n: usize) -> Node {
    // usize is at most 64 bits on every target Rust supports.
    Node::Int(n as i128)
}

/// The section: `Limiters` by name and `DefaultLimiter`.
pub(crate) fn settings(s: &PacerSettings) -> Node {
    let limiters = s
        .limiters
        .iter()
        .map(|(name, l)| (name.clone(), limiter(l)))
        .collect();
    table([
        ("Limiters", Node::Table(limiters)),
        ("DefaultLimiter", Node::Str(s.default_limiter.clone())),
    ])
}

/// One limiter.
pub(crate) fn limiter(s: &LimiterSettings) -> Node {
    let Node::Table(mut entries) = options(&s.options) else {
        unreachable!("options are a table")
    };
    let statuses = s.classifier.statuses();
    let codes =
        |list: &[http::StatusCode]| Node::List(list.iter().map(|c| int(c.as_u16())).collect());
    let rest = [
        ("MaxAttempts", int(s.max_attempts.get())),
        ("QueryCost", Node::Bool(s.query_cost)),
        ("Throttling", throttling(&s.throttling)),
        ("MaxExhaustedDelay", time(s.max_exhausted_delay)),
        ("EndpointKey", Node::Str(s.endpoint_key.as_str().to_owned())),
        (
            "Classifier",
            table([
                ("Throttled", codes(statuses.throttled)),
                ("Overloaded", codes(statuses.overloaded)),
                (
                    "ThrottledWithRetryAfter",
                    codes(statuses.throttled_with_retry_after),
                ),
                (
                    "ThrottledWhenExhausted",
                    codes(statuses.throttled_when_exhausted),
                ),
                (
                    "GrpcThrottled",
                    Node::List(statuses.grpc_throttled.iter().map(|&c| int(c)).collect()),
                ),
            ]),
        ),
        ("MaxEndpoints", size(s.max_endpoints)),
        ("EndpointIdleTtl", time(s.endpoint_idle_ttl)),
        (
            "Windows",
            Node::List(s.windows.iter().map(window).collect()),
        ),
        (
            "Dialects",
            Node::List(s.dialects.iter().map(dialect).collect()),
        ),
    ];
    entries.extend(rest.into_iter().map(|(k, v)| (k.to_owned(), v)));
    if let Some(f) = &s.fleet {
        let mut fleet = vec![("Store", Node::Str(f.url.clone()))];
        if let Some(prefix) = &f.key_prefix {
            fleet.push(("KeyPrefix", Node::Str(prefix.clone())));
        }
        fleet.extend([
            ("Period", time(f.options.period)),
            ("Lease", time(f.options.lease)),
            ("Timeout", time(f.options.timeout)),
            ("FallbackAfter", time(f.options.fallback_after)),
        ]);
        let fleet = fleet.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        entries.push(("Fleet".to_owned(), Node::Table(fleet)));
    }
    Node::Table(entries)
}

/// The adaptive options, by their appsettings names.
fn options(o: &LimiterOptions) -> Node {
    let mut entries = vec![
        ("Enabled", Node::Bool(o.enabled)),
        ("Controller", Node::Str(o.controller.as_str().to_owned())),
    ];
    if let Some(initial) = o.initial_units_per_minute {
        entries.push(("InitialUnitsPerMinute", Node::Float(initial)));
    }
    let p = &o.pacer;
    entries.extend([
        ("MinUnitsPerMinute", Node::Float(o.min_units_per_minute)),
        ("MaxUnitsPerMinute", Node::Float(o.max_units_per_minute)),
        ("Burst", time(o.burst)),
        ("QueueLimit", size(o.queue_limit)),
        ("MaxWait", time(o.max_wait)),
        ("DecreaseCooldown", time(o.decrease_cooldown)),
        ("InstanceCount", int(o.instance_count)),
        ("QuotaWindow", time(o.quota_window)),
        (
            "Aimd",
            table([
                ("DecreaseFactor", Node::Float(o.aimd.decrease_factor)),
                ("IncreaseInterval", time(o.aimd.increase_interval)),
                ("IncreaseStep", Node::Float(o.aimd.increase_step)),
            ]),
        ),
        (
            "Cubic",
            table([
                ("Beta", Node::Float(o.cubic.beta)),
                ("ScaleConstant", Node::Float(o.cubic.scale_constant)),
            ]),
        ),
        (
            "Pacer",
            table([
                ("HoldMargin", Node::Float(p.hold_margin)),
                ("CutMargin", Node::Float(p.cut_margin)),
                ("DecreaseFactor", Node::Float(p.decrease_factor)),
                ("StartGrowth", Node::Float(p.start_growth)),
                ("Lead", Node::Float(p.lead)),
                ("ProbeAfter", time(p.probe_after)),
                ("MaxProbeAfter", time(p.max_probe_after)),
                ("RecoveryProbeAfter", time(p.recovery_probe_after)),
                ("RecoveryTime", time(p.recovery_time)),
            ]),
        ),
        ("MaxRetryAfter", time(o.max_retry_after)),
        ("PauseWithoutRetryAfter", time(o.pause_without_retry_after)),
    ]);
    if let Some(cap) = o.max_concurrent {
        entries.push(("MaxConcurrent", int(cap.get())));
    }
    Node::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// `Throttling`: `"None"`, or a table with `Algorithm` and its parameters.
pub(crate) fn throttling(t: &ThrottlingSettings) -> Node {
    let algorithm = ("Algorithm", Node::Str(t.name().to_owned()));
    match t {
        ThrottlingSettings::None => Node::Str(t.name().to_owned()),
        ThrottlingSettings::Percentage(a) => table([
            algorithm,
            ("Threshold", Node::Float(a.threshold())),
            ("Factor", Node::Float(a.factor())),
            ("MaxDelay", time(a.max_delay())),
        ]),
        ThrottlingSettings::FixedThreshold(a) => table([
            algorithm,
            ("MinRemaining", int(a.min_remaining())),
            ("Delay", time(a.delay())),
        ]),
        ThrottlingSettings::AdaptiveDelay(a) => table([
            algorithm,
            ("Threshold", Node::Float(a.threshold())),
            ("MinDelay", time(a.min_delay())),
            ("MaxDelay", time(a.max_delay())),
        ]),
        ThrottlingSettings::Pacing(a) => table([
            algorithm,
            ("Reserve", int(a.reserve())),
            ("MinSpacing", time(a.min_spacing())),
        ]),
        ThrottlingSettings::Global(a) => table([
            algorithm,
            ("Threshold", Node::Float(a.threshold())),
            ("MaxDelay", time(a.max_delay())),
        ]),
        ThrottlingSettings::Composite(parts) => table([
            algorithm,
            (
                "Algorithms",
                Node::List(parts.iter().map(throttling).collect()),
            ),
        ]),
    }
}

/// One declared dialect: every setting that applies to it (one that applies to none given is
/// an error when read back).
fn dialect(d: &DeclaredDialect) -> Node {
    let text = |s: &str| Node::Str(s.to_owned());
    let mut entries = vec![("Name", text(d.name())), ("Unit", text(d.unit().as_str()))];
    for (key, header) in [
        ("Limit", d.limit_header()),
        ("Remaining", d.remaining_header()),
        ("Used", d.used_header()),
        ("Reset", d.reset_header()),
    ] {
        if let Some(h) = header {
            entries.push((key, text(h)));
        }
    }
    let field = d.field();
    if d.reset_header().is_some() || field.is_some() {
        entries.push(("ResetUnit", text(d.reset_unit().as_str())));
    }
    if let Some((h, unit)) = d.retry_after_header() {
        entries.push(("RetryAfter", text(h)));
        entries.push(("RetryAfterUnit", text(unit.as_str())));
    }
    if let Some(w) = d.window() {
        entries.push(("Window", time(w)));
    }
    if let Some((h, unit)) = d.window_header() {
        entries.push(("WindowHeader", text(h)));
        entries.push(("WindowUnit", text(unit.as_str())));
    }
    if let Some((name, grammar, separator)) = field {
        entries.push(("Field", Node::Str(name)));
        entries.push(("Grammar", text(grammar.as_str())));
        entries.push(("Separator", Node::Str(separator.to_string())));
        if grammar == FieldGrammar::Pairs
            && let Some(keys) = d.pair_keys()
        {
            for (key, value) in ["LimitKey", "RemainingKey", "ResetKey", "UsedKey"]
                .into_iter()
                .zip(keys)
            {
                entries.push((key, text(value)));
            }
        }
    }
    Node::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// One strict window.
fn window(w: &WindowSettings) -> Node {
    let mut entries = vec![
        ("Name", Node::Str(w.name.clone())),
        ("Limit", int(w.limit)),
        ("Per", time(w.per)),
        ("Frames", int(w.frames)),
    ];
    match &w.store {
        WindowStoreSettings::Memory => entries.push(("Store", Node::Str("Memory".to_owned()))),
        WindowStoreSettings::Redis { url, key_prefix } => {
            entries.push(("Store", Node::Str(url.clone())));
            if let Some(prefix) = key_prefix {
                entries.push(("KeyPrefix", Node::Str(prefix.clone())));
            }
        }
    }
    entries.push((
        "OnStoreFailure",
        Node::Str(w.on_store_failure.as_str().to_owned()),
    ));
    Node::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}
