//! Pacer: client-side rate limiting for `reqwest` that finds the rate an API allows and stays
//! just under it.
//!
//! This facade re-exports the workspace crates.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use pacer_core as core;
pub use pacer_core::*;
