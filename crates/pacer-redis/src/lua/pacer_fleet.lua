#!lua name=pacer_fleet_v2
--[[
Pacer: one learned rate for a fleet of processes, as a Redis 7 function library.

The store does atomicity only: the fleet's controller, its state and what members make of it are
Pacer's (pacer-core's FleetMember); this library keeps the members, their gauges, the sum of the
accepted units they reported, the state (an opaque value and its version) and the tick's schedule.

A fleet's three keys share one hash tag, so they live in one slot of a Redis Cluster:

  <tag>:m   sorted set   member -> the end of its lease (microseconds on the Redis clock)
  <tag>:g   hash         member -> its last gauges, "demand measured queued waited"
  <tag>:s   hash         v: the state's version (0: none), b: the state, acc: accepted units no
                         commit has counted, next: when the next tick is due (us),
                         claim / claim_until: the member that holds the due tick, and until when,
                         ptat / prate: the pool's theoretical arrival time (us) and last rate

Every key lives a day after the last call (PEXPIRE). Functions (every time in microseconds on the
Redis server's clock; floats as decimal strings):

  FCALL pacer_fleet_v2_sync   3 m g s member lease_us known_version demand measured queued waited
                                    accepted claim_us
        -> {now, members, version, state or nil, accepted, tick (0/1), gauges (a list of strings)}
  FCALL pacer_fleet_v2_commit 1 s member expected_version state accepted next_tick_us urgent channel
        -> {committed (0/1), version, state or nil}
  FCALL pacer_fleet_v2_leave  2 m g member -> 1
  FCALL pacer_fleet_v2_draw   1 s units rate burst max_wait_us not_before_us
        -> {now, at or -1, earliest}

`sync` renews the caller's lease, drops the members whose lease ended (and their gauges), keeps
the caller's gauges, adds its accepted units, and hands it the due tick (with every live member's
gauges) when no other member holds a live claim. `commit` writes the state only over
`expected_version`, bumps the version, takes `accepted` off the sum, and for a tick
(`next_tick_us` not empty) sets the next one's time and releases the caller's claim; an urgent
commit (`urgent` = 1) is published on `channel` (its new version), so members waiting there sync
at once. `draw` takes a request's units from the fleet's pool (GCRA at the given rate, units a
minute): the backlog is restated at a new rate, the bucket is empty when a stop (`not_before_us`)
ends, and the units are taken only if the request may go within `max_wait_us` (pacer-core's
`draw_rule` is the same rule).

The test build of this library (another name) reads `now` from a trailing argument.
]]

local TEST_CLOCK = false
local FORGET_MS = 86400000

local function now_us(args, n)
  if TEST_CLOCK then
    return tonumber(args[n + 1])
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function fmt(n)
  return string.format('%d', n)
end

local function number(v)
  if v == false or v == nil then
    return nil
  end
  return tonumber(v)
end

local function forget_later(keys)
  for _, k in ipairs(keys) do
    redis.call('PEXPIRE', k, FORGET_MS)
  end
end

local function sync(keys, args)
  local m, g, s = keys[1], keys[2], keys[3]
  local member = args[1]
  local lease = tonumber(args[2])
  local known = tonumber(args[3])
  local accepted = tonumber(args[8])
  local claim_us = tonumber(args[9])
  local now = now_us(args, 9)

  local expired = redis.call('ZRANGEBYSCORE', m, '-inf', fmt(now))
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', m, '-inf', fmt(now))
    redis.call('HDEL', g, unpack(expired))
  end
  redis.call('ZADD', m, fmt(now + lease), member)
  redis.call('HSET', g, member, args[4] .. ' ' .. args[5] .. ' ' .. args[6] .. ' ' .. args[7])
  local sum
  if accepted > 0 then
    sum = redis.call('HINCRBYFLOAT', s, 'acc', args[8])
  else
    sum = redis.call('HGET', s, 'acc') or '0'
  end

  local version = number(redis.call('HGET', s, 'v')) or 0
  local state = false
  if version ~= known then
    state = redis.call('HGET', s, 'b')
  end

  local next_tick = number(redis.call('HGET', s, 'next'))
  local holder = redis.call('HGET', s, 'claim')
  local until_us = number(redis.call('HGET', s, 'claim_until')) or 0
  local due = next_tick == nil or now >= next_tick
  local free = holder == false or until_us <= now or holder == member
  local tick = 0
  local gauges = {}
  if due and free then
    tick = 1
    redis.call('HSET', s, 'claim', member, 'claim_until', fmt(now + claim_us))
    gauges = redis.call('HVALS', g)
  end
  forget_later(keys)
  return { now, redis.call('ZCARD', m), version, state, sum, tick, gauges }
end

local function commit(keys, args)
  local s = keys[1]
  local member = args[1]
  local expected = tonumber(args[2])
  local version = number(redis.call('HGET', s, 'v')) or 0
  if version ~= expected then
    return { 0, version, redis.call('HGET', s, 'b') }
  end
  version = version + 1
  redis.call('HSET', s, 'v', fmt(version), 'b', args[3])
  local consumed = tonumber(args[4])
  if consumed > 0 then
    local left = (number(redis.call('HGET', s, 'acc')) or 0) - consumed
    if left < 0 then
      left = 0
    end
    redis.call('HSET', s, 'acc', string.format('%.17g', left))
  end
  if args[5] ~= '' then
    redis.call('HSET', s, 'next', args[5])
    if redis.call('HGET', s, 'claim') == member then
      redis.call('HDEL', s, 'claim', 'claim_until')
    end
  end
  if args[6] == '1' then
    redis.call('PUBLISH', args[7], fmt(version))
  end
  forget_later(keys)
  return { 1, version, false }
end

local function leave(keys, args)
  redis.call('ZREM', keys[1], args[1])
  redis.call('HDEL', keys[2], args[1])
  return 1
end

local function draw(keys, args)
  local s = keys[1]
  local units = tonumber(args[1])
  local rate = tonumber(args[2])
  local burst = tonumber(args[3])
  local max_wait = tonumber(args[4])
  local not_before = tonumber(args[5])
  local now = now_us(args, 5)
  if not (rate > 0) then
    return { now, -1, -1 }
  end
  local tat = number(redis.call('HGET', s, 'ptat')) or 0
  local last_rate = number(redis.call('HGET', s, 'prate')) or 0
  if last_rate > 0 and tat > now and last_rate ~= rate then
    tat = now + math.floor((tat - now) * last_rate / rate)
  end
  local unit = 60000000 / rate
  local slack = math.floor(math.max(burst, 0) * unit)
  local stop_end = 0
  if not_before > 0 then
    stop_end = not_before + slack
  end
  local base = math.max(tat, stop_end, now)
  local at = math.max(base - slack, now)
  if at - now > max_wait then
    return { now, -1, at }
  end
  redis.call('HSET', s, 'ptat', fmt(base + math.floor(math.max(units, 0) * unit)), 'prate', args[2])
  redis.call('PEXPIRE', s, FORGET_MS)
  return { now, at, at }
end

redis.register_function('pacer_fleet_v2_sync', sync)
redis.register_function('pacer_fleet_v2_commit', commit)
redis.register_function('pacer_fleet_v2_leave', leave)
redis.register_function('pacer_fleet_v2_draw', draw)
