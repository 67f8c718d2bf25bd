-- A mixed load in one script: of every 10 requests, 7 are GET /v1/auth/me (BENCH_TOKENS, as
-- for me.lua), 2 are refreshes (BENCH_TOKENS_IN, see refresh_queue.lua) and 1 is a login
-- (BENCH_USERS, as for login.lua). The counts of each kind sent are in the result's "extra".
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
dofile(os.getenv("BENCH_WRK_DIR") .. "/refresh_queue.lua")

local me = {}
local users
local n = 0

function init(args)
   bench.init_thread()
   for _, row in ipairs(bench.share(bench.env("BENCH_TOKENS"), bench.tid, bench.nthreads)) do
      me[#me + 1] = wrk.format("GET", "/v1/auth/me", {
         ["X-API-Key"] = row[1],
         ["Authorization"] = "Bearer " .. row[3],
      })
   end
   bench.load_refresh(bench.env("BENCH_TOKENS_IN"))
   users = bench.share(bench.env("BENCH_USERS"), bench.tid, bench.nthreads)
   n = math.random(10) - 1
end

local function me_request()
   bench.bump("sent_me")
   return me[n % #me + 1]
end

function request()
   n = n + 1
   local slot = n % 10
   if slot < 7 then
      return me_request()
   elseif slot < 9 then
      local t = bench.pop_refresh()
      if t == nil then
         -- Every queued token is in flight; keep the pace with a `me` instead.
         bench.bump("refresh_fallback_to_me")
         return me_request()
      end
      bench.bump("sent_refresh")
      return bench.refresh_request(t)
   else
      bench.bump("sent_login")
      local u = users[math.random(#users)]
      return wrk.format("POST", "/v1/auth/login", {
         ["X-API-Key"] = u[1],
         ["Content-Type"] = "application/json",
      }, '{"email":"' .. u[2] .. '","password":"' .. bench.password .. '"}')
   end
end

function response(status, headers, body)
   bench.count(status, body)
   bench.take_refresh(status, body)
end
