//! The last `RateLimit-Policy` field each thread read, and what it read.
//!
//! Servers send the same `RateLimit-Policy` on every response: a field equal to the last one
//! byte for byte is copied from what was read, not read again. What a field says depends on its
//! bytes alone (no date, no `now`), so the copy is what a parse gives (a property test in the
//! parent module holds it to that).

use super::{PolicyMembers, parse_policy};
use crate::headers::bounds::MAX_FIELD_BYTES;
use crate::headers::spare;
use http::HeaderValue;
use std::cell::RefCell;

thread_local! {
    /// The last field this thread read, and what it read (`None`: malformed): about
    /// `MAX_FIELD_BYTES` of text (the field's lines joined) and 64 policies a thread.
    static LAST_POLICY: RefCell<Option<(String, Option<PolicyMembers>)>> =
        const { RefCell::new(None) };
}

/// A copy of kept members, its list of policies from the thread's spare ones.
fn copy(members: Option<&PolicyMembers>) -> Option<PolicyMembers> {
    members.map(|(named, integers)| {
        let mut copy = spare::take();
        copy.extend(named.iter().cloned());
        (copy, integers.clone())
    })
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
            return copy(members.as_ref());
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

/// [`members`] of a one-line field `value`, compared with the kept field byte for byte before
/// its text is checked: a kept field is visible ASCII, so an equal line is too. A line that is
/// longer than [`MAX_FIELD_BYTES`] or not visible ASCII is malformed (`None`), as
/// `collect::Lines` takes it.
pub(super) fn members_of_line(value: &HeaderValue) -> Option<PolicyMembers> {
    if value.len() > MAX_FIELD_BYTES {
        return None;
    }
    let kept = LAST_POLICY.try_with(|cell| {
        let last = cell.borrow();
        let (text, members) = last.as_ref()?;
        (text.as_bytes() == value.as_bytes()).then(|| copy(members.as_ref()))
    });
    match kept {
        Ok(Some(members)) => members,
        _ => members(value.to_str().ok()?),
    }
}
