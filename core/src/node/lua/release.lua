-- RELEASE (REDLOCK.md §2.4, §6): compare-and-delete every key that holds our value.
-- KEYS: lock keys. ARGV[1]: value.
-- Returns {deleted, held_by_other}; keys holding another value are never touched.
local deleted, other = 0, 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  elseif v then
    other = other + 1
  end
end
return {deleted, other}
