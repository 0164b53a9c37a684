-- MARK (REDLOCK.md §9): a waiter's place in the line of a lock key. KEYS[1]: the key's waiter
-- flag, a sorted set of waiter ids, first in line first. ARGV[1]: the waiter id
-- (`<client>.<n>`); ARGV[2]: ttl ms; ARGV[3]: "1" to stand first (a woken waiter whose attempt
-- lost), "0" to join at the back, or keep its place when already in line (`ZADD NX`).
-- The flag then lives at least ttl ms. A flag of another type (an older client's plain mark), or
-- an ACL that refuses the sorted-set commands, leaves a plain mark (`SET flag 1 PX ttl`), whose
-- releases publish to every waiter. Returns 1 when in line, 0 for a plain mark.
local flag, id, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local front = ARGV[3] == '1'
local at = front and 0 or -1
local edge = redis.pcall('ZRANGE', flag, at, at, 'WITHSCORES')
if edge.err then
  redis.call('SET', flag, '1', 'PX', ttl)
  return 0
end
if edge[1] ~= id then
  if front then
    redis.call('ZADD', flag, (tonumber(edge[2]) or 1) - 1, id)
  else
    redis.call('ZADD', flag, 'NX', (tonumber(edge[2]) or -1) + 1, id)
  end
end
if redis.call('PTTL', flag) < ttl then
  redis.call('PEXPIRE', flag, ttl)
end
return 1
