-- POST /v1/auth/login with e-mail and password, spread over many users: BENCH_USERS holds
-- `api_key<TAB>email` lines; every request picks one of the thread's share at random.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local users

function init(args)
   bench.init_thread()
   users = bench.share(bench.env("BENCH_USERS"), bench.tid, bench.nthreads)
end

function request()
   local u = users[math.random(#users)]
   return wrk.format("POST", "/v1/auth/login", {
      ["X-API-Key"] = u[1],
      ["Content-Type"] = "application/json",
   }, '{"email":"' .. u[2] .. '","password":"' .. bench.password .. '"}')
end

function response(status, headers, body)
   bench.count(status, body)
end
