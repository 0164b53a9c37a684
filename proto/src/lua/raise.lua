-- RAISE (REDLOCK.md §7.3, §7.4): owner-checked; lifts each counter to the acquisition's token.
-- KEYS: lock keys followed by their counter keys. ARGV[1]: value, ARGV[1 + i]: token of
-- resource i, ARGV[#] : counter ttl in ms or "0".
-- Returns 0 (writing nothing) unless every lock key holds the value, else 1.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local counter_ttl = ARGV[n + 2]
for i = 1, n do
  local token = tonumber(ARGV[1 + i])
  local old = tonumber(redis.call('GET', KEYS[n + i]) or '0')
  if old < token then
    if counter_ttl ~= '0' then
      redis.call('SET', KEYS[n + i], ARGV[1 + i], 'PX', counter_ttl)
    else
      redis.call('SET', KEYS[n + i], ARGV[1 + i])
    end
  end
end
return 1
