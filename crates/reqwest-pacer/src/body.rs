//! Reading a response's body — a 429's to classify it, any JSON response's for a GraphQL
//! query's cost when the rules ask for it — and handing the response on whole: the core's
//! [`pacer_core::read_body`] on the `http::Response` a `reqwest::Response` converts to, and
//! back, its URL kept.

use pacer_core::{BodyReading, Clock, PacerBody, Rules, Settlement};
use reqwest::{Body, Response, ResponseBuilderExt};
use std::sync::Arc;

/// The most of `response`'s body `rules` read (0: none): [`Rules::body_limit`].
#[inline]
pub(crate) fn body_limit(rules: &Rules, response: &Response) -> usize {
    rules.body_limit(response.status(), response.headers())
}

/// Reads the body of `response` as [`body_limit`] allows and, when it was read whole, shows it
/// to the rules ([`pacer_core::read_body`]: a 429's to the classifier, a GraphQL query's cost).
/// Returns the response, with the same status, headers, extensions, URL and body bytes, and
/// what the body said.
pub(crate) async fn read_body(rules: &Rules, response: Response) -> (Response, BodyReading) {
    if body_limit(rules, &response) == 0 {
        return (response, BodyReading::default());
    }
    let url = response.url().clone();
    let (read, said) = pacer_core::read_body(rules, http::Response::<Body>::from(response)).await;
    (rebuilt(url, read), said)
}

/// `response` whose body settles the request's tokens from the usage it reports as the caller
/// reads it ([`PacerBody::settling`]).
pub(crate) fn settling(
    response: Response,
    settlement: Settlement,
    clock: &Arc<dyn Clock>,
) -> Response {
    let url = response.url().clone();
    let response = http::Response::<Body>::from(response)
        .map(|body| PacerBody::untouched(body).settling(settlement, Arc::clone(clock)));
    rebuilt(url, response)
}

/// A `reqwest::Response` of `response`, at `url`.
fn rebuilt(url: reqwest::Url, response: http::Response<PacerBody<Body>>) -> Response {
    let (mut parts, body) = response.into_parts();
    // `Response::url` lives in an extension the conversion drops; put it back.
    if let Ok(carrier) = http::Response::builder().url(url).body(()) {
        parts.extensions.extend(carrier.into_parts().0.extensions);
    }
    Response::from(http::Response::from_parts(parts, Body::wrap(body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use pacer_core::BodyVerdict;
    use pacer_core::{BODY_LIMIT, QUERY_COST_BODY_LIMIT};

    fn response(content_type: &str, chunks: Vec<Vec<u8>>, known_length: bool) -> Response {
        with_status(429, content_type, chunks, known_length)
    }

    fn with_status(
        status: u16,
        content_type: &str,
        chunks: Vec<Vec<u8>>,
        known_length: bool,
    ) -> Response {
        let body = if known_length {
            Body::from(chunks.concat())
        } else {
            let stream = futures_util::stream::iter(
                chunks
                    .into_iter()
                    .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
            );
            Body::wrap_stream(stream)
        };
        let url = reqwest::Url::parse("https://api.test/v1/chat").unwrap();
        let r = http::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .header("x-kept", "yes")
            .url(url)
            .body(body)
            .unwrap();
        Response::from(r)
    }

    const QUOTA: &[u8] = br#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#;

    #[tokio::test]
    async fn a_json_429_is_classified_and_handed_on_whole() {
        for known_length in [true, false] {
            let chunks = vec![QUOTA[..10].to_vec(), QUOTA[10..].to_vec()];
            let r = response("application/json", chunks, known_length);
            let (r, BodyReading { verdict, .. }) = read_body(&Rules::default(), r).await;
            assert!(matches!(verdict, Some(BodyVerdict::QuotaExhausted { .. })));
            assert_eq!(r.status(), 429);
            assert_eq!(r.headers()["x-kept"], "yes");
            assert_eq!(r.url().as_str(), "https://api.test/v1/chat");
            assert_eq!(&r.bytes().await.unwrap()[..], QUOTA);
        }
    }

    #[tokio::test]
    async fn a_body_longer_than_the_limit_is_not_classified_and_reaches_the_caller_whole() {
        let mut long = QUOTA.to_vec();
        long.extend(std::iter::repeat_n(b' ', BODY_LIMIT));
        for known_length in [true, false] {
            let chunks: Vec<Vec<u8>> = long.chunks(1000).map(<[u8]>::to_vec).collect();
            let r = response("application/json", chunks, known_length);
            let (r, BodyReading { verdict, .. }) = read_body(&Rules::default(), r).await;
            assert_eq!(verdict, None, "known length: {known_length}");
            assert_eq!(r.bytes().await.unwrap().to_vec(), long);
        }
    }

    #[tokio::test]
    async fn a_body_of_another_type_is_not_read() {
        let r = response("text/plain", vec![QUOTA.to_vec()], false);
        let (r, BodyReading { verdict, .. }) = read_body(&Rules::default(), r).await;
        assert_eq!(verdict, None);
        assert_eq!(&r.bytes().await.unwrap()[..], QUOTA);
    }

    #[tokio::test]
    async fn a_stream_that_fails_hands_the_caller_its_bytes_then_the_error() {
        let stream = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"{\"error\":")),
            Err(std::io::Error::other("reset")),
        ]);
        let r = Response::from(
            http::Response::builder()
                .status(429)
                .header("content-type", "application/json")
                .body(Body::wrap_stream(stream))
                .unwrap(),
        );
        let (mut r, BodyReading { verdict, .. }) = read_body(&Rules::default(), r).await;
        assert_eq!(verdict, None);
        assert_eq!(
            r.chunk().await.unwrap().as_deref(),
            Some(&b"{\"error\":"[..])
        );
        assert!(r.chunk().await.is_err());
    }

    const GRAPHQL: &[u8] = br#"{"data":{"shop":{"name":"a"}},"extensions":{"cost":{"requestedQueryCost":10,"actualQueryCost":4,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":996,"restoreRate":50.0}}}}"#;

    #[tokio::test]
    async fn a_json_success_is_read_for_its_query_cost_only_when_the_rules_ask() {
        let reads = Rules::default().with_query_cost(true);
        for known_length in [true, false] {
            let chunks = vec![GRAPHQL[..30].to_vec(), GRAPHQL[30..].to_vec()];
            let r = with_status(200, "application/json", chunks.clone(), known_length);
            let (r, said) = read_body(&reads, r).await;
            assert_eq!(said.verdict, None, "a success is not classified");
            assert_eq!(said.cost.and_then(|c| c.requested()), Some(10));
            assert_eq!(r.headers()["x-kept"], "yes");
            assert_eq!(r.url().as_str(), "https://api.test/v1/chat");
            assert_eq!(&r.bytes().await.unwrap()[..], GRAPHQL);
            let r = with_status(200, "application/json", chunks, known_length);
            let (r, said) = read_body(&Rules::default(), r).await;
            assert!(said.cost.is_none(), "not asked: not read");
            assert_eq!(&r.bytes().await.unwrap()[..], GRAPHQL);
        }
        let r = with_status(200, "text/html", vec![GRAPHQL.to_vec()], true);
        assert!(read_body(&reads, r).await.1.cost.is_none(), "not JSON");
    }

    #[tokio::test]
    async fn a_429_is_both_classified_and_read_for_its_cost() {
        let reads = Rules::default().with_query_cost(true);
        let (_, said) = read_body(
            &reads,
            response("application/json", vec![QUOTA.to_vec()], false),
        )
        .await;
        assert!(matches!(
            said.verdict,
            Some(BodyVerdict::QuotaExhausted { .. })
        ));
        assert!(said.cost.is_none(), "no cost in it");
        let (_, said) = read_body(
            &reads,
            response("application/json", vec![GRAPHQL.to_vec()], true),
        )
        .await;
        assert_eq!(said.verdict, None);
        assert!(said.cost.is_some());
    }

    #[tokio::test]
    async fn a_body_longer_than_the_query_cost_limit_reaches_the_caller_whole_and_unread() {
        let reads = Rules::default().with_query_cost(true);
        let mut long = GRAPHQL[..GRAPHQL.len() - 1].to_vec();
        long.extend(std::iter::repeat_n(b' ', QUERY_COST_BODY_LIMIT));
        long.push(b'}');
        for known_length in [true, false] {
            let chunks: Vec<Vec<u8>> = long.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
            let r = with_status(200, "application/json", chunks, known_length);
            let (r, said) = read_body(&reads, r).await;
            assert!(said.cost.is_none(), "known length: {known_length}");
            assert_eq!(r.bytes().await.unwrap().to_vec(), long);
        }
    }
}
