//! Which requests share a rate: the endpoint key.

use pacer_core::KeyMode;
use reqwest::{Request, Url};
use std::fmt;
use url::Position;

/// Derives the endpoint key of a request. Requests with the same key share one adaptive rate, one
/// queue and one rate-limit header state within a limiter; different keys never slow each other.
///
/// Keys appear in logs: never put a secret (a token, a query string) in one.
///
/// # Example
///
/// One rate per tenant, read from a header the application sets:
///
/// ```
/// use reqwest::Request;
/// use reqwest_pacer::EndpointKeyExtractor;
///
/// #[derive(Debug)]
/// struct PerTenant;
///
/// impl EndpointKeyExtractor for PerTenant {
///     fn key(&self, request: &Request) -> String {
///         let tenant = request
///             .headers()
///             .get("x-tenant")
///             .and_then(|v| v.to_str().ok())
///             .unwrap_or("none");
///         format!("{}|{tenant}", request.url().host_str().unwrap_or(""))
///     }
/// }
///
/// let mut r = Request::new(reqwest::Method::GET, "https://api.test/x".parse().unwrap());
/// r.headers_mut().insert("x-tenant", "acme".parse().unwrap());
/// assert_eq!(PerTenant.key(&r), "api.test|acme");
/// ```
pub trait EndpointKeyExtractor: Send + Sync + fmt::Debug + 'static {
    /// The key of `request`.
    fn key(&self, request: &Request) -> String;

    /// Appends the key of `request` to `out`, which is empty on entry. The middleware calls
    /// this, not [`key`](Self::key), on every request, into a buffer it reuses: an extractor
    /// that can write its key without allocating a `String` of its own may override it, and must
    /// then write what `key` returns. The default appends `key`'s result.
    fn write_key(&self, request: &Request, out: &mut String) {
        out.push_str(&self.key(request));
    }
}

/// The key of `url` in `mode`.
#[cfg(test)]
fn key_of(mode: KeyMode, url: &Url) -> String {
    let mut key = String::new();
    write_key_of(mode, url, &mut key);
    key
}

/// The key `mode` gives `url`, when it is a piece of the URL's own text: a URL that states its
/// port and no credentials holds its `scheme://host:port` whole, the key the parts give (the
/// property test below). Such a key needs no buffer.
pub(crate) fn key_in_url(mode: KeyMode, url: &Url) -> Option<&str> {
    let plain = mode == KeyMode::SchemeHostPort
        && url.port().is_some()
        && url.has_host()
        // No credentials: nothing between the `//` and the host.
        && url[Position::BeforeUsername..Position::BeforeHost].is_empty();
    plain.then(|| &url[..Position::AfterPort])
}

/// Appends the key of `url` in `mode` to `out`.
fn write_key_of(mode: KeyMode, url: &Url, out: &mut String) {
    if let Some(key) = key_in_url(mode, url) {
        out.push_str(key);
        return;
    }
    mode.write_key(
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default(),
        url.path(),
        out,
    );
}

impl EndpointKeyExtractor for KeyMode {
    fn key(&self, request: &Request) -> String {
        let mut key = String::new();
        write_key_of(*self, request.url(), &mut key);
        key
    }

    fn write_key(&self, request: &Request, out: &mut String) {
        write_key_of(*self, request.url(), out);
    }
}

/// An endpoint key extractor made of a closure.
#[derive(Clone, Copy)]
pub struct KeyFn<F>(pub F);

impl<F> fmt::Debug for KeyFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyFn")
    }
}

impl<F> EndpointKeyExtractor for KeyFn<F>
where
    F: Fn(&Request) -> String + Send + Sync + 'static,
{
    fn key(&self, request: &Request) -> String {
        (self.0)(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    #[test]
    fn keys_by_mode() {
        let table = [
            (
                "https://api.test/repos/a?token=s3cret",
                KeyMode::SchemeHostPort,
                "https://api.test:443",
            ),
            (
                "http://api.test:8080/x",
                KeyMode::SchemeHostPort,
                "http://api.test:8080",
            ),
            ("https://user:pw@api.test/x", KeyMode::Host, "api.test"),
            (
                "https://api.test/search/code?q=1",
                KeyMode::HostAndFirstSegment,
                "https://api.test:443/search",
            ),
            (
                "https://api.test",
                KeyMode::HostAndFirstSegment,
                "https://api.test:443/",
            ),
            ("https://a.test/x", KeyMode::Global, "*"),
        ];
        for (url, mode, key) in table {
            let url = url.parse().unwrap();
            assert_eq!(key_of(mode, &url), key, "{url} {mode:?}");
            let mut written = String::new();
            EndpointKeyExtractor::write_key(
                &mode,
                &Request::new(reqwest::Method::GET, url.clone()),
                &mut written,
            );
            assert_eq!(written, key, "write_key {url} {mode:?}");
        }
    }

    /// The key from the URL's parts, as the mode documents it.
    fn origin_from_parts(url: &Url) -> String {
        format!(
            "{}://{}:{}",
            url.scheme(),
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        )
    }

    proptest::proptest! {
        /// Copying the URL's own text gives the key its parts give, whatever the URL.
        #[test]
        fn the_origin_copied_from_the_text_is_the_origin_of_the_parts(
            scheme in "(http|https|HTTPS|ws|wss|ftp|file|x-api)",
            user in proptest::option::of("[a-z]{1,4}(:[a-z0-9]{0,4})?"),
            host in "([a-zA-Z][a-zA-Z0-9-]{0,8}(\\.[a-z]{1,5}){0,2}|[0-9]{1,3}(\\.[0-9]{1,3}){3}|\\[::[0-9a-f]{1,4}\\])",
            port in proptest::option::of(proptest::prop_oneof![Just(80u16), Just(443), 0u16..=65535]),
            path in "(/[a-z0-9%]{0,6}){0,3}(\\?[a-z=&]{0,8})?",
        ) {
            let text = format!(
                "{scheme}://{}{host}{}{path}",
                user.map(|u| format!("{u}@")).unwrap_or_default(),
                port.map(|p| format!(":{p}")).unwrap_or_default(),
            );
            let Ok(url) = text.parse::<Url>() else {
                return Ok(());
            };
            let origin = origin_from_parts(&url);
            proptest::prop_assert_eq!(key_of(KeyMode::SchemeHostPort, &url), origin.clone(), "{}", url);
            let segment = url.path_segments().and_then(|mut s| s.next()).unwrap_or("");
            proptest::prop_assert_eq!(
                key_of(KeyMode::HostAndFirstSegment, &url),
                format!("{origin}/{segment}"),
                "{}",
                url
            );
        }
    }
}
