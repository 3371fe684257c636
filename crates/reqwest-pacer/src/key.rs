//! Which requests share a rate: the endpoint key.

use reqwest::{Request, Url};
use std::fmt;
use std::str::FromStr;
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

/// The built-in ways to key requests (`EndpointKey` in configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum KeyMode {
    /// `scheme://host:port`, the port always written (`https://api.example.com:443`): different
    /// schemes and ports never share state. The default.
    #[default]
    SchemeHostPort,
    /// The host alone: `api.example.com`.
    Host,
    /// `scheme://host:port/first-segment`: one rate per API area (`/search`, `/repos`).
    HostAndFirstSegment,
    /// One key for every request of the limiter: `*`.
    Global,
}

impl KeyMode {
    /// The name in configuration: `SchemeHostPort`, `Host`, `HostAndFirstSegment`, `Global`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            KeyMode::SchemeHostPort => "SchemeHostPort",
            KeyMode::Host => "Host",
            KeyMode::HostAndFirstSegment => "HostAndFirstSegment",
            KeyMode::Global => "Global",
        }
    }

    /// Every mode.
    pub const ALL: [KeyMode; 4] = [
        KeyMode::SchemeHostPort,
        KeyMode::Host,
        KeyMode::HostAndFirstSegment,
        KeyMode::Global,
    ];

    /// The key of `url` in this mode.
    #[must_use]
    pub fn key_of(self, url: &Url) -> String {
        let mut key = String::new();
        self.write_key_of(url, &mut key);
        key
    }

    /// Appends the key of `url` in this mode to `out`.
    pub fn write_key_of(self, url: &Url, out: &mut String) {
        let host = url.host_str().unwrap_or("");
        // Built by hand: this runs on every request, and `format!` costs several times more.
        let origin = |out: &mut String, extra: usize| {
            let port = url.port_or_known_default().unwrap_or(0);
            if url.has_host() && url.username().is_empty() && url.password().is_none() {
                // Without user info the URL's own text starts with `scheme://host[:port]`
                // (the parser lowercased the scheme and dropped a default port): one copy.
                let start = &url[..Position::AfterPort];
                out.reserve(start.len() + 6 + extra);
                out.push_str(start);
                if url.port().is_some() {
                    return;
                }
            } else {
                out.reserve(url.scheme().len() + host.len() + 9 + extra);
                out.push_str(url.scheme());
                out.push_str("://");
                out.push_str(host);
            }
            out.push(':');
            push_u16(out, port);
        };
        match self {
            KeyMode::SchemeHostPort => origin(out, 0),
            KeyMode::Host => out.push_str(host),
            KeyMode::HostAndFirstSegment => {
                let segment = url.path_segments().and_then(|mut s| s.next()).unwrap_or("");
                origin(out, segment.len() + 1);
                out.push('/');
                out.push_str(segment);
            }
            KeyMode::Global => out.push('*'),
        }
    }
}

/// Appends `n` in decimal.
fn push_u16(out: &mut String, n: u16) {
    let mut digits = [0u8; 5];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[i..] {
        out.push(char::from(*d));
    }
}

impl EndpointKeyExtractor for KeyMode {
    fn key(&self, request: &Request) -> String {
        self.key_of(request.url())
    }

    fn write_key(&self, request: &Request, out: &mut String) {
        self.write_key_of(request.url(), out);
    }
}

/// The text is not a key mode's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown endpoint key mode {0:?}: expected one of SchemeHostPort, Host, HostAndFirstSegment, Global"
)]
pub struct UnknownKeyMode(pub String);

impl FromStr for KeyMode {
    type Err = UnknownKeyMode;

    /// Case-insensitive; `-`/`_` are ignored (`scheme_host_port` works).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted: String = s
            .chars()
            .filter(|c| *c != '-' && *c != '_' && !c.is_whitespace())
            .collect();
        KeyMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| UnknownKeyMode(s.to_owned()))
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
            assert_eq!(mode.key_of(&url), key, "{url} {mode:?}");
            let mut written = String::new();
            mode.write_key(
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
            proptest::prop_assert_eq!(KeyMode::SchemeHostPort.key_of(&url), origin.clone(), "{}", url);
            let segment = url.path_segments().and_then(|mut s| s.next()).unwrap_or("");
            proptest::prop_assert_eq!(
                KeyMode::HostAndFirstSegment.key_of(&url),
                format!("{origin}/{segment}"),
                "{}",
                url
            );
        }
    }

    #[test]
    fn ports_are_written_in_full() {
        for port in [0u16, 7, 80, 443, 8080, 65535] {
            let mut s = String::new();
            push_u16(&mut s, port);
            assert_eq!(s, port.to_string());
        }
    }

    #[test]
    fn modes_parse_without_regard_to_case_or_separators() {
        assert_eq!("scheme_host_port".parse(), Ok(KeyMode::SchemeHostPort));
        assert_eq!("HOST".parse(), Ok(KeyMode::Host));
        assert!("path".parse::<KeyMode>().is_err());
    }
}
