-- POST /v1/tenants/{slug}/oauth/introspect: a confidential client (HTTP Basic) asks about the
-- OAuth access tokens of many grants. BENCH_OAUTH holds
-- `slug<TAB>basic<TAB>user_access<TAB>oauth_access<TAB>oauth_refresh<TAB>client_id` lines (seed
-- oauth-grants); each thread walks its share round-robin. An answer that is not
-- `"active":true` counts as an error.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local reqs = {}
local i = 0

function init(args)
   bench.init_thread()
   for _, row in ipairs(bench.share(bench.env("BENCH_OAUTH"), bench.tid, bench.nthreads)) do
      reqs[#reqs + 1] = wrk.format("POST", "/v1/tenants/" .. row[1] .. "/oauth/introspect", {
         ["Authorization"] = "Basic " .. row[2],
         ["Content-Type"] = "application/x-www-form-urlencoded",
      }, "token=" .. row[4])
   end
   i = math.random(#reqs) - 1
end

function request()
   i = i % #reqs + 1
   return reqs[i]
end

function response(status, headers, body)
   bench.count(status, body)
   if status == 200 and not string.find(body, '"active":true', 1, true) then
      bench.fail("inactive", body)
   end
end
