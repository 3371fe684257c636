//! Which request bodies can be sent again.

use bytes::Bytes;
use http_body_util::{Empty, Full};

/// A request body that can be sent again, for the retry of a throttled request: what
/// `reqwest::Request::try_clone` is to the middleware. A body that cannot (a stream) answers
/// `None`, and its request is sent once.
///
/// Implemented for the bodies a client usually sends whole: [`Full`], [`Empty`], [`Bytes`],
/// `String`, `Vec<u8>`, `&'static str`, `&'static [u8]` and `()`; with the `tonic` feature, for
/// tonic's `tonic::body::Body`, which answers `None` (see its implementation). A body type of
/// one's own implements it in a line:
///
/// ```
/// use tower_pacer::ReplayBody;
///
/// #[derive(Clone)]
/// struct Json(String);
///
/// impl ReplayBody for Json {
///     fn replay(&self) -> Option<Self> {
///         Some(self.clone())
///     }
/// }
///
/// /// A stream is read once: never sent again.
/// struct Upload;
///
/// impl ReplayBody for Upload {
///     fn replay(&self) -> Option<Self> {
///         None
///     }
/// }
/// # assert!(Json("{}".into()).replay().is_some());
/// # assert!(Upload.replay().is_none());
/// ```
pub trait ReplayBody: Sized {
    /// A copy of the body to send again, or `None` if it cannot be.
    fn replay(&self) -> Option<Self>;
}

impl<D: Clone> ReplayBody for Full<D> {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl<D> ReplayBody for Empty<D> {
    fn replay(&self) -> Option<Self> {
        Some(Empty::new())
    }
}

macro_rules! replay_by_clone {
    ($($t:ty),*) => {
        $(impl ReplayBody for $t {
            fn replay(&self) -> Option<Self> {
                Some(self.clone())
            }
        })*
    };
}

replay_by_clone!(Bytes, String, Vec<u8>, &'static str, &'static [u8], ());

/// tonic's request body is the stream of a call's encoded messages, read once: a throttled call
/// (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`) is not sent again by the layer but handed back, its
/// `Status` to the caller, while the endpoint keeps what the answer taught (the cut, the
/// `grpc-retry-pushback-ms`): a call made again waits for it. Implemented here because a user's
/// crate cannot (neither the trait nor the type would be its own).
#[cfg(feature = "tonic")]
impl ReplayBody for tonic::body::Body {
    fn replay(&self) -> Option<Self> {
        None
    }
}
