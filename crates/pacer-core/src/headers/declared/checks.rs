//! The checks a declared dialect's names pass: header names, field patterns and pair keys.

use http::HeaderName;

use super::spec::FieldMatch;
use crate::validation::Checker;

/// The longest name and key: a policy name as servers write them is a few words.
pub(super) const MAX_NAME: usize = 64;

pub(super) fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// A name or key: 1 to 64 visible ASCII characters.
pub(super) fn check_name(c: &mut Checker, option: &str, name: &str) {
    if name.is_empty() {
        c.push(option, "\"\"", "must not be empty");
    } else if name.len() > MAX_NAME || !name.bytes().all(|b| b.is_ascii_graphic()) {
        c.push(
            option,
            quoted(name),
            format!("must be 1 to {MAX_NAME} visible ASCII characters"),
        );
    }
}

const HEADER_RULE: &str = "must be a header name: letters, digits and !#$%&'*+-.^_`|~";

/// A header name, or the problem with it; a pattern is allowed only in `Field`.
pub(super) fn header_name(c: &mut Checker, option: &str, value: &str) -> Option<HeaderName> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        c.push(option, quoted(value), "must not be empty");
        return None;
    }
    if trimmed.contains('*') {
        c.push(
            option,
            quoted(value),
            "a pattern (*) is allowed only in Field",
        );
        return None;
    }
    match HeaderName::from_bytes(trimmed.as_bytes()) {
        Ok(h) => Some(h),
        Err(_) => {
            c.push(option, quoted(value), HEADER_RULE);
            None
        }
    }
}

/// `Field`: a header name, or a prefix ending in `*`.
pub(super) fn field_match(c: &mut Checker, value: &str) -> Option<FieldMatch> {
    let trimmed = value.trim();
    let Some(prefix) = trimmed.strip_suffix('*') else {
        return header_name(c, "Field", value).map(FieldMatch::Exact);
    };
    if prefix.is_empty()
        || prefix.contains('*')
        || HeaderName::from_bytes(prefix.as_bytes()).is_err()
    {
        c.push(
            "Field",
            quoted(value),
            "must be a header name, or a header name's start followed by one * (Foo-RateLimit-*)",
        );
        return None;
    }
    Some(FieldMatch::Prefix(
        prefix.to_ascii_lowercase().into_boxed_str(),
    ))
}
