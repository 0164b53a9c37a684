-- MARK (REDLOCK.md §9): a waiter's place in the line of a lock key. KEYS[1]: the key's waiter
-- flag, a sorted set of waiter ids, first in line first. ARGV[1]: the waiter id
-- (`<client>.<n>`); ARGV[2]: ttl ms; ARGV[3]: "1" to stand first (a woken waiter whose attempt
-- lost), "0" to join at the back, or keep its place when already in line.
-- The flag then lives at least ttl ms. A flag of another type (an older client's plain mark), or
-- an ACL that refuses the sorted-set commands, leaves a plain mark (`SET flag 1 PX ttl`), whose
-- releases publish to every waiter. Returns 1 when in line, 0 for a plain mark.
local flag, id, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local function plain()
  redis.call('SET', flag, '1', 'PX', ttl)
  return 0
end
if ARGV[3] == '1' then
  local first = redis.pcall('ZRANGE', flag, 0, 0, 'WITHSCORES')
  if first.err then return plain() end
  if first[1] ~= id then
    redis.call('ZADD', flag, (tonumber(first[2]) or 1) - 1, id)
  end
else
  local score = redis.pcall('ZSCORE', flag, id)
  if type(score) == 'table' then return plain() end
  if not score then
    local last = redis.call('ZRANGE', flag, -1, -1, 'WITHSCORES')
    redis.call('ZADD', flag, (tonumber(last[2]) or -1) + 1, id)
  end
end
if redis.call('PTTL', flag) < ttl then
  redis.call('PEXPIRE', flag, ttl)
end
return 1
