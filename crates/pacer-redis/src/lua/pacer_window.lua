#!lua name=pacer_window_v1
--[[
Pacer: strict discrete (framed) sliding windows, as a Redis 7 function library.

A window of N frames of L microseconds admits at most `limit` events in any N*L span. Frames are
absolute: frame = floor(now_us / L) on the Redis server's clock. An event recorded in frame f counts
in frames f .. f+N and leaves the window when frame f+N+1 begins, so it lives between N*L and
(N+1)*L: at most one frame of extra delay.

Key layout (a plain string of 16 + (N+1)*B bytes, B = ceil(width/8), all integers big-endian):

  bytes [0, 7)    frame  the newest frame the ring describes (u56)
  bytes [7, 13)   base   the running count P(frame - N - 1), modulo 2^width (u48)
  bytes [13, 16)  tag    a 24-bit fingerprint of (N, L, width): detects a geometry change
  bytes [16, ...) ring   N+1 slots of B bytes; the slot (f mod (N+1)) holds P(f) modulo 2^width

P(f) is the running count of events recorded in frames up to f. The window total at frame c is
P(c) - P(c-N-1), so moving the window forward never needs the sum of the frames it drops: the slots
of the frames jumped over are filled with P(stored frame) by one SETRANGE of a repeated pattern
(two when the range wraps), and a jump of a whole window rewrites the key with one SET. A total
above 2^width - 1 is refused, never wrapped, so the modular differences are always exact.

Functions (N = frames, L = frame_length_us, W = counter_width_bits; every argument a decimal
integer; `now` and every ETA are absolute microseconds since the Unix epoch on the Redis clock):

  FCALL    pacer_window_v1_try    1 key N L W limit count -> {taken, eta, now}   all or nothing
  FCALL    pacer_window_v1_fill   1 key N L W limit count -> {taken, eta, now}   the largest part that fits
  FCALL    pacer_window_v1_events 1 key N L W count       -> {total, expired, now} no check
  FCALL_RO pacer_window_v1_eta    1 key N L W limit count -> {eta, now}          read-only
  FCALL_RO pacer_window_v1_now    0                       -> now

eta = -1 means never (count > limit). A call with count 0 never writes; `expired` counts the
events that left the window since the key was last written. Errors (the first word is the code):
PACER_ARG (a bad argument), PACER_GEOMETRY (the key holds a window of another geometry),
PACER_OVERFLOW (an `events` call would take the total above 2^W - 1; nothing is written).

A clock that steps back is treated as "no time passed": the ring is re-anchored at the new current
frame, so no event leaves the window early and the ring stays consistent.
]]

local LIB = 'pacer_window_v1'
-- The test build of this library (another name) reads `now` from a trailing argument.
local TEST_CLOCK = false

local HEADER = 16
local MAX_FRAMES = 100000
local MAX_WIDTH = 48
local MAX_WINDOW_US = 4503599627370496 -- 2^52
local MAX_ARG = 9007199254740991 -- 2^53 - 1: the largest integer a Lua number holds exactly
local TAG_MOD = 16777213 -- the largest prime below 2^24
local TEST_TTL_EXTRA_MS = 60000

-- Errors are raised as {pacer = message} and turned into error replies by `entry`.
local function fail(code, message)
  error({ pacer = code .. ' ' .. message })
end

local function fmt(n)
  return string.format('%d', n)
end

local function int_arg(args, i, name, lo, hi)
  local s = args[i]
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^%d+$') then
    local shown = type(s) == 'string' and string.sub(s, 1, 40) or tostring(s)
    fail('PACER_ARG', name .. ' must be an integer in ' .. fmt(lo) .. '..' .. fmt(hi) .. ', got "' .. shown .. '"')
  end
  local v = tonumber(s)
  if v < lo or v > hi then
    fail('PACER_ARG', name .. ' must be an integer in ' .. fmt(lo) .. '..' .. fmt(hi) .. ', got ' .. s)
  end
  return v
end

local function check_counts(name, keys, args, nkeys, nargs)
  if #keys ~= nkeys then
    fail('PACER_ARG', name .. ' takes ' .. nkeys .. ' key(s), got ' .. #keys)
  end
  local want = nargs + (TEST_CLOCK and 1 or 0)
  if #args ~= want then
    fail('PACER_ARG', name .. ' takes ' .. want .. ' arguments, got ' .. #args)
  end
end

local function clock(args, nargs)
  if TEST_CLOCK then
    return int_arg(args, nargs + 1, 'now_us', 0, MAX_ARG)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- A 24-bit fingerprint of the geometry; Pacer's Rust code computes the same (geometry.rs).
local function fingerprint(n, len, w)
  local h = 0
  h = math.fmod(h * 1000003 + n, TAG_MOD)
  h = math.fmod(h * 1000003 + len, TAG_MOD)
  h = math.fmod(h * 1000003 + w, TAG_MOD)
  return h
end

local function geometry(args)
  local n = int_arg(args, 1, 'frames', 1, MAX_FRAMES)
  local len = int_arg(args, 2, 'frame_length_us', 1, MAX_WINDOW_US)
  local w = int_arg(args, 3, 'counter_width_bits', 1, MAX_WIDTH)
  local f = n + 1
  if f * len > MAX_WINDOW_US then
    fail('PACER_ARG', '(frames + 1) * frame_length_us must be at most 2^52, got ' .. fmt(f) .. ' * ' .. fmt(len))
  end
  local b = math.floor((w + 7) / 8)
  local m = 2 ^ w
  return { n = n, f = f, len = len, w = w, b = b, m = m, cap = m - 1, size = HEADER + f * b,
           tag = fingerprint(n, len, w) }
end

-- Big-endian unsigned integers of b bytes (Redis's bundled `struct` library: C, not Lua).
local function enc(v, b)
  return struct.pack('>I' .. b, v)
end

local function dec(raw, pos, b)
  return (struct.unpack('>I' .. b, raw, pos))
end

local function frame_of(now, len)
  return (now - math.fmod(now, len)) / len
end

local function wrap(g, x)
  return math.fmod(x + g.m, g.m)
end

local function slot_pos(g, f)
  return HEADER + math.fmod(f, g.f) * g.b + 1
end

local function header(g, frame, base)
  return struct.pack('>I7I6I3', frame, base, g.tag)
end

-- The state of `key` as seen at frame `cur`, without writing; nil when there is no key.
local function load(key, g, cur)
  local raw = redis.call('GET', key)
  if not raw then
    return nil
  end
  local stored, base, tag = -1, 0, -1
  if #raw >= HEADER then
    stored, base, tag = struct.unpack('>I7I6I3', raw)
  end
  if #raw ~= g.size or tag ~= g.tag then
    fail('PACER_GEOMETRY', 'key holds ' .. #raw .. ' bytes with geometry tag ' .. tag .. '; frames=' .. fmt(g.n) ..
      ' frame_length_us=' .. fmt(g.len) .. ' counter_width_bits=' .. g.w .. ' needs ' .. g.size ..
      ' bytes with tag ' .. g.tag)
  end
  local st = { raw = raw, stored = stored, base = base, off = 0, back = false }
  if st.stored > cur then
    -- The clock stepped back: re-anchor the ring at `cur` (logical frame f is in raw slot f + off).
    st.off = math.fmod(st.stored - cur, g.f)
    st.stored = cur
    st.back = true
  end
  st.last = dec(raw, slot_pos(g, st.stored + st.off), g.b)
  st.jump = cur - st.stored
  if st.jump >= g.f then
    st.fresh = true
    st.total = 0
    st.expired = wrap(g, st.last - st.base)
  else
    if st.jump == 0 then
      st.newbase = st.base
    else
      -- The slot of `cur` still holds P(cur - N - 1): the new base.
      st.newbase = dec(raw, slot_pos(g, cur + st.off), g.b)
    end
    st.total = wrap(g, st.last - st.newbase)
    st.expired = wrap(g, st.newbase - st.base)
  end
  return st
end

-- P(f) - base for a frame f in [cur - N, cur] of a non-fresh state.
local function rel(g, st, f)
  local v = st.last
  if f <= st.stored then
    v = dec(st.raw, slot_pos(g, f + st.off), g.b)
  end
  return wrap(g, v - st.newbase)
end

-- The earliest time at which `need` more of the counted events have left the window; `extra`
-- events were just recorded in `cur`. Binary search: P is non-decreasing over the window.
local function eta_for(g, st, cur, need, extra)
  -- Frames before the epoch hold nothing, so the search starts at frame 0 at the earliest.
  local lo, hi = math.max(cur - g.n, 0), cur
  while lo < hi do
    local mid = lo + math.floor((hi - lo) / 2)
    local d = rel(g, st, mid)
    if mid == cur then d = d + extra end
    if d >= need then hi = mid else lo = mid + 1 end
  end
  return (lo + g.f) * g.len
end

local function ttl_ms(g, cur, now)
  local left = (cur + g.f) * g.len - now
  local ms = math.floor((left + 999) / 1000)
  if ms < 1 then ms = 1 end
  if TEST_CLOCK then ms = ms + TEST_TTL_EXTRA_MS end
  return ms
end

-- Records `c` events in frame `cur` (the state `st` was read in this call).
local function record(key, g, st, cur, now, c)
  local ttl = ttl_ms(g, cur, now)
  local b = g.b
  if st == nil or st.fresh then
    local i = math.fmod(cur, g.f)
    local zero = string.rep('\0', b)
    redis.call('SET', key, header(g, cur, 0) .. string.rep(zero, i) .. enc(c, b) .. string.rep(zero, g.f - i - 1), 'PX', ttl)
    return
  end
  -- Frames stored+1 .. cur-1 get P(stored); frame cur gets P(stored) + c. At most two contiguous
  -- pieces of the ring (the range may wrap), each one SETRANGE.
  local fill = enc(st.last, b)
  local top = enc(wrap(g, st.last + c), b)
  local pieces
  if st.jump == 0 then
    pieces = { { math.fmod(cur, g.f), top } }
  else
    local a = math.fmod(st.stored + 1, g.f)
    local head = g.f - a
    if st.jump <= head then
      pieces = { { a, string.rep(fill, st.jump - 1) .. top } }
    else
      pieces = { { a, string.rep(fill, head) }, { 0, string.rep(fill, st.jump - head - 1) .. top } }
    end
  end
  local hdr = header(g, cur, st.newbase)
  if st.back then
    -- The clock stepped back: persist the re-anchoring (the header's frame, and the ring rotated
    -- so that off = 0), then write the key whole.
    local ring = string.sub(st.raw, HEADER + 1)
    local cut = st.off * b
    ring = string.sub(ring, cut + 1) .. string.sub(ring, 1, cut)
    for _, p in ipairs(pieces) do
      local at = p[1] * b
      ring = string.sub(ring, 1, at) .. p[2] .. string.sub(ring, at + #p[2] + 1)
    end
    redis.call('SET', key, hdr .. ring, 'PX', ttl)
    return
  end
  for _, p in ipairs(pieces) do
    redis.call('SETRANGE', key, HEADER + p[1] * b, p[2])
  end
  if st.jump > 0 then
    redis.call('SETRANGE', key, 0, hdr)
  end
  redis.call('PEXPIRE', key, ttl)
end

local function window_args(name, keys, args, with_limit)
  local nargs = with_limit and 5 or 4
  check_counts(name, keys, args, 1, nargs)
  local g = geometry(args)
  local limit = nil
  local count
  if with_limit then
    limit = int_arg(args, 4, 'limit', 0, MAX_ARG)
    if limit > g.cap then
      fail('PACER_ARG', 'limit ' .. fmt(limit) .. ' is above the capacity ' .. fmt(g.cap) .. ' of ' .. g.w .. '-bit counters')
    end
    count = int_arg(args, 5, 'count', 0, MAX_ARG)
  else
    count = int_arg(args, 4, 'count', 0, MAX_ARG)
  end
  return g, limit, count, clock(args, nargs)
end

local function op_try(keys, args)
  local g, limit, c, now = window_args(LIB .. '_try', keys, args, true)
  if c > limit then return { 0, -1, now } end
  if c == 0 then return { 0, now, now } end
  local cur = frame_of(now, g.len)
  local st = load(keys[1], g, cur)
  local total = st and st.total or 0
  local need = total + c - limit
  if need <= 0 then
    record(keys[1], g, st, cur, now, c)
    return { c, now, now }
  end
  return { 0, eta_for(g, st, cur, need, 0), now }
end

local function op_fill(keys, args)
  local g, limit, c, now = window_args(LIB .. '_fill', keys, args, true)
  if c > limit then return { 0, -1, now } end
  if c == 0 then return { 0, now, now } end
  local cur = frame_of(now, g.len)
  local st = load(keys[1], g, cur)
  local total = st and st.total or 0
  local take = limit - total
  if take > c then take = c end
  if take < 0 then take = 0 end
  if take > 0 then
    record(keys[1], g, st, cur, now, take)
  end
  if take == c then
    return { take, now, now }
  end
  return { take, eta_for(g, st, cur, total + c - limit, take), now }
end

local function op_events(keys, args)
  local g, _, c, now = window_args(LIB .. '_events', keys, args, false)
  local cur = frame_of(now, g.len)
  local st = load(keys[1], g, cur)
  local total = st and st.total or 0
  local expired = st and st.expired or 0
  if c == 0 then
    return { total, expired, now }
  end
  if total + c > g.cap then
    fail('PACER_OVERFLOW', 'total=' .. fmt(total) .. ' count=' .. fmt(c) .. ' capacity=' .. fmt(g.cap))
  end
  record(keys[1], g, st, cur, now, c)
  return { total + c, expired, now }
end

local function op_eta(keys, args)
  local g, limit, c, now = window_args(LIB .. '_eta', keys, args, true)
  if c > limit then return { -1, now } end
  if c == 0 then return { now, now } end
  local cur = frame_of(now, g.len)
  local st = load(keys[1], g, cur)
  local total = st and st.total or 0
  local need = total + c - limit
  if need <= 0 then
    return { now, now }
  end
  return { eta_for(g, st, cur, need, 0), now }
end

local function op_now(keys, args)
  check_counts(LIB .. '_now', keys, args, 0, 0)
  return clock(args, 0)
end

-- Runs `body`, turning Pacer's own failures into plain error replies (no script suffix).
local function entry(body)
  return function(keys, args)
    local ok, res = pcall(body, keys, args)
    if ok then
      return res
    end
    if type(res) == 'table' and res.pacer then
      return redis.error_reply(res.pacer)
    end
    error(res)
  end
end

redis.register_function{ function_name = LIB .. '_try', callback = entry(op_try) }
redis.register_function{ function_name = LIB .. '_fill', callback = entry(op_fill) }
redis.register_function{ function_name = LIB .. '_events', callback = entry(op_events) }
redis.register_function{ function_name = LIB .. '_eta', callback = entry(op_eta), flags = { 'no-writes' } }
redis.register_function{ function_name = LIB .. '_now', callback = entry(op_now), flags = { 'no-writes' } }
