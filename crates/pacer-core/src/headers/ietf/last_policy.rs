//! The last `RateLimit-Policy` field each thread read, and what it read.
//!
//! Servers send the same `RateLimit-Policy` on every response: a field equal to the last one
//! byte for byte is copied from what was read, not read again. What a field says depends on its
//! bytes alone (no date, no `now`), so the copy is what a parse gives (a property test in the
//! parent module holds it to that).

use super::{PolicyMembers, parse_policy};
use crate::headers::spare;
use std::cell::RefCell;

thread_local! {
    /// The last field this thread read, and what it read (`None`: malformed): about
    /// `MAX_FIELD_BYTES` of text (the field's lines joined) and 64 policies a thread.
    static LAST_POLICY: RefCell<Option<(String, Option<PolicyMembers>)>> =
        const { RefCell::new(None) };
}

/// The members of the `RateLimit-Policy` field `field` ([`parse_policy`]): a copy of what this
/// thread read last when `field` is the same text, else read, and kept in its place. While the
/// thread's locals are being destroyed, read and not kept.
pub(super) fn members(field: &str) -> Option<PolicyMembers> {
    let kept = LAST_POLICY.try_with(|cell| {
        let last = &mut *cell.borrow_mut();
        if let Some((text, members)) = last.as_ref()
            && text == field
        {
            return members.as_ref().map(|(named, integers)| {
                let mut copy = spare::take();
                copy.extend(named.iter().cloned());
                (copy, integers.clone())
            });
        }
        let members = parse_policy(field);
        match last {
            Some((text, kept)) => {
                text.clear();
                text.push_str(field);
                kept.clone_from(&members);
            }
            None => *last = Some((field.to_owned(), members.clone())),
        }
        members
    });
    kept.unwrap_or_else(|_| parse_policy(field))
}
