-- POST /v1/auth/step-up/password with bearer tokens of several users (BENCH_TOKENS, as for
-- me.lua), each with its own password.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local reqs = {}
local i = 0

function init(args)
   bench.init_thread()
   local body = '{"password":"' .. bench.password .. '"}'
   for _, row in ipairs(bench.share(bench.env("BENCH_TOKENS"), bench.tid, bench.nthreads)) do
      reqs[#reqs + 1] = wrk.format("POST", "/v1/auth/step-up/password", {
         ["X-API-Key"] = row[1],
         ["Authorization"] = "Bearer " .. row[3],
         ["Content-Type"] = "application/json",
      }, body)
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
