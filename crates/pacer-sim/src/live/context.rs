//! One mode's run on the real clock: where story time 0 is, the speed, and the recorder that
//! every request task and the probe write to.

use super::record::LiveRecorder;
use crate::Speed;
use pacer_core::{Clock, RealClock, Timestamp};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Shared by every task of one mode's run.
#[derive(Debug)]
pub(crate) struct RunContext {
    pub(crate) clock: Arc<RealClock>,
    /// The real moment story time 0 stands for.
    pub(crate) start: Timestamp,
    pub(crate) speed: Speed,
    recorder: Mutex<LiveRecorder>,
}

impl RunContext {
    /// A run whose story time starts now.
    pub(crate) fn new(clock: Arc<RealClock>, speed: Speed, recorder: LiveRecorder) -> Self {
        let start = clock.now();
        RunContext {
            clock,
            start,
            speed,
            recorder: Mutex::new(recorder),
        }
    }

    /// The story time of the real moment `t`.
    pub(crate) fn story_at(&self, t: Timestamp) -> Duration {
        self.speed.to_story(t - self.start)
    }

    /// The story time now.
    pub(crate) fn story_now(&self) -> Duration {
        self.story_at(self.clock.now())
    }

    /// The real moment of story time `story`.
    pub(crate) fn real_at(&self, story: Duration) -> Timestamp {
        self.start + self.speed.to_real(story)
    }

    /// Sleeps until story time `story`; returns at once if it has passed. (A tokio sleep,
    /// even of zero, waits for the timer's next 1 ms tick: a loop that slept before each of a
    /// thousand arrivals a second would fall ever further behind.)
    pub(crate) async fn sleep_until(&self, story: Duration) {
        let deadline = self.real_at(story);
        if self.clock.now() < deadline {
            self.clock.sleep_until(deadline).await;
        }
    }

    /// Writes to the recorder.
    pub(crate) fn record<T>(&self, f: impl FnOnce(&mut LiveRecorder) -> T) -> T {
        let mut recorder = self.recorder.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut recorder)
    }

    /// The recorder, once every task is done (an empty one is left in its place).
    pub(crate) fn take_recorder(&self) -> LiveRecorder {
        self.record(|r| std::mem::replace(r, LiveRecorder::new(0, false)))
    }
}
