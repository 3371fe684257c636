//! What can go wrong in a comparison.

use crate::ModeError;
use std::fmt;

/// An error of the simulator: bad settings, a mode that cannot run, or a file that cannot be
/// written.
#[derive(Debug)]
#[non_exhaustive]
pub enum SimError {
    /// A setting is out of range; the message names it.
    Options(String),
    /// A mode cannot run.
    Mode(ModeError),
    /// The plot could not be drawn or written.
    Plot(String),
    /// The run finished, but its plot could not be drawn or written: `output` is what the run
    /// prints (print it, then the message).
    PlotAfterRun {
        /// The table (or CSV, JSON) of the run.
        output: String,
        /// Why the plot is missing.
        message: String,
    },
    /// The run finished, but a mode measured nothing (every request of it failed: the target
    /// refused them all, or could not be reached): `output` is what the run prints (print it,
    /// then the message).
    FailedRun {
        /// The table (or CSV, JSON) of the run.
        output: String,
        /// Which modes, and the first error of each.
        message: String,
    },
    /// A story name is unknown.
    UnknownStory(String),
    /// A network or I/O failure of `serve` or `live` (cannot listen, the target cannot be
    /// reached); the message says what.
    Io(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Options(m) | SimError::Plot(m) | SimError::Io(m) => f.write_str(m),
            SimError::Mode(e) => e.fmt(f),
            SimError::PlotAfterRun { message, .. } | SimError::FailedRun { message, .. } => {
                write!(f, "{message} (the results are printed above)")
            }
            SimError::UnknownStory(name) => write!(
                f,
                "unknown story {name:?}: expected all or one of {}, {}, {}",
                crate::model::STORY_NAMES.join(", "),
                crate::model::MORE_STORY_NAMES.join(", "),
                crate::llm::LLM_STORY
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ModeError> for SimError {
    fn from(e: ModeError) -> Self {
        SimError::Mode(e)
    }
}
