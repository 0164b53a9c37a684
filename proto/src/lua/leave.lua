-- LEAVE (REDLOCK.md §9): the call of a waiter that registered for grants (MARK) ends. It
-- leaves the key's line and drops its registration; unless the call won with the registered
-- value, a key that a release granted it meanwhile is deleted and handed on (wake.lua, which
-- this script starts with).
-- KEYS[1]: the lock key; KEYS[2]: its line; KEYS[3]: its registrations. ARGV[1]: the waiter
-- id; ARGV[2]: the registered value, or "" when the call won with it (the key is its lock).
-- Returns 1 when it deleted a granted key, else 0.
redis.pcall('ZREM', KEYS[2], ARGV[1])
redis.pcall('HDEL', KEYS[3], ARGV[1])
if ARGV[2] ~= '' and redis.call('GET', KEYS[1]) == ARGV[2] then
  redis.call('DEL', KEYS[1])
  wake(KEYS[1], KEYS[2], KEYS[3])
  return 1
end
return 0
