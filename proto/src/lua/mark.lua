-- MARK (REDLOCK.md §9): a waiter marks a lock key's waiter flag and takes its place in the key's
-- line. KEYS[1]: the waiter flag (a plain string: while it exists, a release tells waiters);
-- KEYS[2]: the line, a sorted set of waiter ids, first in line first. ARGV[1]: the waiter id
-- (`<client>.<n>`); ARGV[2]: ttl ms; ARGV[3]: "1" to stand first (a woken waiter whose attempt
-- lost), "0" to join at the back, or keep its place when already in line (`ZADD NX`).
-- A waiter's first mark may register it for grants: KEYS[3], the key's registrations (a hash),
-- and ARGV[4], `<lock ttl ms>:<n>:<value>` (n: the waiter's registration number). It is stored
-- with this node's time as `<ms>:<ttl ms>:<n>:<value>`, and a release that pops the waiter
-- sets the lock key to the value until that time plus the ttl (wake.lua).
-- Flag and line then live at least ttl ms: a flag with less left is renewed to twice that, so
-- that most marks of a busy key renew nothing, and the line, renewed with it or made anew,
-- lives at least as long as the flag. An ACL that refuses the
-- sorted-set commands leaves the flag alone, whose releases publish to every waiter.
-- Returns 0 for a flag only (the line refused), 1 in line.
local flag, line, id, ttl = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
local front = ARGV[3] == '1'
local at = front and 0 or -1
local edge = redis.pcall('ZRANGE', line, at, at, 'WITHSCORES')
local left = redis.call('PTTL', flag)
local renew = left < ttl
if renew then
  left = 2 * ttl
  redis.call('SET', flag, '1', 'PX', left)
end
if edge.err then
  return 0
end
if edge[1] ~= id then
  if front then
    redis.call('ZADD', line, (tonumber(edge[2]) or 1) - 1, id)
  else
    redis.call('ZADD', line, 'NX', (tonumber(edge[2]) or -1) + 1, id)
  end
end
if renew or not edge[1] then
  redis.call('PEXPIRE', line, math.max(left, 2 * ttl))
end
if KEYS[3] and ARGV[4] then
  local t = redis.call('TIME')
  local at = t[1] * 1000 + math.floor(t[2] / 1000)
  local r = redis.pcall('HSET', KEYS[3], id, at .. ':' .. ARGV[4])
  if not (type(r) == 'table' and r.err) then
    redis.pcall('PEXPIRE', KEYS[3], math.max(left, 2 * ttl))
  end
end
return 1
