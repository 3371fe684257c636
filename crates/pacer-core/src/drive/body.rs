//! Reading a response's body where the rules need it — a 429's JSON for the classifier, any
//! JSON body for a GraphQL query's cost with `QueryCost` on ([`Rules::body_limit`]) — and
//! handing it on whole ([`PacerBody`]). Both drivers read with [`read_body`].
//!
//! Why it is bounded: the classifier needs an error document, a few hundred bytes; a body past
//! [`BODY_LIMIT`](crate::BODY_LIMIT) is not one. A query's cost comes at the end of the
//! document, after the data, so that body is read whole, up to
//! [`QUERY_COST_BODY_LIMIT`](crate::QUERY_COST_BODY_LIMIT). Past its limit a body is not read
//! further: it would hold an unbounded stream in memory. A body whose length is known to be
//! longer is not read at all; one of unknown length is read up to the limit, and what was read
//! goes back in front of the rest of the stream, so the caller reads the same bytes either way.

use crate::{BodyReading, BoxError, Clock, Rules, Settlement};
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// The body of a response a driver hands on: the inner body, untouched, or — when the
    /// driver read it ([`read_body`]) — the bytes it read, then the rest of the inner body.
    /// Either way the caller reads the same bytes and trailers, and an inner body that failed
    /// while it was read fails for the caller after the bytes that came before.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::{BodyExt, Full};
    /// use pacer_core::{PacerBody, Rules, read_body};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let quota = r#"{"error":{"type":"insufficient_quota"}}"#;
    /// let response = http::Response::builder()
    ///     .status(429)
    ///     .header("content-type", "application/json")
    ///     .body(Full::new(Bytes::from(quota)))
    ///     .unwrap();
    /// let (response, said) = read_body(&Rules::default(), response).await;
    /// assert!(said.verdict.is_some(), "the classifier saw it");
    /// let body: PacerBody<Full<Bytes>> = response.into_body();
    /// assert_eq!(body.collect().await.unwrap().to_bytes(), quota);
    /// # }
    /// ```
    pub struct PacerBody<B> {
        #[pin]
        inner: Option<B>,
        prefix: Option<Bytes>,
        // A frame other than data met while the body was read (its trailers).
        pending: Option<Frame<Bytes>>,
        error: Option<BoxError>,
        // The request's tokens, settled from the usage the body reports at its end.
        settling: Option<Box<Settling>>,
    }
}

/// What a body settles at its end: the reservation, and the clock that says when.
struct Settling {
    settlement: Settlement,
    clock: Arc<dyn Clock>,
}

impl Settling {
    fn feed(&mut self, frame: &Frame<Bytes>) {
        if let Some(data) = frame.data_ref() {
            self.settlement.feed(data);
        }
    }

    fn end(self) {
        self.settlement.finish(self.clock.now());
    }
}

impl<B> PacerBody<B> {
    /// The inner body, untouched.
    #[must_use]
    pub fn untouched(inner: B) -> Self {
        PacerBody {
            inner: Some(inner),
            prefix: None,
            pending: None,
            error: None,
            settling: None,
        }
    }

    /// The same body, which shows itself to `settlement` as it goes by (the usage a model
    /// API's answer reports) and settles the request's tokens at its end, at `clock`'s time
    /// ([`Settlement::finish`]). A body not read to its end, or that fails, leaves the
    /// reservation as it stands. The caller reads the same bytes.
    #[must_use]
    pub fn settling(mut self, settlement: Settlement, clock: Arc<dyn Clock>) -> Self {
        self.settling = Some(Box::new(Settling { settlement, clock }));
        self
    }
}

impl<B: fmt::Debug> fmt::Debug for PacerBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerBody")
            .field("inner", &self.inner)
            .field("prefix", &self.prefix.as_ref().map(Bytes::len))
            .finish_non_exhaustive()
    }
}

impl<B> HttpBody for PacerBody<B>
where
    B: HttpBody<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        let polled = if let Some(prefix) = this.prefix.take().filter(|p| !p.is_empty()) {
            Poll::Ready(Some(Ok(Frame::data(prefix))))
        } else if let Some(frame) = this.pending.take() {
            Poll::Ready(Some(Ok(frame)))
        } else if let Some(inner) = this.inner.as_mut().as_pin_mut() {
            inner
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(Into::into)))
        } else {
            Poll::Ready(this.error.take().map(Err))
        };
        if this.settling.is_some() {
            match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    this.settling.as_mut().expect("some").feed(frame);
                    // A reader may stop at the end the body announces, without a last poll.
                    let ended = this.prefix.as_ref().is_none_or(Bytes::is_empty)
                        && this.pending.is_none()
                        && this.error.is_none()
                        && (this.inner.as_ref().get_ref())
                            .as_ref()
                            .is_none_or(HttpBody::is_end_stream);
                    if ended {
                        this.settling.take().expect("some").end();
                    }
                }
                Poll::Ready(None) => this.settling.take().expect("some").end(),
                Poll::Ready(Some(Err(_))) => drop(this.settling.take()),
                Poll::Pending => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.as_ref().is_none_or(Bytes::is_empty)
            && self.pending.is_none()
            && self.error.is_none()
            && self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let prefix = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        let (lower, upper) = match (&self.inner, &self.error) {
            (Some(inner), _) => {
                let hint = inner.size_hint();
                (hint.lower(), hint.upper())
            }
            (None, Some(_)) => (0, None),
            (None, None) => (0, Some(0)),
        };
        // The upper bound first: `set_lower` refuses a lower bound above the upper one.
        let mut hint = SizeHint::new();
        if let Some(upper) = upper {
            hint.set_upper(upper.saturating_add(prefix));
        }
        hint.set_lower(lower.saturating_add(prefix));
        hint
    }
}

/// Reads `response`'s body as `rules` ask ([`Rules::body_limit`]) and shows a whole one to
/// them ([`Rules::judge_body`]). Returns the response with its body rebuilt from what was read
/// and the rest (the same status, headers, extensions and bytes), and what the body said: the
/// classifier's verdict on a 429's, a GraphQL query's cost. A response whose body the rules
/// do not read comes back at once, its body untouched. The driver's one await on a body; it
/// reads no clock.
pub async fn read_body<B>(
    rules: &Rules,
    response: http::Response<B>,
) -> (http::Response<PacerBody<B>>, BodyReading)
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let limit = rules.body_limit(response.status(), response.headers());
    // A body known to be longer than the limit (its size hint, where no `Content-Length` says
    // so) is not read either.
    if limit == 0 || response.body().size_hint().lower() > limit as u64 {
        return (response.map(PacerBody::untouched), BodyReading::default());
    }
    let (parts, mut body) = response.into_parts();
    let mut read = Vec::new();
    let (mut pending, mut error) = (None, None);
    // `whole`: every data frame was read (the body ended, or its trailers came).
    let (mut whole, mut ended) = (false, false);
    while read.len() <= limit {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => read.extend_from_slice(&data),
                Err(trailers) => {
                    pending = Some(trailers);
                    whole = true;
                    break;
                }
            },
            Some(Err(e)) => {
                error = Some(e.into());
                break;
            }
            None => {
                (whole, ended) = (true, true);
                break;
            }
        }
    }
    let said = if whole && read.len() <= limit {
        rules.judge_body(parts.status, &parts.headers, &read)
    } else {
        BodyReading::default()
    };
    let body = PacerBody {
        inner: (!ended && error.is_none()).then_some(body),
        prefix: Some(Bytes::from(read)),
        pending,
        error,
        settling: None,
    };
    (http::Response::from_parts(parts, body), said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BodyVerdict;
    use http_body_util::BodyExt;
    use std::collections::VecDeque;

    /// A body of unknown length: these frames, one per poll.
    struct Chunks(VecDeque<Result<Frame<Bytes>, std::io::Error>>);

    impl HttpBody for Chunks {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.pop_front())
        }
    }

    fn data(s: &[u8]) -> Result<Frame<Bytes>, std::io::Error> {
        Ok(Frame::data(Bytes::copy_from_slice(s)))
    }

    fn response(
        status: u16,
        frames: Vec<Result<Frame<Bytes>, std::io::Error>>,
    ) -> http::Response<Chunks> {
        http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .header("x-kept", "yes")
            .body(Chunks(frames.into()))
            .unwrap()
    }

    const QUOTA: &[u8] = br#"{"error":{"type":"insufficient_quota"}}"#;

    #[tokio::test]
    async fn a_json_429_read_in_pieces_is_judged_and_handed_on_with_its_trailers() {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-trailer", "t".parse().unwrap());
        let frames = vec![
            data(&QUOTA[..9]),
            data(&QUOTA[9..]),
            Ok(Frame::trailers(trailers)),
        ];
        let (r, BodyReading { verdict, cost }) =
            read_body(&Rules::default(), response(429, frames)).await;
        assert!(matches!(verdict, Some(BodyVerdict::QuotaExhausted { .. })));
        assert!(cost.is_none());
        assert_eq!(r.headers()["x-kept"], "yes");
        let collected = r.into_body().collect().await.unwrap();
        assert_eq!(
            collected.trailers().map(|t| &t["x-trailer"]),
            Some(&"t".parse().unwrap())
        );
        assert_eq!(&collected.to_bytes()[..], QUOTA);
    }

    #[tokio::test]
    async fn a_body_of_unknown_length_past_the_limit_is_unjudged_and_whole() {
        let mut frames = vec![data(QUOTA)];
        frames.extend((0..9).map(|_| data(&[b' '; 1024])));
        let want: Vec<u8> = [QUOTA, &[b' '; 9 * 1024]].concat();
        let (r, BodyReading { verdict, .. }) =
            read_body(&Rules::default(), response(429, frames)).await;
        assert_eq!(verdict, None, "past BODY_LIMIT");
        assert_eq!(
            &r.into_body().collect().await.unwrap().to_bytes()[..],
            &want[..]
        );
    }

    #[tokio::test]
    async fn a_body_that_fails_hands_the_caller_its_bytes_then_the_error() {
        let frames = vec![data(b"{\"error\":"), Err(std::io::Error::other("reset"))];
        let (r, BodyReading { verdict, .. }) =
            read_body(&Rules::default(), response(429, frames)).await;
        assert_eq!(verdict, None);
        let mut body = r.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"{\"error\":");
        assert!(body.frame().await.unwrap().is_err());
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_success_is_read_only_for_a_query_cost_and_only_when_asked() {
        let body = br#"{"data":{},"extensions":{"cost":{"requestedQueryCost":10,"actualQueryCost":4,"throttleStatus":{"maximumAvailable":100.0,"currentlyAvailable":90,"restoreRate":5.0}}}}"#;
        let (r, BodyReading { cost, .. }) =
            read_body(&Rules::default(), response(200, vec![data(body)])).await;
        assert!(cost.is_none(), "not asked");
        assert_eq!(&r.into_body().collect().await.unwrap().to_bytes()[..], body);
        let reads = Rules::default().with_query_cost(true);
        let (r, BodyReading { cost, .. }) =
            read_body(&reads, response(200, vec![data(body)])).await;
        assert_eq!(cost.and_then(|c| c.requested()), Some(10));
        assert_eq!(&r.into_body().collect().await.unwrap().to_bytes()[..], body);
    }

    #[tokio::test]
    async fn a_body_read_whole_or_in_part_gives_a_size_hint_that_holds() {
        // Read to its end: the hint is exact.
        let (r, _) = read_body(&Rules::default(), response(429, vec![data(QUOTA)])).await;
        assert_eq!(r.body().size_hint().exact(), Some(QUOTA.len() as u64));
        // Read in part (past the limit): the prefix, and whatever the rest may hold.
        let mut frames = vec![data(QUOTA)];
        frames.extend((0..9).map(|_| data(&[b' '; 1024])));
        let (r, _) = read_body(&Rules::default(), response(429, frames)).await;
        let hint = r.body().size_hint();
        assert!(hint.lower() > crate::BODY_LIMIT as u64, "{hint:?}");
        assert_eq!(hint.upper(), None);
    }

    #[tokio::test]
    async fn a_body_whose_size_hint_is_past_the_limit_is_not_read() {
        let long = http_body_util::Full::new(Bytes::from(vec![b' '; crate::BODY_LIMIT + 1]));
        let response = http::Response::builder()
            .status(429)
            .header("content-type", "application/json")
            .body(long)
            .unwrap();
        let (r, said) = read_body(&Rules::default(), response).await;
        assert_eq!(said, BodyReading::default());
        assert!(r.body().prefix.is_none(), "untouched");
    }
}
