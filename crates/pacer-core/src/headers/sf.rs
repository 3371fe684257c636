//! Structured-field (RFC 9651) parsing of the IETF fields, with the `sfv` crate.
//!
//! `sfv`'s visitor API is used instead of its owned `List`/`Dictionary` types so that a field is
//! validated and read in one pass without building index maps. The collectors only *record*
//! what they see (later duplicates overwrite earlier ones, as RFC 9651 requires); all checks of
//! types and ranges happen afterwards, on the recorded values.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;

use sfv::visitor::{
    DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ListVisitor,
    ParameterVisitor,
};
use sfv::{BareItemFromInput, KeyRef, Parser};

use http::HeaderValue;

use super::num::trimmed;

/// A bare item reduced to the types the rate-limit fields use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bare<'de> {
    Int(i64),
    Str(SfString<'de>),
    Token(&'de str),
    Bytes(Vec<u8>),
    /// Any other type (decimal, boolean, date, display string) or an inner list.
    Other,
}

impl<'de> From<BareItemFromInput<'de>> for Bare<'de> {
    fn from(item: BareItemFromInput<'de>) -> Bare<'de> {
        match item {
            BareItemFromInput::Integer(i) => Bare::Int(i64::from(i)),
            BareItemFromInput::String(Cow::Borrowed(s)) => Bare::Str(SfString::from(s.as_str())),
            BareItemFromInput::String(Cow::Owned(s)) => Bare::Str(SfString::from(String::from(s))),
            BareItemFromInput::Token(t) => Bare::Token(t.as_str()),
            BareItemFromInput::ByteSequence(b) => Bare::Bytes(b),
            _ => Bare::Other,
        }
    }
}

/// An SF String's text, held as its bytes: RFC 9651 (§3.3.3) allows only visible ASCII and
/// space in it, which is always UTF-8. A name is compared byte for byte and made a `str` only
/// when it is kept (checking a short name's UTF-8 costs more than comparing it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SfString<'de>(Cow<'de, [u8]>);

impl<'de> SfString<'de> {
    /// The bytes `0x20..=0x7e` of a field, as read.
    fn ascii(bytes: &'de [u8]) -> SfString<'de> {
        debug_assert!(bytes.iter().all(|b| (0x20..=0x7e).contains(b)));
        SfString(Cow::Borrowed(bytes))
    }

    /// Its bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its text (made only from text or from visible ASCII, so never empty for want of it).
    pub(crate) fn text(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl<'de> From<&'de str> for SfString<'de> {
    fn from(text: &'de str) -> SfString<'de> {
        SfString(Cow::Borrowed(text.as_bytes()))
    }
}

impl From<String> for SfString<'_> {
    fn from(text: String) -> Self {
        SfString(Cow::Owned(text.into_bytes()))
    }
}

impl Bare<'_> {
    /// A non-negative integer.
    pub(crate) fn non_negative(&self) -> Option<u64> {
        match self {
            Bare::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
}

/// The parameters of a list member that the IETF fields define; others are ignored.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Params<'de> {
    pub(crate) r: Option<Bare<'de>>,
    pub(crate) t: Option<Bare<'de>>,
    pub(crate) q: Option<Bare<'de>>,
    pub(crate) w: Option<Bare<'de>>,
    pub(crate) qu: Option<Bare<'de>>,
    pub(crate) pk: Option<Bare<'de>>,
}

impl<'de> Params<'de> {
    /// Where the parameter `key` goes; `None` for a parameter the IETF fields do not define.
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<Bare<'de>>> {
        Some(match key {
            b"r" => &mut self.r,
            b"t" => &mut self.t,
            b"q" => &mut self.q,
            b"w" => &mut self.w,
            b"qu" => &mut self.qu,
            b"pk" => &mut self.pk,
            _ => return None,
        })
    }
}

/// One member of a list: its item and parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member<'de> {
    pub(crate) item: Bare<'de>,
    pub(crate) params: Params<'de>,
}

/// The error that makes `sfv` stop: the field is not what the IETF fields allow.
#[derive(Debug)]
struct Reject;

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a rate-limit list member")
    }
}

impl std::error::Error for Reject {}

/// Parses `input` as an SF List of Items; `None` when it is not a valid one or holds an inner
/// list.
#[cfg(test)]
pub(crate) fn parse_list(input: &str) -> Option<Vec<Member<'_>>> {
    simple_list(input).or_else(|| sfv_list(input))
}

/// Reads the SF List of Items `input` member by member into a state made with `init`: `read`
/// takes each member in turn and may refuse it. `None` when the list is not a valid one, holds
/// an inner list or more than `max` members, or `read` refused a member: the whole field is
/// then ignored. The members are not collected first (the shape servers send is read in one
/// pass, see [`simple_each`]; any other text by `sfv`, with a fresh state).
pub(crate) fn read_list<'de, S>(
    input: &'de str,
    max: usize,
    init: impl Fn() -> S,
    read: impl FnMut(&mut S, &Member<'de>) -> Option<()>,
) -> Option<S> {
    read_list_bytes(input.as_bytes(), || Some(input), max, init, read)
}

/// [`read_list`] of a one-line field `line`, whose text is checked (visible ASCII, as
/// `HeaderValue::to_str` checks it) only when it is not in the shape [`simple_each`] reads:
/// that shape is visible ASCII.
pub(crate) fn read_line<'de, S>(
    line: &'de HeaderValue,
    max: usize,
    init: impl Fn() -> S,
    read: impl FnMut(&mut S, &Member<'de>) -> Option<()>,
) -> Option<S> {
    read_list_bytes(line.as_bytes(), || line.to_str().ok(), max, init, read)
}

/// [`read_list`] of the field `input`, whose text `text` gives (`None`: malformed) when `sfv`
/// must read it.
fn read_list_bytes<'de, S>(
    input: &'de [u8],
    text: impl FnOnce() -> Option<&'de str>,
    max: usize,
    init: impl Fn() -> S,
    mut read: impl FnMut(&mut S, &Member<'de>) -> Option<()>,
) -> Option<S> {
    let mut state = init();
    let mut count = 0;
    let each = |m: &Member<'de>| {
        count += 1;
        count <= max && read(&mut state, m).is_some()
    };
    match simple_each(input, each) {
        Some(true) => return Some(state),
        Some(false) => return None,
        None => {}
    }
    let members = sfv_list(text()?).filter(|m| m.len() <= max)?;
    let mut state = init();
    for m in members {
        read(&mut state, &m)?;
    }
    Some(state)
}

/// [`parse_list`] by `sfv` alone.
fn sfv_list(input: &str) -> Option<Vec<Member<'_>>> {
    Parser::new(input)
        .parse_list_with_visitor(ListCollector::default())
        .ok()
}

/// [`simple_each`]'s members, collected.
#[cfg(test)]
fn simple_list(input: &str) -> Option<Vec<Member<'_>>> {
    let mut members = Vec::new();
    simple_each(input.as_bytes(), |m| {
        members.push(m.clone());
        true
    })?;
    Some(members)
}

/// The shape servers send — members that are a String without escapes or an Integer, each with
/// `;key=Integer` parameters (`"default";r=50;t=30`) — read without `sfv`, in a third of its
/// time, each member handed to `each` as it is read. `None` for anything else, valid or not,
/// which `sfv` then reads: whatever this hands on is what `sfv` returns for the same input (a
/// property test below holds it to that). `Some(false)` when `each` refused a member (it
/// returned false; the rest is not read), `Some(true)` when the list was read whole.
fn simple_each<'de>(input: &'de [u8], mut each: impl FnMut(&Member<'de>) -> bool) -> Option<bool> {
    // RFC 9651 §4.2: leading and trailing SP are not part of the list.
    let b = &input[trimmed(input, |c| c == b' ')];
    let mut p = 0;
    loop {
        let item = match *b.get(p)? {
            b'"' => {
                let start = p + 1;
                let mut q = start;
                loop {
                    match *b.get(q)? {
                        b'"' => break,
                        b'\\' => return None,
                        0x20..=0x7e => q += 1,
                        _ => return None,
                    }
                }
                p = q + 1;
                Bare::Str(SfString::ascii(&b[start..q]))
            }
            b'-' | b'0'..=b'9' => {
                let (n, next) = simple_integer(b, p)?;
                p = next;
                Bare::Int(n)
            }
            _ => return None,
        };
        // Built where it is handed on, by reference: a member is 224 bytes, and each copy of it
        // a call to `memcpy`.
        let mut member = Member {
            item,
            params: Params::default(),
        };
        while b.get(p) == Some(&b';') {
            p += 1;
            while b.get(p) == Some(&b' ') {
                p += 1;
            }
            let key_start = p;
            if !matches!(b.get(p), Some(b'a'..=b'z' | b'*')) {
                return None;
            }
            while matches!(
                b.get(p),
                Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*')
            ) {
                p += 1;
            }
            let key = &b[key_start..p];
            if b.get(p) != Some(&b'=') {
                return None;
            }
            let (n, next) = simple_integer(b, p + 1)?;
            p = next;
            if let Some(slot) = member.params.slot(key) {
                *slot = Some(Bare::Int(n));
            }
        }
        if !each(&member) {
            return Some(false);
        }
        while matches!(b.get(p), Some(b' ' | b'\t')) {
            p += 1;
        }
        if p == b.len() {
            return Some(true);
        }
        if b[p] != b',' {
            return None;
        }
        p += 1;
        while matches!(b.get(p), Some(b' ' | b'\t')) {
            p += 1;
        }
    }
}

/// An SF Integer at `p` (`-`? and 1 to 15 digits, not followed by a decimal point), and the
/// position after it.
fn simple_integer(b: &[u8], mut p: usize) -> Option<(i64, usize)> {
    let negative = b.get(p) == Some(&b'-');
    if negative {
        p += 1;
    }
    let start = p;
    let mut n: i64 = 0;
    while let Some(d @ b'0'..=b'9') = b.get(p).copied() {
        if p - start == 15 {
            return None;
        }
        n = n * 10 + i64::from(d - b'0');
        p += 1;
    }
    if p == start || b.get(p) == Some(&b'.') {
        return None;
    }
    Some((if negative { -n } else { n }, p))
}

#[derive(Default)]
struct ListCollector<'de> {
    members: Vec<Member<'de>>,
}

impl<'de> ListVisitor<'de> for ListCollector<'de> {
    type Out = Vec<Member<'de>>;
    type Error = Reject;

    fn entry(&mut self) -> Result<impl EntryVisitor<'de>, Self::Error> {
        Ok(MemberSlot(&mut self.members))
    }

    fn finish(self) -> Result<Self::Out, Self::Error> {
        Ok(self.members)
    }
}

struct MemberSlot<'a, 'de>(&'a mut Vec<Member<'de>>);

impl<'de> EntryVisitor<'de> for MemberSlot<'_, 'de> {
    type Error = Reject;

    fn item(self) -> Result<impl ItemVisitor<'de>, Self::Error> {
        Ok(self)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Self::Error> {
        Err::<Ignored, _>(Reject)
    }
}

impl<'de> ItemVisitor<'de> for MemberSlot<'_, 'de> {
    type Out = ();
    type Error = Infallible;

    fn bare_item(
        self,
        bare_item: BareItemFromInput<'de>,
    ) -> Result<impl ParameterVisitor<'de, Out = ()>, Self::Error> {
        self.0.push(Member {
            item: bare_item.into(),
            params: Params::default(),
        });
        let slot = self.0.last_mut().map(|m| &mut m.params);
        Ok(ParamCollector(slot))
    }
}

struct ParamCollector<'a, 'de>(Option<&'a mut Params<'de>>);

impl<'de> ParameterVisitor<'de> for ParamCollector<'_, 'de> {
    type Out = ();
    type Error = Infallible;

    fn parameter(
        &mut self,
        key: &'de KeyRef,
        value: BareItemFromInput<'de>,
    ) -> Result<(), Self::Error> {
        if let Some(slot) = self
            .0
            .as_deref_mut()
            .and_then(|p| p.slot(key.as_str().as_bytes()))
        {
            *slot = Some(value.into());
        }
        Ok(())
    }

    fn finish(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The members of a draft-07 `RateLimit` dictionary.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Draft07<'de> {
    pub(crate) limit: Option<Bare<'de>>,
    pub(crate) remaining: Option<Bare<'de>>,
    pub(crate) reset: Option<Bare<'de>>,
}

/// Parses `input` as an SF Dictionary and keeps its `limit`, `remaining` and `reset` members.
pub(crate) fn parse_draft07(input: &str) -> Option<Draft07<'_>> {
    Parser::new(input)
        .parse_dictionary_with_visitor(Draft07::default())
        .ok()
}

impl<'de> DictionaryVisitor<'de> for Draft07<'de> {
    type Out = Draft07<'de>;
    type Error = Infallible;

    fn entry(&mut self, key: &'de KeyRef) -> Result<impl EntryVisitor<'de>, Self::Error> {
        Ok(match key.as_str() {
            "limit" => Some(ValueSlot(&mut self.limit)),
            "remaining" => Some(ValueSlot(&mut self.remaining)),
            "reset" => Some(ValueSlot(&mut self.reset)),
            _ => None,
        })
    }

    fn finish(self) -> Result<Self::Out, Self::Error> {
        Ok(self)
    }
}

struct ValueSlot<'a, 'de>(&'a mut Option<Bare<'de>>);

impl<'de> EntryVisitor<'de> for ValueSlot<'_, 'de> {
    type Error = Infallible;

    fn item(self) -> Result<impl ItemVisitor<'de>, Self::Error> {
        Ok(self)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Self::Error> {
        *self.0 = Some(Bare::Other);
        Ok(Ignored)
    }
}

impl<'de> ItemVisitor<'de> for ValueSlot<'_, 'de> {
    type Out = ();
    type Error = Infallible;

    fn bare_item(
        self,
        bare_item: BareItemFromInput<'de>,
    ) -> Result<impl ParameterVisitor<'de, Out = ()>, Self::Error> {
        *self.0 = Some(bare_item.into());
        Ok(Ignored)
    }
}

#[cfg(test)]
mod tests;
