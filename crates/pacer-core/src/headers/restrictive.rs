//! Which of several policies is the most restrictive: the one the top-level accessors of
//! [`crate::RateLimitInfo`] describe and the throttling algorithms act on.
//!
//! The rungs, first difference wins (`Less` = `a` is more restrictive):
//!
//! 1. an exhausted policy (`remaining == 0`) beats one that is not;
//! 2. of two exhausted ones, the later reset wins (a reset the server sent beats none);
//! 3. a known remaining beats an unknown one (a quota-only policy describes no current state);
//! 4. a known remaining *fraction* beats an unknown one, and the lower fraction wins;
//! 5. by unit, then the lower remaining (raw counts compare only within one unit);
//! 6. a longer reset wins (a known one beats none);
//! 7. a known limit beats none, and the smaller wins (this orders quota-only policies);
//! 8. the policy name (named first), for a deterministic order.
//!
//! This follows RateLimitHeaders' comparator with one change:
//! there, the raw remaining count is compared before the fraction. Raw counts in different units
//! do not compare (OpenAI's 59 requests left of 60 are scarcer than 149 984 tokens left of
//! 150 000, yet 100 tokens left of 150 000 are scarcer than 5 requests of 10), so the fraction
//! comes first.
//!
//! Every rung compares one property that each policy has on its own, never a property of the
//! pair (such as "both have a limit"), so the order is total: `sort_by` may panic on a
//! comparator that is not.

use std::cmp::Ordering;

use super::policy::Policy;

/// Orders `a` before `b` when `a` is more restrictive.
pub(crate) fn compare(a: &Policy, b: &Policy) -> Ordering {
    // 1. Exhausted first.
    b.is_exhausted()
        .cmp(&a.is_exhausted())
        // 2. Among exhausted ones, the later reset first (constant for the others).
        .then_with(|| exhausted_reset(b).cmp(&exhausted_reset(a)))
        // 3. A known remaining first.
        .then_with(|| b.remaining().is_some().cmp(&a.remaining().is_some()))
        // 4. A known fraction first, then the lower fraction, compared exactly.
        .then_with(|| match (fraction_parts(a), fraction_parts(b)) {
            (Some((ra, la)), Some((rb, lb))) => (ra * lb).cmp(&(rb * la)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
        // 5. By unit, then the lower remaining.
        .then_with(|| a.unit().cmp(b.unit()))
        .then_with(|| a.remaining().cmp(&b.remaining()))
        // 6. The longer reset first.
        .then_with(|| b.reset_after().cmp(&a.reset_after()))
        // 7. A known smaller limit first.
        .then_with(|| some_first(a.limit(), b.limit()))
        // 8. By name, named first.
        .then_with(|| some_first(a.name(), b.name()))
}

/// The reset of an exhausted policy; `None` for one that is not.
fn exhausted_reset(p: &Policy) -> Option<std::time::Duration> {
    p.reset_after().filter(|_| p.is_exhausted())
}

/// `Some` before `None`, then ascending.
fn some_first<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// `(remaining, limit)` widened for exact cross-multiplication, remaining capped at the limit.
fn fraction_parts(p: &Policy) -> Option<(u128, u128)> {
    match (p.remaining(), p.limit()) {
        (Some(r), Some(l)) if l > 0 => Some((u128::from(r.min(l)), u128::from(l))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, QuotaUnit};
    use proptest::prelude::*;
    use std::time::Duration;

    fn p(name: &'static str) -> Policy {
        Policy::new(Dialect::IetfStructured).with_name(name)
    }

    /// Each pair: the first is more restrictive than the second.
    #[test]
    fn each_rung() {
        let secs = Duration::from_secs;
        let cases = [
            // 1. exhausted beats a lower fraction that is not exhausted
            (
                p("a").with_remaining(0).with_limit(1000),
                p("b").with_remaining(1).with_limit(1000),
            ),
            // 2. both exhausted: later reset; a sent reset beats none
            (
                p("b").with_remaining(0).with_reset_after(secs(60)),
                p("a").with_remaining(0).with_reset_after(secs(5)),
            ),
            (
                p("b").with_remaining(0).with_reset_after(secs(1)),
                p("a").with_remaining(0),
            ),
            // 3. known remaining beats quota-only
            (p("b").with_remaining(900), p("a").with_limit(10)),
            // 4. fraction before raw count, across units
            (
                p("b")
                    .with_remaining(100)
                    .with_limit(150_000)
                    .with_unit(QuotaUnit::Tokens),
                p("a").with_remaining(5).with_limit(10),
            ),
            (
                p("b").with_remaining(59).with_limit(60),
                p("a")
                    .with_remaining(149_984)
                    .with_limit(150_000)
                    .with_unit(QuotaUnit::Tokens),
            ),
            // 5. same unit, no limits: lower remaining
            (p("b").with_remaining(3), p("a").with_remaining(4)),
            // 6. equal fractions: longer reset
            (
                p("b")
                    .with_remaining(5)
                    .with_limit(10)
                    .with_reset_after(secs(3600)),
                p("a")
                    .with_remaining(5)
                    .with_limit(10)
                    .with_reset_after(secs(60)),
            ),
            // 7. quota-only: smaller limit
            (p("b").with_limit(10), p("a").with_limit(100)),
            (p("b").with_limit(10), p("a")),
            // 8. names
            (p("a").with_remaining(1), p("b").with_remaining(1)),
        ];
        for (i, (more, less)) in cases.iter().enumerate() {
            assert_eq!(compare(more, less), Ordering::Less, "case {i}");
            assert_eq!(compare(less, more), Ordering::Greater, "case {i} reversed");
        }
    }

    /// A cycle a pair-dependent comparator would make: 5/10 vs 6 (no limit) vs 7/100.
    #[test]
    fn regression_mixed_limits_do_not_make_a_cycle() {
        let a = p("a").with_remaining(5).with_limit(10);
        let b = p("b").with_remaining(6);
        let c = p("c").with_remaining(7).with_limit(100);
        assert_eq!(compare(&c, &a), Ordering::Less);
        assert_eq!(compare(&a, &b), Ordering::Less);
        assert_eq!(compare(&c, &b), Ordering::Less);
    }

    fn policy() -> impl Strategy<Value = Policy> {
        let opt = |max: u64| proptest::option::of(0..max);
        (opt(4), opt(4), opt(3), opt(2), 0..3usize, opt(2)).prop_map(|(r, l, t, w, u, n)| {
            let mut x = Policy::new(Dialect::XRateLimit).with_unit(
                [
                    QuotaUnit::Requests,
                    QuotaUnit::Tokens,
                    QuotaUnit::InputTokens,
                ][u]
                    .clone(),
            );
            x.set_remaining(r);
            x.set_limit(l);
            x.set_reset_after(t.map(Duration::from_secs));
            x.set_window(w.map(Duration::from_secs));
            if let Some(n) = n {
                x = x.with_name(["a", "b"][n as usize]);
            }
            x
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn the_order_is_total(a in policy(), b in policy(), c in policy()) {
            prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
            if compare(&a, &b) != Ordering::Greater && compare(&b, &c) != Ordering::Greater {
                prop_assert_ne!(compare(&a, &c), Ordering::Greater);
            }
        }
    }

    #[test]
    fn rate_limit_headers_multi_policy_example_picks_burst() {
        let burst = p("burst").with_remaining(50).with_limit(100);
        let daily = p("daily").with_remaining(900).with_limit(1000);
        assert_eq!(compare(&burst, &daily), Ordering::Less);
    }
}
