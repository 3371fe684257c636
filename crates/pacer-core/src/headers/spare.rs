//! Spare lists of policies, per thread. A list of policies is made for each response read (its
//! state) and for each look at an endpoint's state before a send (the state aged to the send),
//! and one is dropped for each (the state it replaces, the look done with): a thread hands the
//! lists it drops to the ones it makes, instead of freeing one and allocating the next.

use std::cell::RefCell;

use super::policy::Policy;

/// How many spare lists a thread keeps.
const SPARES: usize = 4;

/// The largest list kept: a response of many policies (at most 64) is read as ever, its list
/// freed with it.
const MAX_CAPACITY: usize = 8;

thread_local! {
    static SPARE: RefCell<Vec<Vec<Policy>>> = const { RefCell::new(Vec::new()) };
}

/// An empty list: one the thread dropped, when it has one.
pub(crate) fn take() -> Vec<Policy> {
    SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Drops `list`'s policies and keeps its storage for [`take`].
pub(crate) fn give(mut list: Vec<Policy>) {
    if list.capacity() == 0 || list.capacity() > MAX_CAPACITY {
        return;
    }
    list.clear();
    // A thread that is ending frees it.
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARES {
            spare.push(list);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    #[test]
    fn a_list_given_back_is_taken_again_empty() {
        SPARE.with_borrow_mut(Vec::clear);
        let mut list = take();
        list.push(Policy::new(Dialect::IetfStructured).with_limit(5));
        let storage = list.as_ptr();
        give(list);
        let again = take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), storage);
        assert_eq!(take().capacity(), 0, "one spare, taken");
        give(Vec::with_capacity(MAX_CAPACITY + 1));
        assert_eq!(take().capacity(), 0, "too large to keep");
        for _ in 0..SPARES + 2 {
            give(Vec::with_capacity(1));
        }
        assert_eq!(SPARE.with_borrow(Vec::len), SPARES);
    }
}
