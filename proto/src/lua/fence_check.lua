-- FENCE-CHECK (REDLOCK.md §7.9), for a resource kept in Redis: accept an operation only if its
-- token is at least the highest seen, and remember it in the same atomic step.
-- KEYS[1]: the resource's fence key. ARGV[1]: the caller's token.
-- Returns 1 (accepted, fence now >= token) or 0 (stale token: the caller lost its lock).
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if token < seen then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
