-- RELEASE (REDLOCK.md §2.4, §6, §9): compare-and-delete every key that holds our value, and
-- publish each deleted key on `<key>:released` when ARGV[2] is "1" (through pcall: a channel
-- the ACL denies never turns a completed delete into an error).
-- KEYS: lock keys. ARGV[1]: value. ARGV[2]: notify flag.
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local deleted, other = 0, 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then
    redis.call('DEL', KEYS[i])
    if ARGV[2] == '1' then
      redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
    end
    deleted = deleted + 1
  elseif v then
    other = other + 1
  end
end
return {deleted, other}
