-- RELEASE of one key (REDLOCK.md §2.4, §9): compare-and-delete, then notify waiters on
-- `<key>:released` (through pcall: a channel the ACL denies never turns a completed delete
-- into an error).
-- KEYS[1]: lock key; KEYS[2] in mode "2": its waiter flag. ARGV[1]: value. ARGV[2]:
-- notification mode: "0" none, "1" publish, "2" delete the waiter flag with the key and
-- publish only when the flag existed (a waiter marked it).
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  if ARGV[2] == '2' then
    if redis.call('DEL', KEYS[1], KEYS[2]) == 2 then
      redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
    end
  else
    redis.call('DEL', KEYS[1])
    if ARGV[2] == '1' then
      redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
    end
  end
  return 1
elseif v then
  return -1
end
return 0
