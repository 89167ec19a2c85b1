-- wrk script for bench/og-http.sh: every request a share card never asked
-- for before, by a seed counted up per thread under a per-run prefix (RUN,
-- from the environment), with the same quote and author as the repeated
-- link, so that neither side can answer from memory.
local next_thread = 0
function setup(thread)
  thread:set("thread", next_thread)
  next_thread = next_thread + 1
end
local sent = 0
local run = os.getenv("RUN") or "run"
function request()
  sent = sent + 1
  local path = string.format(
    "/api/og-image?seed=cold-%s-%d-%d&quote=Alone%%20we%%20can%%20do%%20so%%20little%%3B%%20together%%20we%%20can%%20do%%20so%%20much.&author=Helen%%20Keller",
    run, thread, sent)
  return wrk.format("GET", path)
end
