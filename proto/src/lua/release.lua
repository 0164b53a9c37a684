-- RELEASE (REDLOCK.md §2.4, §6, §9): compare-and-delete every key that holds our value, and
-- notify waiters of each deleted key on `<key>:released` (through pcall: a channel the ACL
-- denies never turns a completed delete into an error).
-- KEYS: lock keys, followed in mode "2" by their waiter flags. ARGV[1]: value. ARGV[2]:
-- notification mode: "0" none, "1" publish every deleted key, "2" delete each key's waiter
-- flag with it and publish only when the flag existed (a waiter marked it).
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local mode = ARGV[2]
local n = #KEYS
if mode == '2' then n = n / 2 end
local deleted, other = 0, 0
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then
    if mode == '2' then
      if redis.call('DEL', KEYS[i], KEYS[n + i]) == 2 then
        redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
      end
    else
      redis.call('DEL', KEYS[i])
      if mode == '1' then
        redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
      end
    end
    deleted = deleted + 1
  elseif v then
    other = other + 1
  end
end
return {deleted, other}
