-- RELEASE of one key (REDLOCK.md §2.4, §9): compare-and-delete, then tell waiters.
-- KEYS[1]: lock key; KEYS[2] in mode "2": its waiter flag. ARGV[1]: value. ARGV[2]:
-- notification mode: "0" none, "1" publish the key on `<key>:released`, "2" wake the first
-- waiter in the flag's line (see release.lua). Every call that may fail on an ACL refusal
-- or another client's data after the delete goes through pcall: a completed delete is never
-- turned into an error.
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == '1' then
    redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
  elseif ARGV[2] == '2' then
    local w = redis.pcall('ZPOPMIN', KEYS[2])
    if w.err then
      if redis.pcall('EXISTS', KEYS[2]) ~= 0 then
        redis.pcall('PUBLISH', KEYS[1] .. ':released', KEYS[1])
      end
    elseif w[1] then
      local client = string.match(w[1], '^(.*)%.') or w[1]
      redis.pcall('PUBLISH', KEYS[1] .. ':released:' .. client, w[1])
    end
  end
  return 1
elseif v then
  return -1
end
return 0
