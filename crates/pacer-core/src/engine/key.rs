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
    /// A Discord route: `scheme://host:port` and the path, each all-digit segment (a snowflake
    /// id) written `:id` but Discord's major parameters (the id after `channels`, `guilds` or
    /// `webhooks`, and a webhook's token), which Discord rate-limits apart
    /// (`https://discord.com:443/api/v10/channels/123/messages/:id`). A response that names its
    /// bucket (`X-RateLimit-Bucket`) then groups the routes that share it, with the same major
    /// parameter, under one rate (`Engine::after`, docs/responses.md).
    DiscordRoute,
}

impl KeyMode {
    /// The name in configuration: `SchemeHostPort`, `Host`, `HostAndFirstSegment`, `Global`,
    /// `DiscordRoute`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            KeyMode::SchemeHostPort => "SchemeHostPort",
            KeyMode::Host => "Host",
            KeyMode::HostAndFirstSegment => "HostAndFirstSegment",
            KeyMode::Global => "Global",
            KeyMode::DiscordRoute => "DiscordRoute",
        }
    }

    /// Every mode.
    pub const ALL: [KeyMode; 5] = [
        KeyMode::SchemeHostPort,
        KeyMode::Host,
        KeyMode::HostAndFirstSegment,
        KeyMode::Global,
        KeyMode::DiscordRoute,
    ];

    /// Appends the key, in this mode, of a request to `scheme://host:port/path` to `out`:
    /// `port` is the URL's port or its scheme's known default (`None`: neither, written 0), and
    /// `path` the URL's path (`/search/code`; no query). A driver takes these from its request
    /// type (reqwest's `Url`, http's `Uri`) and gets the same key for the same URL.
    ///
    /// A request with no origin (no scheme, no host: a tonic call, whose channel adds its origin
    /// after the layer) keys by its path alone: `SchemeHostPort` and `Host` give the empty key,
    /// `HostAndFirstSegment` the gRPC service (`/grpc.health.v1.Health`).
    ///
    /// ```
    /// use pacer_core::KeyMode;
    ///
    /// let mut key = String::new();
    /// KeyMode::HostAndFirstSegment.write_key("https", "api.test", Some(443), "/search/code", &mut key);
    /// assert_eq!(key, "https://api.test:443/search");
    /// let mut key = String::new();
    /// KeyMode::DiscordRoute.write_key("https", "discord.com", Some(443),
    ///     "/api/v10/channels/223/messages/1049", &mut key);
    /// assert_eq!(key, "https://discord.com:443/api/v10/channels/223/messages/:id");
    /// let mut key = String::new();
    /// KeyMode::HostAndFirstSegment.write_key("", "", None, "/grpc.health.v1.Health/Check", &mut key);
    /// assert_eq!(key, "/grpc.health.v1.Health");
    /// ```
    pub fn write_key(
        self,
        scheme: &str,
        host: &str,
        port: Option<u16>,
        path: &str,
        out: &mut String,
    ) {
        let origin = |out: &mut String, extra: usize| {
            if scheme.is_empty() && host.is_empty() {
                out.reserve(extra);
                return;
            }
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
                let first_segment = path
                    .strip_prefix('/')
                    .and_then(|p| p.split('/').next())
                    .unwrap_or("");
                origin(out, first_segment.len() + 1);
                out.push('/');
                out.push_str(first_segment);
            }
            KeyMode::Global => out.push('*'),
            KeyMode::DiscordRoute => {
                origin(out, path.len());
                discord_route(path, out);
            }
        }
    }
}

/// Discord's major parameters: the id after one of these segments, and a webhook's token after
/// its id (Discord's docs, "Rate Limits": "per-route … major parameters").
const DISCORD_MAJOR: [&str; 3] = ["channels", "guilds", "webhooks"];

/// Appends `path` with every all-digit segment written `:id`, but a major parameter.
fn discord_route(path: &str, out: &mut String) {
    let mut kept = 0u8; // segments to keep as they are: a major parameter (and a token)
    let mut previous = "";
    for segment in path.split('/').skip(1) {
        out.push('/');
        if DISCORD_MAJOR.contains(&previous) {
            kept = if previous == "webhooks" { 2 } else { 1 };
        }
        let snowflake = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
        if kept > 0 {
            out.push_str(segment);
            kept -= 1;
        } else if snowflake {
            out.push_str(":id");
        } else {
            out.push_str(segment);
        }
        previous = segment;
    }
}

/// The major parameter in a [`KeyMode::DiscordRoute`] key (`channels/223`, or
/// `webhooks/{id}/{token}`), if it has one.
pub(crate) fn discord_major(key: &str) -> Option<&str> {
    let path_at = key.find("://").map(|i| i + 3)?;
    let path = &key[path_at..];
    let path = &path[path.find('/')?..];
    DISCORD_MAJOR.iter().find_map(|major| {
        let at = path.find(&format!("/{major}/"))? + 1;
        let rest = &path[at..];
        let parts = if *major == "webhooks" { 3 } else { 2 };
        let end = rest
            .match_indices('/')
            .nth(parts - 1)
            .map_or(rest.len(), |(i, _)| i);
        Some(&rest[..end])
    })
}

/// The text is not a key mode's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown endpoint key mode {0:?}: expected one of SchemeHostPort, Host, HostAndFirstSegment, Global, DiscordRoute"
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

    #[test]
    fn discord_routes_keep_their_major_parameter_and_mask_the_other_ids() {
        let table = [
            (
                "/api/v10/channels/223/messages/1049",
                "/api/v10/channels/223/messages/:id",
                Some("channels/223"),
            ),
            (
                "/api/v10/channels/223/messages/1049/reactions/%F0%9F%91%8D/@me",
                "/api/v10/channels/223/messages/:id/reactions/%F0%9F%91%8D/@me",
                Some("channels/223"),
            ),
            (
                "/api/v10/guilds/97/members/5",
                "/api/v10/guilds/97/members/:id",
                Some("guilds/97"),
            ),
            (
                "/api/v10/webhooks/77/tok3n/messages/9",
                "/api/v10/webhooks/77/tok3n/messages/:id",
                Some("webhooks/77/tok3n"),
            ),
            ("/api/v10/users/@me", "/api/v10/users/@me", None),
            ("/api/v10/users/42", "/api/v10/users/:id", None),
            ("/", "/", None),
        ];
        for (path, route, major) in table {
            let mut key = String::new();
            KeyMode::DiscordRoute.write_key("https", "discord.com", Some(443), path, &mut key);
            assert_eq!(key, format!("https://discord.com:443{route}"), "{path}");
            assert_eq!(discord_major(&key), major, "{key}");
        }
        assert_eq!("discord-route".parse(), Ok(KeyMode::DiscordRoute));
    }
}
