//! The shape of a strict window: how many frames, how long each, how wide a counter.
//!
//! The geometry is checked once, here, so every store can trust it. Its bounds come from where
//! the Redis store computes: Lua 5.1 numbers are IEEE doubles, exact for integers below 2^53.
//! Counters of at most 48 bits keep every total, count and difference below 2^50, and windows of
//! at most 2^52 µs keep every frame start and ETA below 2^53 for the next century.

use super::WindowTime;
use std::time::Duration;

/// The largest frame count: beyond it the extra delay (one frame in N) is below 0.001 % and a key
/// would outgrow a small Redis string.
pub(crate) const MAX_FRAMES: u32 = 100_000;

/// The widest counter. Lua 5.1 (the Redis store) holds integers exactly below 2^53; 48-bit
/// counters leave room for sums of a total and a count, and are a whole number of bytes.
pub(crate) const MAX_COUNTER_WIDTH_BITS: u8 = 48;

/// The longest span `(frames + 1) · frame_length` in microseconds: 2^52 µs, about 142 years,
/// keeps `now + window` below 2^53 µs (the year 2255).
pub(crate) const MAX_WINDOW_MICROS: u64 = 1 << 52;

/// Bytes of the key header: the newest frame (7), the base count (6), the geometry tag (3). The
/// stores' byte layout: not part of the public API.
pub(crate) const HEADER_BYTES: usize = 16;

/// A validated window geometry: `frames` frames (N) of `frame_length` each, with counters of
/// `counter_width_bits` bits.
///
/// The window admits at most `limit` events in any span of `N · frame_length`, and an event
/// leaves it between `N` and `N + 1` frames after it was recorded: at most one frame of extra
/// delay, which shrinks as N grows. A key holds `N + 1` counters plus a 128-bit header.
///
/// ```
/// use pacer_core::WindowGeometry;
/// use std::time::Duration;
///
/// // 30 messages per 10 minutes, in 10 frames of one minute.
/// let g = WindowGeometry::for_limit(30, Duration::from_secs(600), 10)?;
/// assert_eq!(g.frame_length(), Duration::from_secs(60));
/// assert_eq!(g.counter_width_bits(), 5); // ceil(log2(31))
/// assert_eq!(g.window(), Duration::from_secs(600));
/// assert_eq!(g.bits_per_key(), 128 + 8 * 11); // 5-bit counters are stored in whole bytes
/// # Ok::<(), pacer_core::GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowGeometry {
    frames: u32,
    frame_length_us: u64,
    counter_width_bits: u8,
}

/// A geometry parameter out of range: names the parameter and the bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GeometryError {
    /// `frames` is 0 or above [`WindowGeometry::MAX_FRAMES`].
    #[error("frames must be in 1..={max}, got {frames}", max = MAX_FRAMES)]
    Frames {
        /// The value given.
        frames: u32,
    },
    /// `frame_length` is below one microsecond or not a whole number of microseconds.
    #[error(
        "frame_length must be a whole number of microseconds, at least 1 µs, got {frame_length:?}"
    )]
    FrameLength {
        /// The value given.
        frame_length: Duration,
    },
    /// `counter_width_bits` is 0 or above [`WindowGeometry::MAX_COUNTER_WIDTH_BITS`].
    #[error("counter_width_bits must be in 1..={max}, got {bits}", max = MAX_COUNTER_WIDTH_BITS)]
    CounterWidth {
        /// The value given.
        bits: u8,
    },
    /// `(frames + 1) · frame_length` is above [`WindowGeometry::MAX_WINDOW_MICROS`].
    #[error(
        "(frames + 1) * frame_length must be at most 2^52 µs, got ({frames} + 1) * {frame_length:?}"
    )]
    Window {
        /// The frame count given.
        frames: u32,
        /// The frame length given.
        frame_length: Duration,
    },
    /// `limit` needs counters wider than [`WindowGeometry::MAX_COUNTER_WIDTH_BITS`].
    #[error("limit must be below 2^{max}, got {limit}", max = MAX_COUNTER_WIDTH_BITS)]
    Limit {
        /// The value given.
        limit: u64,
    },
    /// `per` is zero.
    #[error("per must be a positive duration, got {per:?}")]
    Per {
        /// The value given.
        per: Duration,
    },
}

impl WindowGeometry {
    /// The largest frame count: beyond it the extra delay (one frame in N) is below 0.001 %
    /// and a key would outgrow a small Redis string.
    pub const MAX_FRAMES: u32 = MAX_FRAMES;

    /// The widest counter, in bits. Lua 5.1 (the Redis store) holds integers exactly below
    /// 2^53; 48-bit counters leave room for sums of a total and a count.
    pub const MAX_COUNTER_WIDTH_BITS: u8 = MAX_COUNTER_WIDTH_BITS;

    /// The longest span `(frames + 1) · frame_length`, in microseconds: 2^52 µs, about 142
    /// years, keeps `now + window` below 2^53 µs.
    pub const MAX_WINDOW_MICROS: u64 = MAX_WINDOW_MICROS;

    /// A geometry of `frames` frames of `frame_length`, with `counter_width_bits`-bit counters.
    ///
    /// # Errors
    ///
    /// A [`GeometryError`] naming the first parameter out of range: `frames` in
    /// `1..=MAX_FRAMES`, `frame_length` a whole number of microseconds ≥ 1 µs,
    /// `counter_width_bits` in `1..=48`, and `(frames + 1) · frame_length ≤ 2^52 µs`.
    pub fn new(
        frames: u32,
        frame_length: Duration,
        counter_width_bits: u8,
    ) -> Result<Self, GeometryError> {
        if frames == 0 || frames > MAX_FRAMES {
            return Err(GeometryError::Frames { frames });
        }
        let nanos = frame_length.as_nanos();
        if nanos < 1_000 || !nanos.is_multiple_of(1_000) {
            return Err(GeometryError::FrameLength { frame_length });
        }
        if counter_width_bits == 0 || counter_width_bits > MAX_COUNTER_WIDTH_BITS {
            return Err(GeometryError::CounterWidth {
                bits: counter_width_bits,
            });
        }
        let frame_length_us = u64::try_from(nanos / 1_000).unwrap_or(u64::MAX);
        let span = frame_length_us.checked_mul(u64::from(frames) + 1);
        if span.is_none_or(|s| s > MAX_WINDOW_MICROS) {
            return Err(GeometryError::Window {
                frames,
                frame_length,
            });
        }
        Ok(WindowGeometry {
            frames,
            frame_length_us,
            counter_width_bits,
        })
    }

    /// A geometry for "at most `limit` per `per`" in `frames` frames: the frame length is `per /
    /// frames` rounded up to a whole microsecond (so the window is never shorter than `per`), and
    /// the counter width is the fewest bits that hold `limit`: `ceil(log2(limit + 1))`, at least 1.
    ///
    /// # Errors
    ///
    /// [`GeometryError::Per`] for a zero `per`, [`GeometryError::Limit`] for a limit of 2^48 or
    /// more, else as [`WindowGeometry::new`].
    pub fn for_limit(limit: u64, per: Duration, frames: u32) -> Result<Self, GeometryError> {
        if per.is_zero() {
            return Err(GeometryError::Per { per });
        }
        if frames == 0 || frames > MAX_FRAMES {
            return Err(GeometryError::Frames { frames });
        }
        let width = bits_for(limit);
        if width > u32::from(MAX_COUNTER_WIDTH_BITS) {
            return Err(GeometryError::Limit { limit });
        }
        let per_us = per.as_nanos().div_ceil(1_000);
        let frame_us = per_us.div_ceil(u128::from(frames));
        let frame_us = u64::try_from(frame_us).unwrap_or(u64::MAX);
        let width = u8::try_from(width.max(1)).unwrap_or(MAX_COUNTER_WIDTH_BITS);
        WindowGeometry::new(frames, Duration::from_micros(frame_us), width)
    }

    /// N: the number of frames in the window.
    #[must_use]
    pub const fn frames(&self) -> u32 {
        self.frames
    }

    /// The length of one frame.
    #[must_use]
    pub const fn frame_length(&self) -> Duration {
        Duration::from_micros(self.frame_length_us)
    }

    /// The length of one frame in microseconds.
    #[must_use]
    pub const fn frame_length_us(&self) -> u64 {
        self.frame_length_us
    }

    /// The counter width asked for, in bits. It bounds the total a window can hold
    /// ([`WindowGeometry::capacity`]).
    #[must_use]
    pub const fn counter_width_bits(&self) -> u8 {
        self.counter_width_bits
    }

    /// The span the guarantee covers: N · frame length.
    #[must_use]
    pub const fn window(&self) -> Duration {
        Duration::from_micros(self.frame_length_us * self.frames as u64)
    }

    /// The largest total the window can hold, `2^width − 1`; also the largest valid `limit`.
    #[must_use]
    pub const fn capacity(&self) -> u64 {
        (1u64 << self.counter_width_bits) - 1
    }

    /// The number of counters a key holds: N + 1 (the extra frame is the one being filled).
    #[must_use]
    pub const fn ring_slots(&self) -> u64 {
        self.frames as u64 + 1
    }

    /// Bytes per stored counter: the width rounded up to whole bytes, so that a store can move
    /// a run of counters with one byte-range write.
    #[must_use]
    pub const fn slot_bytes(&self) -> usize {
        (self.counter_width_bits as usize).div_ceil(8)
    }

    /// Bytes per key: the 16-byte header plus N + 1 counters.
    #[must_use]
    pub const fn key_bytes(&self) -> usize {
        HEADER_BYTES + self.slot_bytes() * (self.frames as usize + 1)
    }

    /// Bits per key: `128 + width · (N + 1)`, with the width rounded up to whole bytes as stored
    /// (`8 · key_bytes()`).
    #[must_use]
    pub const fn bits_per_key(&self) -> u64 {
        8 * self.key_bytes() as u64
    }

    /// The absolute frame that contains `t`: `floor(t / frame_length)`.
    #[must_use]
    pub const fn frame_of(&self, t: WindowTime) -> u64 {
        t.as_micros() / self.frame_length_us
    }

    /// The time at which absolute frame `frame` begins.
    #[must_use]
    pub const fn frame_start(&self, frame: u64) -> WindowTime {
        WindowTime::from_micros(frame.saturating_mul(self.frame_length_us))
    }

    /// A 24-bit fingerprint of `(frames, frame_length_us, counter_width_bits)`, stored in every
    /// key so that a call with another geometry is detected. The Lua library computes the same
    /// polynomial: `h = (h · 1000003 + x) mod 16777213` over the three numbers.
    #[must_use]
    pub const fn fingerprint(&self) -> u32 {
        const P: u64 = 16_777_213;
        let mut h = 0u64;
        h = (h * 1_000_003 + self.frames as u64) % P;
        h = (h * 1_000_003 + self.frame_length_us) % P;
        h = (h * 1_000_003 + self.counter_width_bits as u64) % P;
        h as u32
    }
}

/// `ceil(log2(limit + 1))`: the bits that hold `limit`.
fn bits_for(limit: u64) -> u32 {
    u64::BITS - limit.leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn new_rejects_each_parameter_by_name() {
        let cases: &[(u32, Duration, u8, &str)] = &[
            (0, us(1), 8, "frames must be in 1..=100000, got 0"),
            (
                100_001,
                us(1),
                8,
                "frames must be in 1..=100000, got 100001",
            ),
            (10, Duration::ZERO, 8, "frame_length must be"),
            (10, Duration::from_nanos(1_500), 8, "got 1.5µs"),
            (10, us(1), 0, "counter_width_bits must be in 1..=48, got 0"),
            (10, us(1), 49, "got 49"),
            (
                3,
                us((1 << 50) + 1),
                8,
                "(frames + 1) * frame_length must be at most 2^52",
            ),
        ];
        for (frames, len, width, message) in cases {
            let err = WindowGeometry::new(*frames, *len, *width).unwrap_err();
            assert!(
                err.to_string().contains(message),
                "{err} does not say {message}"
            );
        }
    }

    #[test]
    fn the_largest_window_is_accepted() {
        let g = WindowGeometry::new(3, us(1 << 50), 48).unwrap();
        assert_eq!(g.capacity(), (1 << 48) - 1);
        assert_eq!(g.slot_bytes(), 6);
        assert!(WindowGeometry::new(MAX_FRAMES, us(1), 1).is_ok());
    }

    #[test]
    fn for_limit_picks_the_width_and_rounds_the_frame_up() {
        let table: &[(u64, u8)] = &[(0, 1), (1, 1), (2, 2), (3, 2), (10, 4), (15, 4), (16, 5)];
        for (limit, width) in table {
            let g = WindowGeometry::for_limit(*limit, Duration::from_secs(1), 10).unwrap();
            assert_eq!(g.counter_width_bits(), *width, "limit {limit}");
            assert!(g.capacity() >= *limit);
        }
        let g = WindowGeometry::for_limit(10, Duration::from_micros(1_001), 10).unwrap();
        assert_eq!(g.frame_length_us(), 101);
        assert!(g.window() >= Duration::from_micros(1_001));
        assert_eq!(
            WindowGeometry::for_limit(1 << 48, Duration::from_secs(1), 10),
            Err(GeometryError::Limit { limit: 1 << 48 })
        );
        assert_eq!(
            WindowGeometry::for_limit((1 << 48) - 1, Duration::from_secs(1), 10)
                .unwrap()
                .counter_width_bits(),
            48
        );
        assert!(matches!(
            WindowGeometry::for_limit(1, Duration::ZERO, 10),
            Err(GeometryError::Per { .. })
        ));
    }

    #[test]
    fn memory_per_key_is_the_header_plus_n_plus_one_counters() {
        let g = WindowGeometry::new(1_000, us(2_000), 16).unwrap();
        assert_eq!(g.key_bytes(), 16 + 2 * 1_001);
        assert_eq!(g.bits_per_key(), 128 + 16 * 1_001);
        assert_eq!(g.window(), Duration::from_secs(2));
    }

    #[test]
    fn frames_are_absolute() {
        let g = WindowGeometry::new(10, us(1_000), 8).unwrap();
        assert_eq!(g.frame_of(WindowTime::from_micros(12_999)), 12);
        assert_eq!(g.frame_start(13), WindowTime::from_micros(13_000));
    }

    #[test]
    fn the_fingerprint_tells_geometries_apart() {
        let a = WindowGeometry::new(10, us(1_000_000), 4).unwrap();
        let b = WindowGeometry::new(10, us(1_000_000), 5).unwrap();
        let c = WindowGeometry::new(10, us(999_999), 4).unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert!(a.fingerprint() < 1 << 24);
        // The value the Lua library computed for this geometry (redis-cli, FCALL then GET).
        assert_eq!(a.fingerprint(), 16_187_792);
    }
}
