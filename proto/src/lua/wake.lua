-- WAKE, the first lines of release.lua, release_one.lua and leave.lua (REDLOCK.md §9): tells
-- the waiters of the deleted lock key `key`. With its `line` (mode "2": a sorted set of waiter
-- ids `<client>.<n>`, MARK), it pops the first waiter and publishes its id on
-- `<key>:released:<client>`; with nobody in line (an older client's waiter), no line, or a
-- ZPOPMIN the ACL refuses, it publishes the key on `<key>:released`. A popped waiter that
-- registered with its MARK (`regs`, a hash of waiter id -> `<registered ms>:<ttl ms>:<n>:<value>`,
-- n numbering the waiter's registrations) is granted the key: it is set to the waiter's value
-- until the registration's time plus its ttl (nothing when that has passed), and the id is
-- published as `<id> g<n>`. Every call that an
-- ACL may refuse goes through pcall: a channel or command the ACL denies never turns a
-- completed delete into an error.
local function wake(key, line, regs)
  local w = line and redis.pcall('ZPOPMIN', line)
  if w and not w.err and w[1] then
    local id = w[1]
    local client = string.match(id, '^(.*)%.') or id
    local r = regs and redis.pcall('HGET', regs, id)
    if type(r) == 'string' then
      redis.pcall('HDEL', regs, id)
      local at, ttl, n, value = string.match(r, '^(%d+):(%d+):(%d+):(.+)$')
      local t = redis.call('TIME')
      local left = at and tonumber(at) + tonumber(ttl) - (t[1] * 1000 + math.floor(t[2] / 1000))
      if left and left > 0 then
        local set = redis.pcall('SET', key, value, 'NX', 'PX', left)
        if type(set) == 'table' and set.ok then
          id = id .. ' g' .. n
        end
      end
    end
    redis.pcall('PUBLISH', key .. ':released:' .. client, id)
  else
    redis.pcall('PUBLISH', key .. ':released', key)
  end
end
