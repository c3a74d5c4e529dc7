//! The Redis backend's Lua scripts: every timeline step that reads the floor runs inside
//! Redis as one script, so it is atomic against concurrent pushes and builds. They apply
//! the floor rules of the [module above](super), as `local.rs` does in Rust.

/// Functions every script starts with. Markers score at most 0 and sort first, so the ids
/// start at rank `markers(key)`.
pub(super) const LUA_HELPERS: &str = r"
local function markers(key) return redis.call('ZCOUNT', key, '-inf', 0) end
local function trim(key, cap)
  local nm = markers(key)
  local extra = redis.call('ZCARD', key) - nm - cap
  if extra > 0 then
    redis.call('ZREMRANGEBYRANK', key, nm, nm + extra - 1)
    return true
  end
  return false
end
local function oldest(key)
  local nm = markers(key)
  local r = redis.call('ZRANGE', key, nm, nm)
  return tonumber(r[1])
end
local function floor_of(key)
  local m = redis.call('ZRANGEBYSCORE', key, -1, -1)
  if #m == 0 then return nil end
  return tonumber(string.sub(m[1], 2))
end
local function set_floor(key, floor)
  redis.call('ZREMRANGEBYSCORE', key, -1, -1)
  redis.call('ZADD', key, -1, 'f' .. string.format('%.0f', floor))
end
";

/// KEYS[1] the timeline; ARGV: the exclusive upper score (`(id` or `+inf`), the limit.
/// Returns false without a floor, else the floor and the ids, newest first.
pub(super) const LUA_READ: &str = r"
local floor = floor_of(KEYS[1])
if floor == nil then return false end
local lo = floor
if lo < 1 then lo = 1 end
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], lo, 'LIMIT', 0, tonumber(ARGV[2]))
return {string.format('%.0f', floor), ids}
";

/// KEYS[1] the timeline; ARGV[1] a new build mark (`b` and 16 hex digits). Creates the
/// timeline if missing; marks it with the new mark unless a build already marked it (a
/// mark of another form, which no finish of this version names, is replaced). Returns
/// the mark.
pub(super) const LUA_BEGIN: &str = r"
local m = redis.call('ZRANGEBYSCORE', KEYS[1], -2, -2)
if #m == 1 and string.len(m[1]) == 17 then return m[1] end
redis.call('ZREMRANGEBYSCORE', KEYS[1], -2, -2)
redis.call('ZADD', KEYS[1], -2, ARGV[1])
return ARGV[1]
";

/// KEYS[1] the timeline; ARGV: the build's mark, cap, floor, then the ids. Does nothing
/// unless the mark is still there: a timeline dropped meanwhile skipped the pushes made
/// since, even if another build has marked it again. The floor only rises.
pub(super) const LUA_FINISH: &str = r"
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], -2, -2)
local floor = tonumber(ARGV[3])
local had = floor_of(KEYS[1])
if had ~= nil and had > floor then floor = had end
if trim(KEYS[1], tonumber(ARGV[2])) then
  local o = oldest(KEYS[1])
  if o ~= nil and o > floor then floor = o end
end
set_floor(KEYS[1], floor)
return 1
";

/// KEYS[1] the timeline; ARGV: the ids. Removes them; but deletes a timeline being built,
/// whose build may have read them before the removal and would put them back when it
/// finishes (it then finishes nothing, and the next read builds it again).
pub(super) const LUA_REMOVE: &str = r"
if redis.call('ZCOUNT', KEYS[1], -2, -2) > 0 then
  redis.call('DEL', KEYS[1])
  return 2
end
for i = 1, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
return 1
";

/// KEYS[1] the timeline; ARGV: cap, then the ids. Does nothing to a missing timeline.
pub(super) const LUA_ADD: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local floor = floor_of(KEYS[1])
for i = 2, #ARGV do
  local id = tonumber(ARGV[i])
  if floor == nil or id >= floor then redis.call('ZADD', KEYS[1], id, ARGV[i]) end
end
if trim(KEYS[1], tonumber(ARGV[1])) and floor ~= nil then
  local o = oldest(KEYS[1])
  if o ~= nil and o > floor then set_floor(KEYS[1], o) end
end
return 1
";

/// KEYS[1] the friend list, KEYS[2] its version (one slot: the same hash tag). ARGV: the
/// version the filler saw before reading the store ('' for none), the list, the time to
/// live in ms. Caches the list only if no change bumped the version since: so no server
/// caches a list older than a change any server acknowledged.
pub(super) const LUA_FRIENDS_FILL: &str = r"
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
";

/// KEYS[1] the friend list, KEYS[2] its version. ARGV: how long the version lives (ms,
/// longer than any fill can take). Bumps the version, then drops the list.
pub(super) const LUA_FRIENDS_DROP: &str = r"
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1
";

/// A script's full text: the helpers, then its body.
pub(super) fn script_text(body: &str) -> String {
    format!("{LUA_HELPERS}\n{body}")
}
