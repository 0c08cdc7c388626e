/**
 * The Lua scripts of the Redis backend. Each runs atomically on the one node that holds a partition's
 * slot (every key it touches carries the partition's hash tag). ioredis sends them by sha (EVALSHA) and
 * falls back to EVAL once per connection when the server does not know the sha yet.
 *
 * Keys of a partition (see layout.ts): KEYS[1] the sorted set of encoded keys (all scores 0, so
 * ZRANGEBYLEX orders members by memcmp, which is the byte order of the tuple encoding), KEYS[2] the hash
 * encoded key -> "<version>:<value bytes>", KEYS[3] the meta hash (field "s": commit sequence, field "i":
 * present once the partition is in its kind's index).
 *
 * The `#!lua` line (Redis >= 7) declares the scripts' flags: Redis then checks memory once, before the
 * commit script runs, and refuses it whole when maxmemory is reached (a script that failed half-way would
 * keep the writes it made: Redis does not roll a script back). The scan script is flagged no-writes, so
 * it still runs then. test/kv/redis-faults.test.ts checks the refusal.
 */

/**
 * ARGV is a flat list of ops, each a code followed by its arguments:
 *   c <key> <version or "">      check (empty = key absent)
 *   p <key> <value>              put
 *   d <key>                      delete
 *   r <min> <max>                range delete, ZRANGEBYLEX bounds ("[start", "(end")
 * Checks are evaluated before any write. Returns {0, check index (1-based), current version or ""} when a
 * check fails (nothing written), else {1, new sequence, 1 if the partition still needs an index entry}.
 */
export const COMMIT_LUA = `#!lua
local z, d, m = KEYS[1], KEYS[2], KEYS[3]
local n = #ARGV
local i = 1
local ci = 0
while i <= n do
  local op = ARGV[i]
  if op == 'c' then
    ci = ci + 1
    local cur = redis.call('HGET', d, ARGV[i + 1])
    local have = ''
    if cur then have = string.match(cur, '^(%d+):') end
    if have ~= ARGV[i + 2] then return {0, ci, have} end
    i = i + 3
  elseif op == 'd' then
    i = i + 2
  else
    i = i + 3
  end
end
local seq = redis.call('HINCRBY', m, 's', 1)
local sp = string.format('%d', seq) .. ':'
local wrote = false
i = 1
while i <= n do
  local op = ARGV[i]
  if op == 'p' then
    redis.call('ZADD', z, 0, ARGV[i + 1])
    redis.call('HSET', d, ARGV[i + 1], sp .. ARGV[i + 2])
    wrote = true
    i = i + 3
  elseif op == 'd' then
    redis.call('ZREM', z, ARGV[i + 1])
    redis.call('HDEL', d, ARGV[i + 1])
    i = i + 2
  elseif op == 'r' then
    while true do
      local ks = redis.call('ZRANGEBYLEX', z, ARGV[i + 1], ARGV[i + 2], 'LIMIT', 0, 1000)
      if #ks == 0 then break end
      redis.call('ZREM', z, unpack(ks))
      redis.call('HDEL', d, unpack(ks))
      if #ks < 1000 then break end
    end
    i = i + 3
  else
    i = i + 3
  end
end
local needIndex = 0
if wrote and not redis.call('HGET', m, 'i') then needIndex = 1 end
return {1, seq, needIndex}
`;

/**
 * KEYS[1] sorted set, KEYS[2] value hash. ARGV: min, max (ZRANGEBYLEX bounds, ascending meaning),
 * limit, "1" for descending. Returns {more (0/1), keys, values} (a missing value is nil).
 */
export const SCAN_LUA = `#!lua flags=no-writes
local limit = tonumber(ARGV[3])
local ks
if ARGV[4] == '1' then
  ks = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[2], ARGV[1], 'LIMIT', 0, limit + 1)
else
  ks = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, limit + 1)
end
local more = 0
if #ks > limit then
  more = 1
  ks[#ks] = nil
end
if #ks == 0 then return {more, {}, {}} end
local vs = {}
local j = 1
while j <= #ks do
  local last = math.min(j + 3999, #ks)
  local part = redis.call('HMGET', KEYS[2], unpack(ks, j, last))
  for x = 1, #part do vs[j + x - 1] = part[x] end
  j = last + 1
end
return {more, ks, vs}
`;
