-- RELEASE (REDLOCK.md §2.4, §6, §9): compare-and-delete every key that holds our value, and
-- tell the waiters of each deleted key. Calls that an ACL may refuse go through pcall: a
-- channel or command the ACL denies never turns a completed delete into an error.
-- KEYS: n lock keys, followed in mode "2" by their n waiter flags, their n lines and their n
-- registrations (wake.lua).
-- ARGV[1]: value. ARGV[2]: notification mode:
--   "0" none;
--   "1" publish every deleted key on `<key>:released`;
--   "2" only while the key's waiter flag exists (read with the key in one MGET; a rule without
--       MGET reads the key alone and tells waiters every time): wake the first waiter of the
--       key's line (wake.lua, which this script starts with).
-- Every key is read before any is deleted: a failed read fails the script before it wrote.
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local mode = ARGV[2]
local n = #KEYS
if mode == '2' then n = n / 4 end
local values, waited = {}, {}
for i = 1, n do
  if mode == '2' then
    local r = redis.pcall('MGET', KEYS[i], KEYS[n + i])
    if r.err then
      values[i], waited[i] = redis.call('GET', KEYS[i]), true
    else
      values[i], waited[i] = r[1], r[2]
    end
  else
    values[i], waited[i] = redis.call('GET', KEYS[i]), mode == '1'
  end
end
local deleted, other = 0, 0
for i = 1, n do
  if values[i] == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    if waited[i] then
      wake(KEYS[i], mode == '2' and KEYS[2 * n + i], mode == '2' and KEYS[3 * n + i])
    end
  elseif values[i] then
    other = other + 1
  end
end
return {deleted, other}
