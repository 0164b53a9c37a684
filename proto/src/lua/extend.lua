-- EXTEND (REDLOCK.md §2.5, §6): owner-checked PEXPIRE that never re-creates or shortens keys.
-- KEYS: lock keys. ARGV[1]: value, ARGV[2]: new ttl in ms.
-- Returns 1 when every key holds the value (each lengthened to at least the new ttl),
-- -1 when any key holds another value, 0 when any key is absent; in both failure cases
-- nothing is written.
local absent = false
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if not v then
    absent = true
  elseif v ~= ARGV[1] then
    return -1
  end
end
if absent then
  return 0
end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
return 1
