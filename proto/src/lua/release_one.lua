-- RELEASE of one key (REDLOCK.md §2.4, §9): compare-and-delete, then notify waiters on
-- `<key>:released` (through pcall: a channel the ACL denies never turns a completed delete
-- into an error).
-- KEYS[1]: lock key; KEYS[2] in mode "2": its waiter flag. ARGV[1]: value. ARGV[2]:
-- notification mode: "0" none, "1" publish, "2" publish only while the waiter flag exists (a
-- waiter marked it; the flag is read in the same call as the key and left to expire).
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v, waited
if ARGV[2] == '2' then
  local r = redis.call('MGET', KEYS[1], KEYS[2])
  v, waited = r[1], r[2]
else
  v, waited = redis.call('GET', KEYS[1]), ARGV[2] == '1'
end
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if waited then
    redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
  end
  return 1
elseif v then
  return -1
end
return 0
