//! Pacer's algorithms, free of HTTP clients, Redis and sleeping.
//!
//! Every algorithm here is a pure function of `(state, now, input)` that returns a decision: a
//! rate, a delay, an ETA. The thin async shells read an injected [`Clock`], ask the algorithm,
//! and sleep. The simulator runs the very same code on virtual time.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
mod controller;
pub mod drive;
mod engine;
mod fleet;
mod limiter;
mod metrics;
mod server_model;
mod validation;

// Headers, proactive throttling and endpoint state.
mod budget;
mod endpoint;
mod headers;
mod throttling;
pub use budget::{
    CostAboveLimit, TokenUsage, USAGE_BODY_LIMIT, UnitBudget, UnitBudgets, UsageReader,
};
pub use drive::{DEFAULT_FRAMES, PacerBody, WindowLimit, read_body};
pub use endpoint::{EndpointSnapshot, EndpointStore, EndpointStoreBuilder, EndpointView};
pub use engine::{
    After, Attempt, AttemptWait, BODY_LIMIT, BodyReading, BodyVerdict, ClassifierStatuses, Cost,
    DefaultClassifier, Endpoint, EndpointKey, Engine, GRPC_RESOURCE_EXHAUSTED, GRPC_UNAVAILABLE,
    Hold, KeyMode, MaxConcurrent, MaxWait, OutputTokens, Paced, QUERY_COST_BODY_LIMIT, QueryCost,
    QuotaExhausted, Reading, Refusal, RejectReason, Rejection, Retries, Rules, ServerState,
    ThrottleClassifier, TokenCost, TotalTimeout, UnknownKeyMode, WaitCause, WaitStep, WindowAnswer,
    forbids_retry, insufficient_quota, is_json,
};
pub use engine::{Driver, Exchange, Next, Refused, RequestChoices, Settlement};
pub use engine::{EndpointMemory, PacerMemory, Recalled};
pub use engine::{PENALTY_PAUSE, RefusalClass, builtin_body_verdict, refusal_from_headers};
#[cfg(any(test, feature = "test-util"))]
pub use fleet::conformance as fleet_conformance;
pub use fleet::{
    CommitReply, CommitRequest, DrawReply, DrawRequest, Drawn, Fleet, FleetCall, FleetError,
    FleetFollower, FleetFuture, FleetHandle, FleetLink, FleetMember, FleetOptions, FleetStore,
    Gauges, MemoryFleetStore, NewsFuture, Steered, SyncReply, SyncRequest, TickData,
};
pub use headers::{
    DeclaredDialect, DeclaredDialectBuilder, Dialect, FieldGrammar, Policy, QuotaUnit,
    RateLimitInfo, TimeUnit,
};
pub use throttling::{
    AdaptiveDelay, AdaptiveDelayBuilder, Composite, CompositeBuilder, FixedThreshold, Global,
    GlobalBuilder, Pacing, Percentage, PercentageBuilder, RateLimitStateProvider, ServerStop,
    ServerStopPolicy, StopCause, ThrottlingAlgorithm, ThrottlingConfigError, ThrottlingContext,
    ThrottlingResult,
};

pub use clock::ManualClock;
pub use clock::{Clock, RealClock, Sleep, Timestamp, WallTime};
pub use controller::{
    Aimd, AimdOptions, Controller, ControllerContext, ControllerFactory, Cubic, CubicOptions,
    PacerController, PacerControllerOptions, PureController, RateController, RateControllerState,
};
pub use limiter::{
    Acquire, Acquired, Changes, ControllerKind, ControllerMemory, Feedback, INTERACTIVE_PER_BATCH,
    Limiter, LimiterBuilder, LimiterCore, LimiterMemory, LimiterOptions, LimiterSnapshot,
    LimiterStats, Permit, Priority, RateChange, RateChangeReason, ServerQuota, Signal, Ticket,
    UnknownController,
};
pub use metrics::{LimiterMetrics, WaitingGuard};
pub use server_model::{
    EVERY_REFUSAL, LimiterKind, OLDER_SECS, RECORD_CAPACITY, Record, ServerModel,
};
pub use validation::{InvalidOption, InvalidOptions};

// Strict discrete sliding windows (after the discrete-window Redis library).
mod window;
#[cfg(any(test, feature = "test-util"))]
pub use window::conformance;
pub use window::{
    BoxError, EtaOutcome, EventsOutcome, FallbackWindowStore, FillOutcome, GeometryError,
    MemoryWindowStore, StoreFailure, TryOutcome, WindowError, WindowFuture, WindowGeometry,
    WindowStore, WindowTime, check_limit, check_limited_call,
};
