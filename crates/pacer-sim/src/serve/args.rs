//! The command line of `serve`.

use super::{HeaderDialect, LlmServeOptions, LlmServer, Quirk, ServeOptions, Server};
use crate::arg_values::{one_story, whole};
use crate::model::{AnthropicQuota, LlmDialect};
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
    /// Serve a model API instead, OpenAI's (`--llm` or `--llm openai`: `POST
    /// /v1/chat/completions`, requests and tokens a (story) minute, `--rpm` and `--tpm`, OpenAI's
    /// six `x-ratelimit-*` fields) or Anthropic's (`--llm anthropic`: `POST /v1/messages`,
    /// requests, input and output tokens a (story) minute, `--rpm`, `--itpm` and `--otpm`, the
    /// `anthropic-ratelimit-*` fields and `retry-after`). A request's prompt (4 bytes a token)
    /// and `max_tokens` are reserved when it comes. `--speed` applies; `--quota`, `--headers`,
    /// `--quirk`, `--server` and `--story` do not.
    #[arg(
        long,
        value_name = "API",
        num_args = 0..=1,
        default_missing_value = "openai",
        conflicts_with_all = ["quota", "headers", "quirks", "server", "story"]
    )]
    pub llm: Option<LlmDialect>,
    /// With `--llm`: requests a (story) minute [default: 500 (OpenAI), 50 (Anthropic)].
    #[arg(long, requires = "llm", allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub rpm: Option<u64>,
    /// With `--llm` (OpenAI's): tokens a (story) minute, prompt and answer alike [default:
    /// 30000].
    #[arg(long, requires = "llm", allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub tpm: Option<u64>,
    /// With `--llm anthropic`: input (prompt) tokens a (story) minute [default: 30000].
    #[arg(long, requires = "llm", allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub itpm: Option<u64>,
    /// With `--llm anthropic`: output tokens a (story) minute, reserved as `max_tokens` when a
    /// request comes [default: 8000].
    #[arg(long, requires = "llm", allow_negative_numbers = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub otpm: Option<u64>,
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

    /// The model API's settings under `--llm`; `None` without it. A tokens limit of the other
    /// dialect (`--tpm` with `anthropic`, `--itpm` or `--otpm` with `openai`) is refused.
    pub fn llm_options(&self) -> Result<Option<LlmServeOptions>, SimError> {
        let Some(dialect) = self.llm else {
            return Ok(None);
        };
        let flags = [
            ("--rpm", self.rpm),
            ("--tpm", self.tpm),
            ("--itpm", self.itpm),
            ("--otpm", self.otpm),
        ];
        for (flag, value) in flags {
            if value == Some(0) {
                return Err(SimError::Options(format!("{flag} 0: must be at least 1")));
            }
        }
        let mut options = LlmServeOptions {
            addr: SocketAddr::new(self.host, self.port),
            speed: self.speed,
            dialect,
            ..LlmServeOptions::default()
        };
        match dialect {
            LlmDialect::OpenAi => {
                for (flag, value) in [("--itpm", self.itpm), ("--otpm", self.otpm)] {
                    if value.is_some() {
                        return Err(SimError::Options(format!(
                            "{flag} is Anthropic's limit: it needs --llm anthropic (OpenAI's \
                             tokens a minute are --tpm)"
                        )));
                    }
                }
                let quota = &mut options.quota;
                quota.requests_per_minute = self.rpm.unwrap_or(quota.requests_per_minute);
                quota.tokens_per_minute = self.tpm.unwrap_or(quota.tokens_per_minute);
            }
            LlmDialect::Anthropic => {
                if self.tpm.is_some() {
                    return Err(SimError::Options(
                        "--tpm is OpenAI's limit: with --llm anthropic, set input and output \
                         tokens a minute apart (--itpm, --otpm)"
                            .to_owned(),
                    ));
                }
                let quota: &mut AnthropicQuota = &mut options.anthropic;
                quota.requests_per_minute = self.rpm.unwrap_or(quota.requests_per_minute);
                quota.input_tokens_per_minute = self.itpm.unwrap_or(quota.input_tokens_per_minute);
                quota.output_tokens_per_minute =
                    self.otpm.unwrap_or(quota.output_tokens_per_minute);
            }
        }
        Ok(Some(options))
    }
}

/// Serves until Ctrl-C, then returns the final stats as one JSON line. Says where it listens on
/// standard error.
pub fn execute(args: &ServeArgs) -> Result<String, SimError> {
    if let Some(options) = args.llm_options()? {
        return execute_llm(&options);
    }
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

/// `serve --llm`: as [`execute`].
fn execute_llm(options: &LlmServeOptions) -> Result<String, SimError> {
    let runtime = crate::runtime::runtime()?;
    runtime.block_on(async {
        let server = LlmServer::start(options)
            .await
            .map_err(|e| SimError::Io(format!("cannot listen on {}: {e}", options.addr)))?;
        let limits = match options.dialect {
            LlmDialect::OpenAi => format!(
                "{} requests/min, {} tokens/min",
                options.quota.requests_per_minute, options.quota.tokens_per_minute
            ),
            LlmDialect::Anthropic => format!(
                "{} requests/min, {} input tokens/min, {} output tokens/min",
                options.anthropic.requests_per_minute,
                options.anthropic.input_tokens_per_minute,
                options.anthropic.output_tokens_per_minute
            ),
        };
        eprintln!(
            "pacer-sim serve --llm {}: {}{} — {limits}, speed {}× (GET /stats, POST /reset; \
             Ctrl-C stops)",
            options.dialect,
            server.url(),
            options.dialect.path(),
            options.speed,
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
    use crate::model::{AnthropicQuota, LlmDialect};
    use crate::model::{LlmQuota, ServerShape};
    use crate::serve::LlmServeOptions;
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
    fn serve_llm_parses_its_limits() {
        let Some(Command::Serve(a)) = parse(&[
            "serve", "--llm", "--rpm", "60", "--tpm", "6000", "--speed", "20", "--port", "0",
        ])
        .unwrap()
        .command
        else {
            panic!("serve");
        };
        let o = a.llm_options().unwrap().expect("--llm");
        assert_eq!(o.addr.to_string(), "127.0.0.1:0");
        assert_eq!(o.speed.get(), 20.0);
        assert_eq!(
            o.quota,
            LlmQuota {
                requests_per_minute: 60,
                tokens_per_minute: 6_000
            }
        );
        let Some(Command::Serve(a)) = parse(&["serve", "--llm"]).unwrap().command else {
            panic!("serve");
        };
        assert_eq!(a.llm_options().unwrap().unwrap().quota, LlmQuota::default());
        let Some(Command::Serve(a)) = parse(&["serve"]).unwrap().command else {
            panic!("serve");
        };
        assert!(
            a.llm_options().unwrap().is_none(),
            "no --llm: the unit-cost API"
        );
    }

    #[test]
    fn serve_llm_flags_are_refused_without_llm_and_with_the_unit_api_flags() {
        for flag in ["--rpm", "--tpm"] {
            let e = parse(&["serve", flag, "60"]).unwrap_err().to_string();
            assert!(
                e.contains("required arguments were not provided") && e.contains("--llm"),
                "{e}"
            );
        }
        for (flag, value) in [
            ("--server", "fixed"),
            ("--quota", "600"),
            ("--headers", "github"),
            ("--quirk", "junk"),
            ("--story", "quota-cut"),
        ] {
            let e = parse(&["serve", "--llm", flag, value])
                .unwrap_err()
                .to_string();
            assert!(e.contains("cannot be used with"), "{flag}: {e}");
            assert!(e.contains("--llm") && e.contains(flag), "{flag}: {e}");
        }
        let e = parse(&["serve", "--llm", "--rpm", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'--rpm <RPM>': must be at least 1"), "{e}");
        let e = parse(&["serve", "--llm", "--tpm", "-5"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'--tpm <TPM>': must be at least 1"), "{e}");
    }

    fn llm(args: &[&str]) -> Result<Option<LlmServeOptions>, crate::SimError> {
        let Some(Command::Serve(a)) = parse(args).unwrap().command else {
            panic!("serve");
        };
        a.llm_options()
    }

    #[test]
    fn serve_llm_takes_the_api_openai_by_default() {
        for args in [&["serve", "--llm"][..], &["serve", "--llm", "openai"]] {
            let o = llm(args).unwrap().unwrap();
            assert_eq!(o.dialect, LlmDialect::OpenAi, "{args:?}");
            assert_eq!(o.quota, LlmQuota::default());
        }
        let o = llm(&["serve", "--llm", "--port", "0"]).unwrap().unwrap();
        assert_eq!((o.dialect, o.addr.port()), (LlmDialect::OpenAi, 0));
        let o = llm(&["serve", "--llm", "openai", "--rpm", "7"])
            .unwrap()
            .unwrap();
        assert_eq!(o.quota.requests_per_minute, 7);
        assert_eq!(o.quota.tokens_per_minute, 30_000);
    }

    #[test]
    fn serve_llm_anthropic_parses_its_limits_and_tier_one_defaults() {
        let o = llm(&["serve", "--llm", "anthropic"]).unwrap().unwrap();
        assert_eq!(o.dialect, LlmDialect::Anthropic);
        assert_eq!(
            o.anthropic,
            AnthropicQuota {
                requests_per_minute: 50,
                input_tokens_per_minute: 30_000,
                output_tokens_per_minute: 8_000,
            }
        );
        let o = llm(&[
            "serve",
            "--llm",
            "anthropic",
            "--rpm",
            "5",
            "--itpm",
            "4000",
            "--otpm",
            "900",
            "--speed",
            "10",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            o.anthropic,
            AnthropicQuota {
                requests_per_minute: 5,
                input_tokens_per_minute: 4_000,
                output_tokens_per_minute: 900,
            }
        );
        assert_eq!(o.speed.get(), 10.0);
    }

    #[test]
    fn serve_llm_refuses_the_other_apis_token_limits() {
        let e = llm(&["serve", "--llm", "anthropic", "--tpm", "5000"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--tpm is OpenAI's limit") && e.contains("--itpm, --otpm"),
            "{e}"
        );
        for args in [
            &["serve", "--llm", "--itpm", "5000"][..],
            &["serve", "--llm", "openai", "--otpm", "5000"],
        ] {
            let e = llm(args).unwrap_err().to_string();
            assert!(
                e.contains("is Anthropic's limit: it needs --llm anthropic"),
                "{args:?}: {e}"
            );
        }
        let e = parse(&["serve", "--llm", "gemini"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected openai or anthropic"), "{e}");
        for flag in ["--itpm", "--otpm"] {
            let e = parse(&["serve", flag, "60"]).unwrap_err().to_string();
            assert!(
                e.contains("required arguments were not provided") && e.contains("--llm"),
                "{e}"
            );
            let e = parse(&["serve", "--llm", "anthropic", flag, "0"])
                .unwrap_err()
                .to_string();
            assert!(e.contains("must be at least 1"), "{e}");
        }
        let e = parse(&["serve", "--llm", "anthropic", "--server", "fixed"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
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
