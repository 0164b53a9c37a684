-- ACQUIRE-TURN (REDLOCK.md §9): ACQUIRE of one key for a waiter woken by its own client's
-- release, sent right behind that release on each node's connection instead of after its
-- notice. The release popped the first waiter of the key's line: it writes only where that
-- was this waiter, or where it does not stand in line, so that it never overtakes another
-- waiter whose turn the release gave.
-- KEYS[1]: the lock key; KEYS[2]: its line. ARGV[1]: value, ARGV[2]: ttl ms, ARGV[3]: the
-- waiter id. Returns 1 written, 0 not. The line is read with ZSCORE; an ACL rule from before
-- this script (no ZSCORE) is read with ZRANGE, and one that refuses both had no lines.
local line, id = KEYS[2], ARGV[3]
local place = redis.pcall('ZSCORE', line, id)
if type(place) == 'table' and place.err then
  place = false
  local all = redis.pcall('ZRANGE', line, 0, -1)
  if not all.err then
    for _, w in ipairs(all) do
      if w == id then
        place = true
        break
      end
    end
  end
end
if place then
  return 0
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
