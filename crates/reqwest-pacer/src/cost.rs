//! What a request costs, in units.

use reqwest::Request;
use std::fmt;

/// Says how many units a request costs before it is sent: 1 per request by default; tokens of a
/// completion, SharePoint resource units, bytes — whatever the API counts. A per-request
/// [`Cost`](crate::Cost) extension overrides it.
///
/// # Example
///
/// Charge a write twice what a read costs (as SharePoint counts resource units):
///
/// ```
/// use reqwest::{Method, Request};
/// use reqwest_pacer::CostEstimator;
///
/// #[derive(Debug)]
/// struct ResourceUnits;
///
/// impl CostEstimator for ResourceUnits {
///     fn cost(&self, request: &Request) -> u64 {
///         match *request.method() {
///             Method::GET | Method::HEAD => 1,
///             _ => 2,
///         }
///     }
/// }
///
/// let get = Request::new(Method::GET, "https://example.com/a".parse().unwrap());
/// let post = Request::new(Method::POST, "https://example.com/a".parse().unwrap());
/// assert_eq!((ResourceUnits.cost(&get), ResourceUnits.cost(&post)), (1, 2));
/// ```
pub trait CostEstimator: Send + Sync + fmt::Debug + 'static {
    /// The units `request` costs.
    fn cost(&self, request: &Request) -> u64;
}

/// Every request costs one unit. The default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitCost;

impl CostEstimator for UnitCost {
    fn cost(&self, _: &Request) -> u64 {
        1
    }
}

/// A cost estimator made of a closure.
///
/// ```
/// use reqwest_pacer::{CostEstimator, CostFn};
/// let by_path = CostFn(|r: &reqwest::Request| if r.url().path().starts_with("/batch") { 20 } else { 1 });
/// let r = reqwest::Request::new(reqwest::Method::POST, "https://x.test/batch".parse().unwrap());
/// assert_eq!(by_path.cost(&r), 20);
/// ```
#[derive(Clone, Copy)]
pub struct CostFn<F>(pub F);

impl<F> fmt::Debug for CostFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CostFn")
    }
}

impl<F> CostEstimator for CostFn<F>
where
    F: Fn(&Request) -> u64 + Send + Sync + 'static,
{
    fn cost(&self, request: &Request) -> u64 {
        (self.0)(request)
    }
}
