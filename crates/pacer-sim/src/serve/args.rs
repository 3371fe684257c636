//! The command line of `serve`.

use super::{HeaderDialect, Quirk, ServeOptions, Server};
use crate::arg_values::{one_story, whole};
use crate::model::{ServerShape, Story};
use crate::{SimError, Speed};
use clap::Args;
use std::net::{IpAddr, SocketAddr};

/// The options of `pacer-sim serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080, allow_negative_numbers = true, value_parser = whole::<u16>(0, 65535))]
    pub port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The hidden quota, units per (story) minute.
    #[arg(long, default_value_t = 3000, allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub quota: u64,
    /// The rate-limit fields sent besides Retry-After: none, draft11, github or shopify.
    #[arg(long, default_value = "none")]
    pub headers: HeaderDialect,
    /// The story to play from the server's start: free-run, noisy-neighbour, quota-cut,
    /// scale-out, top-of-hour or long-retry-after; or cold-start (429s without Retry-After), or
    /// autoscale, store-outage or restart (what changes in them is the clients: the server
    /// plays free-run's quota).
    #[arg(long, default_value = "free-run", value_parser = one_story)]
    pub story: String,
    /// Story time runs this many times faster than the real clock: the 60 s window lasts 60/K
    /// s, a story minute 60/K s, a Retry-After of R s is sent as R/K s.
    #[arg(long, default_value = "1", allow_negative_numbers = true)]
    pub speed: Speed,
    /// An odd behaviour of real servers to add (repeat for more): retry-after-on-success
    /// (every 50th accepted request gets Retry-After: 120 story seconds, alternately on a 200
    /// and a 202) or junk (every 5th gets one broken or absurd set of rate-limit fields).
    #[arg(long = "quirk", value_name = "QUIRK")]
    pub quirks: Vec<Quirk>,
    /// The shape of the quota: sliding, fixed, token-bucket, leaky-bucket (no Retry-After), gcra,
    /// haproxy (HAProxy's counter, refused requests counted, no Retry-After), governor
    /// (tower_governor's GCRA, a Retry-After rounded down) or nginx (nginx's limit_req: a
    /// request over the pace is held before it is answered, a refusal is a bare 503), over the
    /// one-minute window. The
    /// fields sent are `--headers`'s (none by default, as HAProxy's and tower_governor's).
    #[arg(long, value_name = "SHAPE", default_value = "sliding")]
    pub server: ServerShape,
}

impl ServeArgs {
    /// The server's settings.
    pub fn options(&self) -> Result<ServeOptions, SimError> {
        if self.quota == 0 {
            return Err(SimError::Options(
                "--quota 0: must be at least 1".to_owned(),
            ));
        }
        let story = Story::by_name(&self.story)
            .ok_or_else(|| SimError::UnknownStory(self.story.clone()))?;
        Ok(ServeOptions {
            addr: SocketAddr::new(self.host, self.port),
            quota: self.quota,
            story,
            speed: self.speed,
            headers: self.headers,
            quirks: self.quirks.iter().copied().collect(),
            server: self.server,
        })
    }
}

/// Serves until Ctrl-C, then returns the final stats as one JSON line. Says where it listens on
/// standard error.
pub fn execute(args: &ServeArgs) -> Result<String, SimError> {
    let options = args.options()?;
    let runtime = crate::runtime::runtime()?;
    runtime.block_on(async {
        let server = Server::start(&options)
            .await
            .map_err(|e| SimError::Io(format!("cannot listen on {}: {e}", options.addr)))?;
        eprintln!(
            "pacer-sim serve: {} — story {}, quota {} units/min, speed {}×, headers {}, \
             quirks {} (GET /stats, POST /reset; Ctrl-C stops)",
            server.url(),
            options.story.name,
            options.quota,
            options.speed,
            options.headers,
            options.quirks
        );
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| SimError::Io(format!("cannot wait for Ctrl-C: {e}")))?;
        let stats = server.stop().await;
        let mut line = serde_json::to_string(&stats).expect("plain data serializes");
        line.push('\n');
        Ok(line)
    })
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use crate::model::ServerShape;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pacer-sim").chain(args.iter().copied()))
    }

    #[test]
    fn serve_defaults_and_flags() {
        let Some(Command::Serve(a)) = parse(&["serve"]).unwrap().command else {
            panic!("serve");
        };
        let o = a.options().unwrap();
        assert_eq!(o.addr.to_string(), "127.0.0.1:8080");
        assert_eq!((o.quota, o.story.name), (3000, "free-run"));
        assert_eq!(
            (o.speed.get(), o.headers),
            (1.0, super::HeaderDialect::None)
        );
        assert_eq!(o.quirks, super::super::Quirks::none());
        assert_eq!(o.server, ServerShape::Sliding);

        let cli = parse(&[
            "serve",
            "--port",
            "0",
            "--quota",
            "600",
            "--headers",
            "shopify",
            "--story",
            "noisy-neighbour",
            "--speed",
            "30",
            "--quirk",
            "junk",
            "--quirk",
            "retry-after-on-success",
            "--quirk",
            "junk",
            "--server",
            "leaky-bucket",
        ])
        .unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!("serve");
        };
        let o = a.options().unwrap();
        assert_eq!(
            (o.addr.port(), o.quota, o.story.name),
            (0, 600, "noisy-neighbour")
        );
        assert_eq!(
            (o.speed.get(), o.headers),
            (30.0, super::HeaderDialect::Shopify)
        );
        assert_eq!(o.server, ServerShape::LeakyBucket);
        assert_eq!(o.quirks.names(), ["retry-after-on-success", "junk"]);
    }

    #[test]
    fn bad_serve_flags_are_refused() {
        let e = parse(&["serve", "--headers", "xml"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected none, draft11, github or shopify"),
            "{e}"
        );
        let e = parse(&["serve", "--server", "window"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "expected one of sliding, fixed, token-bucket, leaky-bucket, gcra, haproxy, governor"
            ),
            "{e}"
        );
        let e = parse(&["serve", "--speed", "0"]).unwrap_err().to_string();
        assert!(e.contains("from 0.001 to 1000"), "{e}");
        let e = parse(&["serve", "--story", "mars"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown story \"mars\""), "{e}");
        let e = parse(&["serve", "--quirk", "slow"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown quirk \"slow\": expected retry-after-on-success or junk"),
            "{e}"
        );
        assert!(e.contains("--quirk <QUIRK>"), "{e}");
        let e = parse(&["serve", "--quota", "0"]).unwrap_err().to_string();
        assert!(e.contains("'--quota <QUOTA>': must be at least 1"), "{e}");
        assert!(
            parse(&["serve", "--mode", "aimd"]).is_err(),
            "compare's flags are not serve's"
        );
    }

    #[test]
    fn serve_story_all_lists_the_stories_it_takes() {
        let e = parse(&["serve", "--story", "all"]).unwrap_err().to_string();
        assert!(
            e.contains(
                "invalid value 'all' for '--story <STORY>': this command plays one story at a \
                 time, not all: expected one of free-run, noisy-neighbour"
            ),
            "{e}"
        );
        assert!(!e.contains("expected all"), "{e}");
        let e = parse(&["serve", "--quota", "-1"]).unwrap_err().to_string();
        assert!(e.contains("'--quota <QUOTA>': must be at least 1"), "{e}");
        let e = parse(&["serve", "--port", "-1"]).unwrap_err().to_string();
        assert!(e.contains("must be from 0 to 65535"), "{e}");
    }
}
