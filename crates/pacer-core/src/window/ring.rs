//! The frame ring: the pure algorithm of a strict window over one key's bytes.
//!
//! The memory store runs it; the Redis store runs the same algorithm in Lua
//! (`crates/pacer-redis/src/lua/pacer_window.lua`) on the same byte layout, and a test compares
//! the two byte for byte. The layout (all integers big-endian):
//!
//! ```text
//! bytes  0..7   frame  the newest frame the ring describes (u56)
//! bytes  7..13  base   P(frame − N − 1) mod 2^width (u48)
//! bytes 13..16  tag    WindowGeometry::fingerprint (u24)
//! bytes 16..    ring   N + 1 slots of ceil(width / 8) bytes; slot f mod (N + 1) holds P(f) mod 2^width
//! ```
//!
//! `P(f)` is the running count of events recorded in frames up to `f`. The total at frame `c` is
//! `P(c) − P(c − N − 1)`: moving the window forward never sums the frames it drops. The slots of
//! the frames jumped over are set to `P(stored frame)` (one contiguous run, two when it wraps),
//! and a jump of a whole window starts a fresh ring. Totals above `2^width − 1` are refused, so
//! the modular differences are exact. A stored frame ahead of `now` (the clock stepped back) is
//! re-anchored at `now`: no time passed, no event leaves early.
//!
//! An empty `Vec` stands for "no key".

use super::geometry::HEADER_BYTES;
use super::{WindowError, WindowGeometry};

/// The state of a key at frame `cur`, read without writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The newest stored frame, re-anchored to at most `cur`.
    stored: u64,
    /// The ring's rotation after a clock step back: logical frame `f` is in slot `f + off`.
    off: u64,
    /// `P(stored)`.
    last: u64,
    /// `cur − stored`.
    jump: u64,
    /// `P(cur − N − 1)`: the base after moving to `cur`.
    new_base: u64,
    /// True when the whole window has passed: the ring starts afresh.
    fresh: bool,
    /// Events in the window at `cur`.
    pub(crate) total: u64,
    /// Events that left the window since the key was last written.
    pub(crate) expired: u64,
}

fn read_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |v, &b| (v << 8) | u64::from(b))
}

fn write_be(out: &mut [u8], mut v: u64) {
    for b in out.iter_mut().rev() {
        *b = (v & 0xff) as u8;
        v >>= 8;
    }
}

fn mask(g: &WindowGeometry) -> u64 {
    g.capacity()
}

fn slots(g: &WindowGeometry) -> u64 {
    g.ring_slots()
}

fn slot_at(g: &WindowGeometry, data: &[u8], f: u64) -> u64 {
    let b = g.slot_bytes();
    let i = HEADER_BYTES + (f % slots(g)) as usize * b;
    read_be(&data[i..i + b])
}

fn encode_slot(g: &WindowGeometry, v: u64) -> Vec<u8> {
    let mut out = vec![0; g.slot_bytes()];
    write_be(&mut out, v);
    out
}

fn header(g: &WindowGeometry, frame: u64, base: u64) -> [u8; HEADER_BYTES] {
    let mut h = [0; HEADER_BYTES];
    write_be(&mut h[0..7], frame);
    write_be(&mut h[7..13], base);
    write_be(&mut h[13..16], u64::from(g.fingerprint()));
    h
}

/// Reads `data` (empty = no key) at frame `cur`.
///
/// # Errors
///
/// [`WindowError::GeometryMismatch`] when the bytes were written with another geometry.
pub(crate) fn snapshot(
    g: &WindowGeometry,
    data: &[u8],
    cur: u64,
) -> Result<Option<Snapshot>, WindowError> {
    if data.is_empty() {
        return Ok(None);
    }
    if data.len() != g.key_bytes() || read_be(&data[13..16]) != u64::from(g.fingerprint()) {
        return Err(WindowError::GeometryMismatch { requested: *g });
    }
    let m = mask(g);
    let mut stored = read_be(&data[0..7]);
    let base = read_be(&data[7..13]);
    let mut off = 0;
    if stored > cur {
        off = (stored - cur) % slots(g);
        stored = cur;
    }
    let last = slot_at(g, data, stored + off);
    let jump = cur - stored;
    let snap = if jump >= slots(g) {
        Snapshot {
            stored,
            off,
            last,
            jump,
            new_base: last,
            fresh: true,
            total: 0,
            expired: last.wrapping_sub(base) & m,
        }
    } else {
        let new_base = if jump == 0 {
            base
        } else {
            slot_at(g, data, cur + off)
        };
        Snapshot {
            stored,
            off,
            last,
            jump,
            new_base,
            fresh: false,
            total: last.wrapping_sub(new_base) & m,
            expired: new_base.wrapping_sub(base) & m,
        }
    };
    Ok(Some(snap))
}

/// `P(f) − base` for a frame `f` in `[cur − N, cur]`.
fn relative(g: &WindowGeometry, data: &[u8], s: &Snapshot, f: u64) -> u64 {
    let v = if f <= s.stored {
        slot_at(g, data, f + s.off)
    } else {
        s.last
    };
    v.wrapping_sub(s.new_base) & mask(g)
}

/// The first frame at which `need` of the counted events have left the window, `extra` events
/// having just been recorded in `cur`. `need` must be at most `total + extra`.
pub(crate) fn eta_frame(
    g: &WindowGeometry,
    data: &[u8],
    s: &Snapshot,
    cur: u64,
    need: u64,
    extra: u64,
) -> u64 {
    // Frames before the epoch hold nothing, so the search starts at frame 0 at the earliest.
    let (mut lo, mut hi) = (cur.saturating_sub(u64::from(g.frames())), cur);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mut d = relative(g, data, s, mid);
        if mid == cur {
            d += extra;
        }
        if d >= need {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo + slots(g)
}

/// Records `count` events in frame `cur` on `data` (empty = no key), read as `snap` in this call.
pub(crate) fn record(
    g: &WindowGeometry,
    data: &mut Vec<u8>,
    snap: Option<&Snapshot>,
    cur: u64,
    count: u64,
) {
    let b = g.slot_bytes();
    let s = match snap {
        Some(s) if !s.fresh => *s,
        _ => {
            data.clear();
            data.extend_from_slice(&header(g, cur, 0));
            data.resize(g.key_bytes(), 0);
            let i = HEADER_BYTES + (cur % slots(g)) as usize * b;
            write_be(&mut data[i..i + b], count);
            return;
        }
    };
    if s.off != 0 {
        data[HEADER_BYTES..].rotate_left(s.off as usize * b);
    }
    // Frames stored+1 .. cur−1 get P(stored); frame cur gets P(stored) + count.
    let fill = encode_slot(g, s.last);
    let top = encode_slot(g, (s.last + count) & mask(g));
    for f in s.stored + 1..cur {
        let i = HEADER_BYTES + (f % slots(g)) as usize * b;
        data[i..i + b].copy_from_slice(&fill);
    }
    let i = HEADER_BYTES + (cur % slots(g)) as usize * b;
    data[i..i + b].copy_from_slice(&top);
    data[..HEADER_BYTES].copy_from_slice(&header(g, cur, s.new_base));
}

/// The moment (in µs) when every event recorded up to frame `cur` has left the window: when a
/// key last written in `cur` can be dropped.
pub(crate) fn expires_at_us(g: &WindowGeometry, cur: u64) -> u64 {
    (cur + slots(g)).saturating_mul(g.frame_length_us())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn geometry(frames: u32, width: u8) -> WindowGeometry {
        WindowGeometry::new(frames, Duration::from_micros(1_000), width).unwrap()
    }

    fn total(g: &WindowGeometry, data: &[u8], cur: u64) -> u64 {
        snapshot(g, data, cur).unwrap().map_or(0, |s| s.total)
    }

    fn add(g: &WindowGeometry, data: &mut Vec<u8>, cur: u64, count: u64) {
        let s = snapshot(g, data, cur).unwrap();
        record(g, data, s.as_ref(), cur, count);
    }

    #[test]
    fn events_count_for_n_plus_one_frames() {
        let g = geometry(3, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 100, 2);
        add(&g, &mut data, 101, 3);
        for (cur, want) in [(101, 5), (103, 5), (104, 3), (105, 0), (200, 0)] {
            assert_eq!(total(&g, &data, cur), want, "frame {cur}");
        }
        let s = snapshot(&g, &data, 104).unwrap().unwrap();
        assert_eq!(s.expired, 2);
    }

    #[test]
    fn a_jump_fills_the_skipped_slots_and_wraps() {
        let g = geometry(4, 16);
        let mut data = Vec::new();
        add(&g, &mut data, 3, 1); // slot 3
        add(&g, &mut data, 6, 2); // fills slots 4, 0; slot 1 = frame 6
        assert_eq!(total(&g, &data, 6), 3);
        assert_eq!(total(&g, &data, 8), 2, "frame 3 left at frame 8");
        assert_eq!(read_be(&data[0..7]), 6);
        let ring: Vec<u64> = (0..5).map(|f| slot_at(&g, &data, f)).collect();
        assert_eq!(ring, vec![1, 3, 0, 1, 1]);
    }

    #[test]
    fn a_whole_window_jump_starts_afresh_and_reports_what_expired() {
        let g = geometry(2, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 10, 4);
        let s = snapshot(&g, &data, 13).unwrap().unwrap();
        assert!(s.fresh);
        assert_eq!((s.total, s.expired), (0, 4));
        record(&g, &mut data, Some(&s), 13, 1);
        assert_eq!(read_be(&data[7..13]), 0, "a fresh ring has base 0");
        assert_eq!(total(&g, &data, 13), 1);
    }

    #[test]
    fn eta_is_the_frame_where_enough_has_left() {
        let g = geometry(4, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 10, 2);
        add(&g, &mut data, 12, 3);
        add(&g, &mut data, 13, 1);
        let s = snapshot(&g, &data, 13).unwrap().unwrap();
        assert_eq!(s.total, 6);
        // need 1 or 2: frame 10 must leave (at 15); need 3..5: frame 12 too (at 17); 6: all (18).
        for (need, frame) in [(1, 15), (2, 15), (3, 17), (5, 17), (6, 18)] {
            assert_eq!(eta_frame(&g, &data, &s, 13, need, 0), frame, "need {need}");
        }
        assert_eq!(
            eta_frame(&g, &data, &s, 13, 7, 1),
            18,
            "extra counts in cur"
        );
    }

    #[test]
    fn counters_wrap_modulo_the_width_without_losing_the_total() {
        let g = geometry(2, 4); // capacity 15
        let mut data = Vec::new();
        let mut expected = std::collections::VecDeque::new();
        for cur in 0..40u64 {
            add(&g, &mut data, cur, 5);
            expected.push_back(5);
            if expected.len() > 3 {
                expected.pop_front();
            }
            assert_eq!(total(&g, &data, cur), expected.iter().sum::<u64>());
        }
    }

    #[test]
    fn a_clock_step_back_is_no_time_passing() {
        let g = geometry(3, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 100, 2);
        add(&g, &mut data, 101, 1);
        // The clock steps back 6 frames (more than a window): nothing leaves.
        let s = snapshot(&g, &data, 95).unwrap().unwrap();
        assert_eq!((s.total, s.expired, s.jump), (3, 0, 0));
        record(&g, &mut data, Some(&s), 95, 4);
        assert_eq!(read_be(&data[0..7]), 95);
        // The events keep their ages relative to the new clock: frame 100's pair was one frame
        // older than frame 101's single event, which is now frame 95.
        assert_eq!(total(&g, &data, 97), 7);
        assert_eq!(total(&g, &data, 98), 5, "the pair (now frame 94) left");
        assert_eq!(total(&g, &data, 99), 0);
    }

    #[test]
    fn a_step_back_by_whole_rings_is_kept_too() {
        let g = geometry(3, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 200, 2);
        add(&g, &mut data, 192, 1); // 8 frames back: two rings, no rotation
        assert_eq!(read_be(&data[0..7]), 192);
        assert_eq!(total(&g, &data, 195), 3);
        assert_eq!(total(&g, &data, 196), 0);
    }

    #[test]
    fn another_geometry_is_refused() {
        let g = geometry(3, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 1, 1);
        for other in [
            geometry(4, 8),
            geometry(3, 16),
            geometry(3, 7),
            WindowGeometry::new(3, Duration::from_micros(999), 8).unwrap(),
        ] {
            assert!(matches!(
                snapshot(&other, &data, 1),
                Err(WindowError::GeometryMismatch { requested }) if requested == other
            ));
        }
    }

    #[test]
    fn a_window_at_the_epoch_searches_no_negative_frame() {
        let g = geometry(10, 8);
        let mut data = Vec::new();
        add(&g, &mut data, 0, 3);
        add(&g, &mut data, 2, 1);
        let s = snapshot(&g, &data, 2).unwrap().unwrap();
        assert_eq!(eta_frame(&g, &data, &s, 2, 1, 0), 11);
        assert_eq!(eta_frame(&g, &data, &s, 2, 4, 0), 13);
    }

    #[test]
    fn keys_expire_when_their_newest_frame_leaves() {
        let g = geometry(3, 8);
        assert_eq!(expires_at_us(&g, 10), 14_000);
    }
}
