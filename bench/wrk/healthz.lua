-- GET /healthz: the server's ceiling for a request that touches no tenant (compare with `me`).
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local req

function init(args)
   bench.init_thread()
   req = wrk.format("GET", "/healthz")
end

function request()
   return req
end

function response(status, headers, body)
   bench.count(status, body)
end
