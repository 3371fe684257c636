//! Reading one limiter's section (`AdaptiveRateLimiting.Limiters.<name>`) into
//! [`LimiterSettings`].
//!
//! Each key is read with its type; then the rules the core knows are checked by
//! [`LimiterOptions::validate`], and its errors are given the full path and the value as the user
//! wrote it (or the default's value, marked as such, when the option was not given).

use crate::error::ProblemKind;
use crate::reader::{At, Collector, TableReader};
use crate::settings::LimiterSettings;
use crate::spelling::{Style, join};
use crate::throttling;
use crate::tree::Node;
use http::StatusCode;
use pacer_core::KeyMode;
use pacer_core::{ControllerKind, InvalidOption, LimiterOptions, ServerStopPolicy};
use std::collections::HashMap;
use std::num::NonZeroU32;

/// Every key of a limiter, for unknown-key suggestions (and the docs' order).
pub(crate) const LIMITER_KEYS: &[&str] = &[
    "Enabled",
    "Controller",
    "InitialUnitsPerMinute",
    "MinUnitsPerMinute",
    "MaxUnitsPerMinute",
    "Burst",
    "QueueLimit",
    "MaxWait",
    "MaxConcurrent",
    "DecreaseCooldown",
    "InstanceCount",
    "QuotaWindow",
    "Aimd",
    "Cubic",
    "Pacer",
    "MaxAttempts",
    "QueryCost",
    "MaxRetryAfter",
    "PauseWithoutRetryAfter",
    "Throttling",
    "MaxExhaustedDelay",
    "EndpointKey",
    "Classifier",
    "MaxEndpoints",
    "EndpointIdleTtl",
    "Windows",
    "Fleet",
    "Dialects",
];
const AIMD_KEYS: &[&str] = &["DecreaseFactor", "IncreaseInterval", "IncreaseStep"];
const CUBIC_KEYS: &[&str] = &["Beta", "ScaleConstant"];
const PACER_KEYS: &[&str] = &[
    "HoldMargin",
    "CutMargin",
    "DecreaseFactor",
    "StartGrowth",
    "Lead",
    "ProbeAfter",
    "MaxProbeAfter",
    "RecoveryProbeAfter",
    "RecoveryTime",
];
const CLASSIFIER_KEYS: &[&str] = &[
    "Throttled",
    "Overloaded",
    "ThrottledWithRetryAfter",
    "ThrottledWhenExhausted",
    "GrpcThrottled",
];

/// The options the user gave: the core's option name (`Aimd.IncreaseStep`) → the full path in
/// the user's spelling and the value as written.
#[derive(Debug, Default)]
pub(crate) struct Given(HashMap<String, (String, String)>);

impl Given {
    pub(crate) fn note(&mut self, option: &str, at: &At<'_>) {
        self.0
            .insert(option.to_owned(), (at.path.clone(), at.shown()));
    }

    /// The path and value to report for `option`: as given, else where it would go in the
    /// table's style, with the value in force marked as the default.
    pub(crate) fn locate(
        &self,
        option: &str,
        value_in_force: &str,
        table: &str,
        style: Style,
    ) -> (String, String) {
        match self.0.get(option) {
            Some(found) => found.clone(),
            None => {
                let spelled: Vec<String> = option.split('.').map(|s| style.render(s)).collect();
                (
                    join(table, &spelled.join(".")),
                    format!("{value_in_force} (the default)"),
                )
            }
        }
    }
}

/// Reads a limiter at `at`; `None` (with the problems recorded) if anything is wrong.
pub(crate) fn read(p: &mut Collector, at: &At<'_>) -> Option<LimiterSettings> {
    let before = p.count();
    let mut t = match at.node() {
        Node::Table(_) | Node::Nil => TableReader::new(at.path.clone(), at.node(), at.style()),
        _ => {
            p.push(
                at.path.clone(),
                Some(at.shown()),
                "expected a table of the limiter's options",
                ProblemKind::WrongType,
            );
            return None;
        }
    };
    let mut s = LimiterSettings::default();
    let mut given = Given::default();
    read_options(p, &mut t, &mut s.options, &mut given);
    s.warnings = unused_controller_tables(&given, &at.path, at.style(), &s.options);

    if let Some(f) = t.get(p, "Throttling") {
        s.throttling = throttling::read(p, &f).unwrap_or_default();
    }
    if let Some(f) = t.get(p, "MaxExhaustedDelay")
        && let Some(d) = f.duration(p)
    {
        match ServerStopPolicy::new(d) {
            Ok(_) => s.max_exhausted_delay = d,
            Err(e) => throttling::report(p, &f.path, &f.shown(), &e),
        }
    }
    if let Some(f) = t.get(p, "EndpointKey") {
        let names = KeyMode::ALL.map(KeyMode::as_str);
        if let Some(i) = f.choice(p, "endpoint key mode", &names) {
            s.endpoint_key = KeyMode::ALL[i];
        }
    }
    if let Some(f) = t.get(p, "Classifier")
        && let Some(c) = f.table(p)
    {
        s.classifier = read_classifier(p, c, s.classifier);
    }
    if let Some(f) = t.get(p, "MaxAttempts")
        && let Some(n) = f.uint(p, u64::from(u32::MAX))
    {
        match NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)) {
            Some(n) => s.max_attempts = n,
            None => p.push(
                f.path.clone(),
                Some(f.shown()),
                "must be at least 1",
                ProblemKind::OutOfRange,
            ),
        }
    }
    if let Some(f) = t.get(p, "QueryCost")
        && let Some(read) = f.bool(p)
    {
        s.query_cost = read;
    }
    if let Some(f) = t.get(p, "MaxEndpoints")
        && let Some(n) = f.uint(p, u64::MAX)
    {
        match usize::try_from(n) {
            Ok(0) => p.push(
                f.path.clone(),
                Some(f.shown()),
                "must be at least 1",
                ProblemKind::OutOfRange,
            ),
            Ok(n) => s.max_endpoints = n,
            Err(_) => p.push(
                f.path.clone(),
                Some(f.shown()),
                format!("must be at most {}", usize::MAX),
                ProblemKind::OutOfRange,
            ),
        }
    }
    if let Some(f) = t.get(p, "EndpointIdleTtl")
        && let Some(d) = f.duration(p)
    {
        if d.is_zero() {
            p.push(
                f.path.clone(),
                Some(f.shown()),
                "must be greater than 0",
                ProblemKind::OutOfRange,
            );
        } else {
            s.endpoint_idle_ttl = d;
        }
    }
    if let Some(f) = t.get(p, "Windows") {
        s.windows = crate::window::read(p, &f);
    }
    if let Some(f) = t.get(p, "Fleet") {
        s.fleet = crate::fleet::read(p, &f);
    }
    if let Some(f) = t.get(p, "Dialects") {
        s.dialects = crate::dialect::read(p, &f);
    }

    // The rules of the core, with paths and values as the user wrote them.
    if let Err(e) = s.options.validate() {
        for InvalidOption {
            option,
            value,
            rule,
            ..
        } in e.into_errors()
        {
            let (path, shown) = given.locate(&option, &value, t.path(), t.style());
            p.push(path, Some(shown), rule, ProblemKind::OutOfRange);
        }
    }
    t.finish(p, LIMITER_KEYS);
    (p.count() == before).then_some(s)
}

/// The adaptive options: every [`LimiterOptions`] field by the name the .NET adaptive limiter
/// gives it.
fn read_options(
    p: &mut Collector,
    t: &mut TableReader<'_>,
    o: &mut LimiterOptions,
    given: &mut Given,
) {
    macro_rules! set {
        ($key:literal, $read:ident $(($($arg:expr),*))?, |$v:ident| $assign:expr) => {
            if let Some(f) = t.get(p, $key) {
                if let Some($v) = f.$read(p $(, $($arg),*)?) {
                    $assign;
                    given.note($key, &f);
                }
            }
        };
    }
    set!("Enabled", bool, |v| o.enabled = v);
    if let Some(f) = t.get(p, "Controller") {
        let names = ControllerKind::ALL.map(ControllerKind::as_str);
        if let Some(i) = f.choice(p, "controller", &names) {
            o.controller = ControllerKind::ALL[i];
        }
    }
    set!("InitialUnitsPerMinute", f64, |v| o
        .initial_units_per_minute =
        Some(v));
    set!("MinUnitsPerMinute", f64, |v| o.min_units_per_minute = v);
    set!("MaxUnitsPerMinute", f64, |v| o.max_units_per_minute = v);
    set!("Burst", duration, |v| o.burst = v);
    set!("QueueLimit", uint(usize::MAX as u64), |v| {
        o.queue_limit = usize::try_from(v).unwrap_or(usize::MAX)
    });
    set!("MaxWait", duration, |v| o.max_wait = v);
    if let Some(f) = t.get(p, "MaxConcurrent")
        && let Some(n) = f.uint(p, u64::from(u32::MAX))
    {
        match NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)) {
            Some(n) => {
                o.max_concurrent = Some(n);
                given.note("MaxConcurrent", &f);
            }
            None => p.push(
                f.path.clone(),
                Some(f.shown()),
                "must be at least 1 (leave it out for no cap)",
                ProblemKind::OutOfRange,
            ),
        }
    }
    set!("DecreaseCooldown", duration, |v| o.decrease_cooldown = v);
    set!("InstanceCount", uint(u64::from(u32::MAX)), |v| {
        o.instance_count = u32::try_from(v).unwrap_or(u32::MAX)
    });
    set!("MaxRetryAfter", duration, |v| o.max_retry_after = v);
    set!("PauseWithoutRetryAfter", duration, |v| o
        .pause_without_retry_after =
        v);
    set!("QuotaWindow", duration, |v| o.quota_window = v);

    if let Some(f) = t.get(p, "Aimd")
        && let Some(mut a) = f.table(p)
    {
        let mut note = |key: &str, f: &At<'_>| given.note(&format!("Aimd.{key}"), f);
        if let Some(f) = a.get(p, "DecreaseFactor")
            && let Some(v) = f.f64(p)
        {
            o.aimd.decrease_factor = v;
            note("DecreaseFactor", &f);
        }
        if let Some(f) = a.get(p, "IncreaseInterval")
            && let Some(v) = f.duration(p)
        {
            o.aimd.increase_interval = v;
            note("IncreaseInterval", &f);
        }
        if let Some(f) = a.get(p, "IncreaseStep")
            && let Some(v) = f.f64(p)
        {
            o.aimd.increase_step = v;
            note("IncreaseStep", &f);
        }
        a.finish(p, AIMD_KEYS);
    }
    if let Some(f) = t.get(p, "Cubic")
        && let Some(mut c) = f.table(p)
    {
        if let Some(f) = c.get(p, "Beta")
            && let Some(v) = f.f64(p)
        {
            o.cubic.beta = v;
            given.note("Cubic.Beta", &f);
        }
        if let Some(f) = c.get(p, "ScaleConstant")
            && let Some(v) = f.f64(p)
        {
            o.cubic.scale_constant = v;
            given.note("Cubic.ScaleConstant", &f);
        }
        c.finish(p, CUBIC_KEYS);
    }
    if let Some(f) = t.get(p, "Pacer")
        && let Some(mut c) = f.table(p)
    {
        let po = &mut o.pacer;
        macro_rules! pacer {
            ($key:literal, $read:ident, $field:ident) => {
                if let Some(f) = c.get(p, $key)
                    && let Some(v) = f.$read(p)
                {
                    po.$field = v;
                    given.note(concat!("Pacer.", $key), &f);
                }
            };
        }
        pacer!("HoldMargin", f64, hold_margin);
        pacer!("CutMargin", f64, cut_margin);
        pacer!("DecreaseFactor", f64, decrease_factor);
        pacer!("StartGrowth", f64, start_growth);
        pacer!("Lead", f64, lead);
        pacer!("ProbeAfter", duration, probe_after);
        pacer!("MaxProbeAfter", duration, max_probe_after);
        pacer!("RecoveryProbeAfter", duration, recovery_probe_after);
        pacer!("RecoveryTime", duration, recovery_time);
        c.finish(p, PACER_KEYS);
    }
}

/// A table of a controller the limiter does not run (`Aimd` beside `Controller = Cubic`) whose
/// values are not the defaults is read and checked, then has no effect: a warning each, at the
/// table's path.
fn unused_controller_tables(
    given: &Given,
    limiter: &str,
    style: Style,
    o: &LimiterOptions,
) -> Vec<crate::Problem> {
    let controller = o.controller;
    let mut warnings = Vec::new();
    // A table of defaults changes nothing either way (settings written back carry every
    // controller's table): only one that says something is worth a word.
    let defaults = LimiterOptions::default();
    for (table, kind, says) in [
        ("Aimd", ControllerKind::Aimd, o.aimd != defaults.aimd),
        ("Cubic", ControllerKind::Cubic, o.cubic != defaults.cubic),
        ("Pacer", ControllerKind::Pacer, o.pacer != defaults.pacer),
    ] {
        let written = given.0.keys().any(|k| k.starts_with(&format!("{table}.")));
        if written && says && kind != controller {
            warnings.push(crate::Problem::new(
                join(limiter, &style.render(table)),
                None,
                format!(
                    "ignored: the limiter runs the {} controller (`Controller`), this table \
                     applies to {} only",
                    controller.as_str(),
                    kind.as_str()
                ),
                ProblemKind::Ignored,
            ));
        }
    }
    warnings
}

/// `Classifier`: four lists of HTTP status codes and one of gRPC status codes, each replacing its
/// default when given.
fn read_classifier(
    p: &mut Collector,
    mut t: TableReader<'_>,
    mut c: pacer_core::DefaultClassifier,
) -> pacer_core::DefaultClassifier {
    if let Some(f) = t.get(p, "Throttled")
        && let Some(codes) = status_codes(p, &f)
    {
        c = c.throttled(codes);
    }
    if let Some(f) = t.get(p, "Overloaded")
        && let Some(codes) = status_codes(p, &f)
    {
        c = c.overloaded(codes);
    }
    if let Some(f) = t.get(p, "ThrottledWithRetryAfter")
        && let Some(codes) = status_codes(p, &f)
    {
        c = c.throttled_with_retry_after(codes);
    }
    if let Some(f) = t.get(p, "ThrottledWhenExhausted")
        && let Some(codes) = status_codes(p, &f)
    {
        c = c.throttled_when_exhausted(codes);
    }
    if let Some(f) = t.get(p, "GrpcThrottled")
        && let Some(codes) = grpc_codes(p, &f)
    {
        c = c.grpc_throttled(codes);
    }
    t.finish(p, CLASSIFIER_KEYS);
    c
}

/// A list of HTTP status codes, each from 100 to 599 (see [`codes`]).
fn status_codes(p: &mut Collector, at: &At<'_>) -> Option<Vec<StatusCode>> {
    let codes = codes(p, at, "an HTTP status code", 100..=599)?;
    // 100..=599 are all valid statuses.
    Some(
        codes
            .into_iter()
            .filter_map(|c| StatusCode::from_u16(c).ok())
            .collect(),
    )
}

/// A list of gRPC status codes, each from 0 to 16 (`grpc/doc/statuscodes.md`; see [`codes`]).
fn grpc_codes(p: &mut Collector, at: &At<'_>) -> Option<Vec<u16>> {
    codes(p, at, "a gRPC status code", 0..=16)
}

/// A list of codes: a list, a table indexed `0`, `1`, … (environment variables), a single code,
/// or a string of codes separated by commas or spaces (`"429, 503"`). Each must be `what`, a
/// whole number in `range`.
fn codes(
    p: &mut Collector,
    at: &At<'_>,
    what: &str,
    range: std::ops::RangeInclusive<u16>,
) -> Option<Vec<u16>> {
    let before = p.count();
    let mut codes = Vec::new();
    let (low, high) = (*range.start(), *range.end());
    let mut check = |path: String, shown: String, code: Option<i128>, p: &mut Collector| {
        let Some(code) = code else {
            return p.push(
                path,
                Some(shown),
                format!("expected {what} (a whole number from {low} to {high})"),
                ProblemKind::WrongType,
            );
        };
        match u16::try_from(code).ok().filter(|c| range.contains(c)) {
            Some(code) => codes.push(code),
            None => p.push(
                path,
                Some(shown),
                format!("must be {what} from {low} to {high}"),
                ProblemKind::OutOfRange,
            ),
        }
    };
    match at.node() {
        Node::Str(s) => {
            let parts = s
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|x| !x.is_empty());
            for part in parts {
                check(at.path.clone(), at.shown(), part.parse::<i128>().ok(), p);
            }
        }
        Node::Int(i) => check(at.path.clone(), at.shown(), Some(*i), p),
        _ => {
            for item in at.list(p)? {
                let code = match item.node() {
                    Node::Int(i) => Some(*i),
                    Node::Float(f) if f.fract() == 0.0 && f.abs() < 1e6 => Some(*f as i128),
                    Node::Str(s) => s.trim().parse::<i128>().ok(),
                    _ => None,
                };
                check(item.path.clone(), item.shown(), code, p);
            }
        }
    }
    (p.count() == before).then_some(codes)
}
