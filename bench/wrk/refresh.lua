-- POST /v1/auth/refresh: each request rotates a refresh token (a durable write), see
-- refresh_queue.lua.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")
dofile(os.getenv("BENCH_WRK_DIR") .. "/refresh_queue.lua")

local starved

function init(args)
   bench.init_thread()
   bench.load_refresh(bench.env("BENCH_TOKENS_IN"))
   -- With nothing queued (never expected: each thread starts with more tokens than it has
   -- connections) a request goes out with a token that cannot work, so it shows as an error.
   starved = wrk.format("POST", "/v1/auth/refresh", {
      ["X-API-Key"] = rq_key,
      ["Content-Type"] = "application/json",
   }, '{"refresh_token":"starved"}')
end

function request()
   local t = bench.pop_refresh()
   if t == nil then
      bench.bump("starved")
      return starved
   end
   return bench.refresh_request(t)
end

function response(status, headers, body)
   bench.count(status, body)
   bench.take_refresh(status, body)
end
