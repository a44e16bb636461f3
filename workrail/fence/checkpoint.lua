-- One checkpoint action, atomically: a port of workrail/fence/decide.py (keep them in step;
-- the shared contract suite runs both). Time comes from ARGV (the caller's injected clock),
-- never from Redis TIME; the key's PX TTL only reclaims memory after state_ttl.
-- KEYS[1]  checkpoint key    KEYS[2] fence-key check (recorded once, no expiry)
-- ARGV[1]  now (epoch ms)   ARGV[2] command JSON   ARGV[3] max generations
-- ARGV[4]  max observations ARGV[5] safety margin (ms)
-- ARGV[6]  the caller's fence-key check digest
-- Returns JSON: {"reason": "..."} or {"record": {...}, "flags": {...}}. The reason
-- "key_mismatch" (not a decision: the caller digests identities with another fence key, so it
-- cannot see the checkpoints stored here) is checked before anything is read or written.

local key = KEYS[1]
local now = tonumber(ARGV[1])
local cmd = cjson.decode(ARGV[2])
local MAX_GENERATIONS = tonumber(ARGV[3])
local MAX_OBSERVATIONS = tonumber(ARGV[4])
local SAFETY_MARGIN_MS = tonumber(ARGV[5])
local NULL = cjson.null

local function isnull(v) return v == nil or v == NULL end

local function reject(reason) return cjson.encode({reason = reason}) end

local recorded_key = redis.call('GET', KEYS[2])
if not recorded_key then
  redis.call('SET', KEYS[2], ARGV[6])
elseif recorded_key ~= ARGV[6] then
  return reject('key_mismatch')
end

local function accept(rec, flags)
  if flags.changed then
    local ttl = rec.state_expires_ms - now
    redis.call('SET', key, cjson.encode(rec), 'PX', string.format('%d', ttl))
  end
  for _, name in ipairs({'changed', 'acquired', 'recovered', 'reused', 'transitioned',
                         'observation_replayed', 'abandoned'}) do
    if flags[name] == nil then flags[name] = false end
  end
  return cjson.encode({record = rec, flags = flags})
end

local function claim_active(rec)
  return (not isnull(rec.claim_expires_ms)) and now < rec.claim_expires_ms
end

local function is_terminal_stage(stage)
  return stage == 'caller_verified' or stage == 'compensated'
end

local function is_final(rec)
  return is_terminal_stage(rec.stage) or (rec.stage == 'failed' and not rec.retry_failed)
end

local function final_reason(rec)
  if rec.stage == 'failed' then return 'failed_no_retry' end
  return 'terminal'
end

local EDGES = {
  claimed = {external_result_uncertain = true, caller_verified = true, failed = true,
             compensated = true},
  external_result_uncertain = {caller_verified = true, failed = true, compensated = true},
}

local rec = nil
local raw = redis.call('GET', key)
if raw then
  rec = cjson.decode(raw)
  if now >= rec.state_expires_ms then rec = nil end
end

local function new_generation(recovery_required)
  if rec.generation >= MAX_GENERATIONS then return reject('generation_limit') end
  rec.stage = 'claimed'
  rec.generation = rec.generation + 1
  rec.holder = cmd.holder
  rec.claim_expires_ms = math.min(now + cmd.claim_ttl * 1000, rec.state_expires_ms)
  rec.recovery_required = recovery_required
  rec.evidence_type = NULL
  rec.evidence_present = false
  return accept(rec, {changed = true, acquired = true, recovered = true})
end

local function claim()
  if rec == nil then
    local state_expires = now + cmd.state_ttl * 1000
    local fresh = {
      v = 1, workflow_hash = cmd.workflow_hash, stage = 'claimed', generation = 1,
      holder = cmd.holder,
      claim_expires_ms = math.min(now + cmd.claim_ttl * 1000, state_expires),
      claim_ttl = cmd.claim_ttl, state_ttl = cmd.state_ttl, retry_failed = cmd.retry_failed,
      state_expires_ms = state_expires, recovery_required = false,
      evidence_type = NULL, evidence_present = false, observations = {},
    }
    return accept(fresh, {changed = true, acquired = true})
  end
  if rec.claim_ttl ~= cmd.claim_ttl or rec.state_ttl ~= cmd.state_ttl
      or rec.retry_failed ~= cmd.retry_failed then
    return reject('config_conflict')
  end
  if is_terminal_stage(rec.stage) then return reject('terminal') end
  if rec.stage == 'failed' then
    if not rec.retry_failed then return reject('failed_no_retry') end
    return new_generation(false)
  end
  if claim_active(rec) then
    if rec.holder == cmd.holder then return accept(rec, {acquired = true, reused = true}) end
    return accept(rec, {})
  end
  return new_generation(rec.stage == 'external_result_uncertain' or rec.recovery_required)
end

local function evidence_required()
  if cmd.to_stage == 'caller_verified' or cmd.to_stage == 'compensated' then return true end
  if cmd.from_stage == 'external_result_uncertain' then return true end
  return rec.recovery_required
end

local function transition()
  if rec == nil then return reject('not_found') end
  local seen = rec.observations[cmd.observation]
  if seen ~= nil then
    if seen.body == cmd.body then return accept(rec, {observation_replayed = true}) end
    return reject('observation_conflict')
  end
  if is_final(rec) then return reject(final_reason(rec)) end
  if cmd.expected_generation ~= rec.generation then return reject('stale_generation') end
  if rec.holder ~= cmd.holder or not claim_active(rec) then return reject('not_held') end
  if cmd.from_stage ~= rec.stage then return reject('stale_stage') end
  local out = EDGES[cmd.from_stage]
  if out == nil or not out[cmd.to_stage] then return reject('invalid_edge') end
  if cmd.to_stage == 'compensated' and cmd.from_stage == 'claimed'
      and not rec.recovery_required then
    return reject('compensate_without_action')
  end
  if isnull(cmd.evidence_type) == cmd.evidence_present then
    return reject('evidence_incomplete')
  end
  if isnull(cmd.evidence_type) and evidence_required() then
    return reject('evidence_required')
  end
  if cmd.to_stage == 'external_result_uncertain' then
    if isnull(rec.claim_expires_ms) or rec.claim_expires_ms - now < SAFETY_MARGIN_MS then
      return reject('safety_margin')
    end
  end
  local count = 0
  for _ in pairs(rec.observations) do count = count + 1 end
  if count >= MAX_OBSERVATIONS then return reject('observation_limit') end
  rec.observations[cmd.observation] = {body = cmd.body, generation = rec.generation}
  rec.stage = cmd.to_stage
  if cmd.to_stage ~= 'external_result_uncertain' then rec.claim_expires_ms = NULL end
  rec.evidence_type = cmd.evidence_type
  rec.evidence_present = cmd.evidence_present
  return accept(rec, {changed = true, transitioned = true})
end

local function abandon()
  if rec == nil then return reject('not_found') end
  if is_final(rec) then return reject(final_reason(rec)) end
  if cmd.expected_generation ~= rec.generation then return reject('stale_generation') end
  if rec.stage == 'claimed' and rec.holder == cmd.holder and isnull(rec.claim_expires_ms) then
    return accept(rec, {abandoned = true})
  end
  if rec.holder ~= cmd.holder or not claim_active(rec) then return reject('not_held') end
  if rec.stage ~= 'claimed' then return reject('abandon_after_action') end
  rec.claim_expires_ms = NULL
  return accept(rec, {changed = true, abandoned = true})
end

local function status()
  if rec == nil then return reject('not_found') end
  return accept(rec, {})
end

if cmd.action == 'claim' then return claim() end
if cmd.action == 'transition' then return transition() end
if cmd.action == 'abandon' then return abandon() end
return status()
