//! Quotas in units other than requests (OpenAI's and Anthropic's tokens): a local budget per
//! policy that says when a request of a given cost fits.
//!
//! A requests policy sets the adaptive limiter's rate ([`crate::ServerQuota::from_info`]); a
//! tokens policy cannot: 1,500 tokens left say nothing of how many requests may go. It paces
//! tokens instead, with each request's cost in tokens.

mod unit_budget;
mod unit_budgets;
mod usage;

pub use unit_budget::{CostAboveLimit, UnitBudget};
pub use unit_budgets::UnitBudgets;
pub use usage::{TokenUsage, USAGE_BODY_LIMIT, UsageReader};
