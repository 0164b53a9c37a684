-- FENCED-ACQUIRE (REDLOCK.md §7.3, §6): take every lock key of the set or none, and on success
-- advance each resource's fencing counter to max(old + 1, S * 2^20), S = the node's Unix
-- time in seconds.
-- KEYS: lock keys (sorted) followed by their counter keys, in the same order.
-- ARGV[1]: value, ARGV[2]: ttl in ms, ARGV[3]: counter ttl in ms or "0" for none.
-- Returns 0 (writing nothing) when any lock key exists, else the array of new counters.
if redis.replicate_commands then redis.replicate_commands() end
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1048576
local out = {}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  local old = tonumber(redis.call('GET', KEYS[n + i]) or '0')
  local new = math.max(old + 1, floor)
  if ARGV[3] ~= '0' then
    redis.call('SET', KEYS[n + i], string.format('%.0f', new), 'PX', ARGV[3])
  else
    redis.call('SET', KEYS[n + i], string.format('%.0f', new))
  end
  out[i] = new
end
return out
