//! What a mode's run shows while it runs: on a terminal one line rewritten in place each story
//! second, elsewhere (a log, a pipe) a plain line every ten story seconds, nothing when quiet.
//! Each says the story time elapsed of the run's, the summed rate of the instances and the 429s
//! so far.

use std::io::Write;
use std::time::Duration;

/// A plain line every this many story seconds when standard error is not a terminal.
const LINE_EVERY: usize = 10;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressStyle {
    /// Nothing (the library's default, and `--quiet`).
    #[default]
    Quiet,
    /// One line rewritten in place (`\r`) each story second.
    Terminal,
    /// A plain line every ten story seconds.
    Lines,
}

impl ProgressStyle {
    /// The style for `--quiet` and whether standard error is a terminal.
    #[must_use]
    pub fn choose(quiet: bool, is_terminal: bool) -> Self {
        match (quiet, is_terminal) {
            (true, _) => ProgressStyle::Quiet,
            (false, true) => ProgressStyle::Terminal,
            (false, false) => ProgressStyle::Lines,
        }
    }
}

/// The progress of one mode's run.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    style: ProgressStyle,
    mode: String,
    /// The run's story seconds.
    total: usize,
}

impl Progress {
    pub(crate) fn new(style: ProgressStyle, mode: &str, total: usize) -> Self {
        Progress {
            style,
            mode: mode.to_owned(),
            total,
        }
    }

    /// The run's story seconds.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// What to write at the start of story second `second`, given the summed rate (story units
    /// per minute; `None` when no instance has a limiter) and the 429s so far; `None` when
    /// nothing is due.
    pub(crate) fn update(
        &self,
        second: usize,
        rate: Option<f64>,
        throttled: u64,
    ) -> Option<String> {
        let due = match self.style {
            ProgressStyle::Quiet => false,
            ProgressStyle::Terminal => true,
            ProgressStyle::Lines => second > 0 && second.is_multiple_of(LINE_EVERY),
        };
        if !due {
            return None;
        }
        let rate = rate.map_or_else(|| "-".to_owned(), |r| format!("{r:.0}"));
        let text = format!(
            "live: {} {} / {} story, rate {rate} units/min, {throttled} 429s",
            self.mode,
            clock(second),
            clock(self.total)
        );
        Some(match self.style {
            // `\x1b[K` clears what a longer line before left.
            ProgressStyle::Terminal => format!("\r{text}\x1b[K"),
            _ => format!("{text}\n"),
        })
    }

    /// What to write when the run is over: on a terminal, the line is cleared for what follows.
    pub(crate) fn done(&self) -> Option<&'static str> {
        (self.style == ProgressStyle::Terminal).then_some("\r\x1b[K")
    }
}

/// Writes `text` to standard error, if there is any; a failed write is not the run's failure.
pub(crate) fn show(text: Option<impl AsRef<str>>) {
    if let Some(text) = text {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_ref().as_bytes());
        let _ = err.flush();
    }
}

/// `m:ss` of `seconds`.
fn clock(seconds: usize) -> String {
    let d = Duration::from_secs(seconds as u64).as_secs();
    format!("{}:{:02}", d / 60, d % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_style_follows_quiet_then_the_terminal() {
        assert_eq!(ProgressStyle::choose(true, true), ProgressStyle::Quiet);
        assert_eq!(ProgressStyle::choose(true, false), ProgressStyle::Quiet);
        assert_eq!(ProgressStyle::choose(false, true), ProgressStyle::Terminal);
        assert_eq!(ProgressStyle::choose(false, false), ProgressStyle::Lines);
    }

    #[test]
    fn off_a_terminal_a_plain_line_every_ten_story_seconds() {
        let p = Progress::new(ProgressStyle::Lines, "aimd", 900);
        let lines: Vec<(usize, String)> = (0..40)
            .filter_map(|s| p.update(s, Some(1234.4), s as u64 / 3).map(|l| (s, l)))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    10,
                    "live: aimd 0:10 / 15:00 story, rate 1234 units/min, 3 429s\n".to_owned()
                ),
                (
                    20,
                    "live: aimd 0:20 / 15:00 story, rate 1234 units/min, 6 429s\n".to_owned()
                ),
                (
                    30,
                    "live: aimd 0:30 / 15:00 story, rate 1234 units/min, 10 429s\n".to_owned()
                ),
            ]
        );
        assert!(lines.iter().all(|(_, l)| !l.contains('\r')), "{lines:?}");
        assert_eq!(p.done(), None);
        let none = Progress::new(ProgressStyle::Lines, "none", 120);
        assert_eq!(
            none.update(70, None, 0).as_deref(),
            Some("live: none 1:10 / 2:00 story, rate - units/min, 0 429s\n")
        );
    }

    #[test]
    fn on_a_terminal_one_line_in_place_each_second_and_cleared_at_the_end() {
        let p = Progress::new(ProgressStyle::Terminal, "cubic", 60);
        assert_eq!(
            p.update(1, Some(600.0), 0).as_deref(),
            Some("\rlive: cubic 0:01 / 1:00 story, rate 600 units/min, 0 429s\x1b[K")
        );
        assert!((0..60).all(|s| p.update(s, None, 0).is_some()));
        assert_eq!(p.done(), Some("\r\x1b[K"));
    }

    #[test]
    fn quiet_shows_nothing() {
        let p = Progress::new(ProgressStyle::Quiet, "aimd", 900);
        assert!((0..900).all(|s| p.update(s, Some(1.0), 1).is_none()));
        assert_eq!(p.done(), None);
    }
}
