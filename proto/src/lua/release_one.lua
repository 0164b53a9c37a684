-- RELEASE of one key (REDLOCK.md §2.4, §9): compare-and-delete, then publish the key on
-- `<key>:released` when ARGV[2] is "1" (through pcall: a channel the ACL denies never turns a
-- completed delete into an error).
-- KEYS[1]: lock key. ARGV[1]: value. ARGV[2]: notify flag.
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == '1' then
    redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
  end
  return 1
elseif v then
  return -1
end
return 0
