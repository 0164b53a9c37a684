-- RELEASE (REDLOCK.md §2.4, §6, §9): compare-and-delete every key that holds our value, and
-- tell the waiters of each deleted key. Every call after the deletes goes through pcall: a
-- channel or command the ACL denies never turns a completed delete into an error.
-- KEYS: lock keys, followed in mode "2" by their waiter flags. ARGV[1]: value. ARGV[2]:
-- notification mode:
--   "0" none;
--   "1" publish every deleted key on `<key>:released`;
--   "2" wake the first waiter in each deleted key's line: pop it from the flag (a sorted set
--       of waiter ids `<client>.<n>`, MARK) and publish its id on `<key>:released:<client>`.
--       A flag of another type (an older client's plain mark), or a refused ZPOPMIN, publishes
--       the key on `<key>:released` while the flag exists; no flag publishes nothing.
-- Every key is read before any is deleted: a failed read fails the script before it wrote.
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local mode = ARGV[2]
local n = #KEYS
if mode == '2' then n = n / 2 end
local values = {}
for i = 1, n do
  values[i] = redis.call('GET', KEYS[i])
end
local deleted, other = 0, 0
for i = 1, n do
  local v = values[i]
  if v == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    if mode == '1' then
      redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
    elseif mode == '2' then
      local w = redis.pcall('ZPOPMIN', KEYS[n + i])
      if w.err then
        if redis.pcall('EXISTS', KEYS[n + i]) ~= 0 then
          redis.pcall('PUBLISH', KEYS[i] .. ':released', KEYS[i])
        end
      elseif w[1] then
        local client = string.match(w[1], '^(.*)%.') or w[1]
        redis.pcall('PUBLISH', KEYS[i] .. ':released:' .. client, w[1])
      end
    end
  elseif v then
    other = other + 1
  end
end
return {deleted, other}
