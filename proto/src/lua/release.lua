-- RELEASE (REDLOCK.md §2.4, §6, §9): compare-and-delete every key that holds our value, and
-- notify waiters of each deleted key on `<key>:released` (through pcall: a channel the ACL
-- denies never turns a completed delete into an error).
-- KEYS: lock keys, followed in mode "2" by their waiter flags. ARGV[1]: value. ARGV[2]:
-- notification mode: "0" none, "1" publish every deleted key, "2" publish a deleted key only
-- while its waiter flag exists (a waiter marked it; the flag is read in the same call as the
-- key and left to expire). Every key is read before any is deleted: a refused read (NOPERM)
-- fails the script before it wrote anything.
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local mode = ARGV[2]
local n = #KEYS
if mode == '2' then n = n / 2 end
local values, waited = {}, {}
for i = 1, n do
  if mode == '2' then
    local r = redis.call('MGET', KEYS[i], KEYS[n + i])
    values[i], waited[i] = r[1], r[2]
  else
    values[i], waited[i] = redis.call('GET', KEYS[i]), mode == '1'
  end
end
local deleted, other = 0, 0
for i = 1, n do
  if values[i] == ARGV[1] then
    redis.call('DEL', KEYS[i])
    if waited[i] then
      redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
    end
    deleted = deleted + 1
  elseif values[i] then
    other = other + 1
  end
end
return {deleted, other}
