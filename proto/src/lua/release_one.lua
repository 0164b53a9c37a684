-- RELEASE of one key (REDLOCK.md §2.4, §9): compare-and-delete, then tell waiters.
-- KEYS[1]: lock key; in mode "2" KEYS[2]: its waiter flag, KEYS[3]: its line, KEYS[4]: its
-- registrations. ARGV[1]: value.
-- ARGV[2]: notification mode: "0" none, "1" publish the key on `<key>:released`, "2" only
-- while the waiter flag exists (read with the key in one MGET), and then wake the first waiter
-- in line (wake.lua, which this script starts with). Every call that an ACL may refuse goes through pcall: a
-- completed delete is never turned into an error.
-- Returns 1 when deleted, 0 when absent, -1 (touching nothing) when another value holds it.
local v, waited
if ARGV[2] == '2' then
  local r = redis.pcall('MGET', KEYS[1], KEYS[2])
  if r.err then
    v, waited = redis.call('GET', KEYS[1]), true
  else
    v, waited = r[1], r[2]
  end
else
  v, waited = redis.call('GET', KEYS[1]), ARGV[2] == '1'
end
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if waited then
    wake(KEYS[1], ARGV[2] == '2' and KEYS[3], ARGV[2] == '2' and KEYS[4])
  end
  return 1
elseif v then
  return -1
end
return 0
