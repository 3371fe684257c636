//! Which requests share a rate: the built-in endpoint keys.

use std::str::FromStr;

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

    /// Appends the key, in this mode, of a request to `scheme://host:port/path` to `out`:
    /// `port` is the URL's port or its scheme's known default (`None`: neither, written 0), and
    /// `first_segment` the path's first segment (`search` of `/search/code`; empty for `/`).
    /// A driver takes these from its request type (reqwest's `Url`, http's `Uri`) and gets the
    /// same key for the same URL.
    ///
    /// ```
    /// use pacer_core::KeyMode;
    ///
    /// let mut key = String::new();
    /// KeyMode::HostAndFirstSegment.write_key("https", "api.test", Some(443), "search", &mut key);
    /// assert_eq!(key, "https://api.test:443/search");
    /// ```
    pub fn write_key(
        self,
        scheme: &str,
        host: &str,
        port: Option<u16>,
        first_segment: &str,
        out: &mut String,
    ) {
        let origin = |out: &mut String, extra: usize| {
            out.reserve(scheme.len() + host.len() + 9 + extra);
            out.push_str(scheme);
            out.push_str("://");
            out.push_str(host);
            out.push(':');
            push_u16(out, port.unwrap_or(0));
        };
        match self {
            KeyMode::SchemeHostPort => origin(out, 0),
            KeyMode::Host => out.push_str(host),
            KeyMode::HostAndFirstSegment => {
                origin(out, first_segment.len() + 1);
                out.push('/');
                out.push_str(first_segment);
            }
            KeyMode::Global => out.push('*'),
        }
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

/// Appends `n` in decimal (without the formatting machinery: this runs on every request).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_without_regard_to_case_or_separators() {
        assert_eq!("scheme_host_port".parse(), Ok(KeyMode::SchemeHostPort));
        assert_eq!("HOST".parse(), Ok(KeyMode::Host));
        assert!("path".parse::<KeyMode>().is_err());
    }

    #[test]
    fn ports_are_written_in_full() {
        for port in [0u16, 7, 80, 443, 8080, 65535] {
            let mut s = String::new();
            KeyMode::SchemeHostPort.write_key("http", "h", Some(port), "", &mut s);
            assert_eq!(s, format!("http://h:{port}"));
        }
        let mut s = String::new();
        KeyMode::SchemeHostPort.write_key("x-api", "h", None, "", &mut s);
        assert_eq!(s, "x-api://h:0");
    }
}
