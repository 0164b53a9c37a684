-- WAKE, the first lines of release.lua and release_one.lua (REDLOCK.md §9): tells the waiters
-- of the deleted lock key `key`. With its `line` (mode "2": a sorted set of waiter ids
-- `<client>.<n>`, MARK), it pops the first waiter and publishes its id on
-- `<key>:released:<client>`; with nobody in line (an older client's waiter), no line, or a
-- ZPOPMIN the ACL refuses, it publishes the key on `<key>:released`. Both calls go through
-- pcall: a channel or command the ACL denies never turns a completed delete into an error.
local function wake(key, line)
  local w = line and redis.pcall('ZPOPMIN', line)
  if w and not w.err and w[1] then
    local client = string.match(w[1], '^(.*)%.') or w[1]
    redis.pcall('PUBLISH', key .. ':released:' .. client, w[1])
  else
    redis.pcall('PUBLISH', key .. ':released', key)
  end
end
