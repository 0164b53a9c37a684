-- ACQUIRE-MULTI (REDLOCK.md §6): take every key of the set, or none.
-- KEYS: lock keys, sorted and deduplicated. ARGV[1]: value, ARGV[2]: ttl in ms.
-- Returns 1 when all keys were written, 0 (writing nothing) when any key exists.
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
