-- wrk script: one client address per request, written as X-Forwarded-For
-- (Plaza must trust 127.0.0.1 as a proxy), so a rate limiter tracks many
-- keys, not one. 10.0.0.0/8, counted up from a per-thread base; after CAP
-- addresses (environment, default 4194304) a thread starts over.
local next_thread = 0
function setup(thread)
  thread:set("thread", next_thread)
  next_thread = next_thread + 1
end
local sent = 0
local cap = tonumber(os.getenv("CAP") or "4194304")
function request()
  local n = thread * 4194304 + (sent % cap)
  sent = sent + 1
  local address = string.format("10.%d.%d.%d", math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
  return wrk.format("GET", nil, { ["X-Forwarded-For"] = address })
end
