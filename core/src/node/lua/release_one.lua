-- RELEASE of one key (REDLOCK.md §2.4): compare-and-delete.
-- KEYS[1]: lock key. ARGV[1]: value.
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
elseif v then
  return -1
end
return 0
