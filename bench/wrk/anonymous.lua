-- POST /v1/auth/anonymous (a guest sign-in, a durable write) spread over many tenants:
-- BENCH_KEYS holds one API key a line (each thread walks all of them round-robin from its own
-- start), and every request comes from a random client address through X-Forwarded-For (the
-- server trusts 127.0.0.1 as a proxy), as many clients behind a proxy would. The limits are
-- 5 a minute per address and 1000 an hour per key: bench/run.sh uses enough tenants.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local keys = {}
local i = 0

function init(args)
   bench.init_thread()
   local f = io.open(bench.env("BENCH_KEYS"), "r")
   for line in f:lines() do
      if line ~= "" then
         keys[#keys + 1] = line
      end
   end
   f:close()
   i = math.floor(#keys * bench.tid / bench.nthreads)
end

function request()
   i = i % #keys + 1
   local ip = string.format("%d.%d.%d.%d", math.random(11, 99), math.random(0, 255),
      math.random(0, 255), math.random(1, 254))
   return wrk.format("POST", "/v1/auth/anonymous", {
      ["X-API-Key"] = keys[i],
      ["X-Forwarded-For"] = ip,
      ["Content-Type"] = "application/json",
   }, "{}")
end

function response(status, headers, body)
   bench.count(status, body)
end
