-- EXTEND-BATCH (REDLOCK.md §5.3): EXTEND for several locks of one client in one request.
-- KEYS: every lock's keys, lock after lock. ARGV: per lock, three values: its number of
-- keys, its value, its new ttl in ms.
-- Returns one integer per lock, with EXTEND's meaning: 1 when every key of the lock holds
-- its value (each lengthened to at least the new ttl), -1 when a key holds another value,
-- 0 when a key is absent; and -2 when a key holds another type, -3 when reading a key
-- failed otherwise (where EXTEND would fail with the error: here the other locks of the
-- batch are still handled). A lock that is not 1 is left as it was.
local out = {}
local k = 0
for e = 1, #ARGV / 3 do
  local n = tonumber(ARGV[3 * e - 2])
  local value = ARGV[3 * e - 1]
  local ttl = tonumber(ARGV[3 * e])
  local r = 1
  for i = k + 1, k + n do
    local v = redis.pcall('GET', KEYS[i])
    if type(v) == 'table' and v.err then
      r = string.find(v.err, 'WRONGTYPE', 1, true) == 1 and -2 or -3
      break
    elseif not v then
      r = 0
    elseif v ~= value then
      r = -1
      break
    end
  end
  if r == 1 then
    for i = k + 1, k + n do
      if redis.call('PTTL', KEYS[i]) < ttl then
        redis.call('PEXPIRE', KEYS[i], ttl)
      end
    end
  end
  out[e] = r
  k = k + n
end
return out
