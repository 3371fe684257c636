//! `pacer-redis`'s integration tests: one binary, against a real Redis (see `harness`).

mod cluster;
mod conformance;
mod down;
mod faults;
mod harness;
mod lua;
mod properties;
mod strictness;
