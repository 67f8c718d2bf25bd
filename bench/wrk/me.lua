-- GET /v1/auth/me with bearer tokens of several users (and, for the scale runs, of many
-- tenants): BENCH_TOKENS holds `api_key<TAB>email<TAB>access<TAB>refresh` lines; each thread
-- walks its share round-robin.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local reqs = {}
local i = 0

function init(args)
   bench.init_thread()
   for _, row in ipairs(bench.share(bench.env("BENCH_TOKENS"), bench.tid, bench.nthreads)) do
      reqs[#reqs + 1] = wrk.format("GET", "/v1/auth/me", {
         ["X-API-Key"] = row[1],
         ["Authorization"] = "Bearer " .. row[3],
      })
   end
   i = math.random(#reqs) - 1
end

function request()
   i = i % #reqs + 1
   return reqs[i]
end

function response(status, headers, body)
   bench.count(status, body)
end
