//! The operations of a strict window on one key's bytes at a given time.
//!
//! This is the policy: what try, fill, events and eta decide from a key's state. The memory store
//! runs it under its lock, the conformance suite's `ReferenceWindow` runs it on explicit times,
//! and the Redis store runs the same decisions in Lua. Each function takes the key's bytes (empty
//! for "no key") and says whether it wrote them.

use super::ring;
use super::{
    EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowGeometry, WindowTime,
    check_limit, check_limited_call,
};

/// All or nothing.
pub(crate) fn try_take(
    g: &WindowGeometry,
    data: &mut Vec<u8>,
    now: WindowTime,
    limit: u64,
    count: u64,
) -> Result<(TryOutcome, bool), WindowError> {
    check_limited_call(g, limit, count)?;
    let taken = TryOutcome {
        taken: count,
        eta: now,
        now,
    };
    if count == 0 {
        return Ok((taken, false));
    }
    let cur = g.frame_of(now);
    let snap = ring::snapshot(g, data, cur)?;
    let total = snap.map_or(0, |s| s.total);
    if total + count <= limit {
        ring::record(g, data, snap.as_ref(), cur, count);
        return Ok((taken, true));
    }
    let s = snap.expect("a positive total has a key");
    let eta = g.frame_start(ring::eta_frame(g, data, &s, cur, total + count - limit, 0));
    Ok((TryOutcome { taken: 0, eta, now }, false))
}

/// The largest part that fits, and the ETA of the rest.
pub(crate) fn fill(
    g: &WindowGeometry,
    data: &mut Vec<u8>,
    now: WindowTime,
    limit: u64,
    count: u64,
) -> Result<(FillOutcome, bool), WindowError> {
    check_limited_call(g, limit, count)?;
    if count == 0 {
        let none = FillOutcome {
            taken: 0,
            eta: now,
            now,
        };
        return Ok((none, false));
    }
    let cur = g.frame_of(now);
    let snap = ring::snapshot(g, data, cur)?;
    let total = snap.map_or(0, |s| s.total);
    let take = limit.saturating_sub(total).min(count);
    // The ETA of the rest is read before recording: the snapshot describes these bytes.
    let eta = if take < count {
        let s = snap.expect("a total above limit - count has a key");
        let frame = ring::eta_frame(g, data, &s, cur, total + count - limit, take);
        g.frame_start(frame)
    } else {
        now
    };
    if take > 0 {
        ring::record(g, data, snap.as_ref(), cur, take);
    }
    Ok((
        FillOutcome {
            taken: take,
            eta,
            now,
        },
        take > 0,
    ))
}

/// Records without a check; refuses a total above the capacity.
pub(crate) fn events(
    g: &WindowGeometry,
    data: &mut Vec<u8>,
    now: WindowTime,
    count: u64,
) -> Result<(EventsOutcome, bool), WindowError> {
    let cur = g.frame_of(now);
    let snap = ring::snapshot(g, data, cur)?;
    let (total, expired) = snap.map_or((0, 0), |s| (s.total, s.expired));
    if count == 0 {
        let outcome = EventsOutcome {
            total,
            expired,
            now,
        };
        return Ok((outcome, false));
    }
    if count > g.capacity() - total {
        return Err(WindowError::Overflow {
            total,
            count,
            capacity: g.capacity(),
        });
    }
    ring::record(g, data, snap.as_ref(), cur, count);
    let outcome = EventsOutcome {
        total: total + count,
        expired,
        now,
    };
    Ok((outcome, true))
}

/// When `count` would fit, without writing.
pub(crate) fn eta(
    g: &WindowGeometry,
    data: &[u8],
    now: WindowTime,
    limit: u64,
    count: u64,
) -> Result<EtaOutcome, WindowError> {
    check_limit(g, limit)?;
    if count > limit {
        return Ok(EtaOutcome { eta: None, now });
    }
    let cur = g.frame_of(now);
    let snap = ring::snapshot(g, data, cur)?;
    let total = snap.map_or(0, |s| s.total);
    if count == 0 || total + count <= limit {
        return Ok(EtaOutcome {
            eta: Some(now),
            now,
        });
    }
    let s = snap.expect("a positive total has a key");
    let frame = ring::eta_frame(g, data, &s, cur, total + count - limit, 0);
    Ok(EtaOutcome {
        eta: Some(g.frame_start(frame)),
        now,
    })
}
