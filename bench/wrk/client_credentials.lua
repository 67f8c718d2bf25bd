-- POST /v1/tenants/{slug}/oauth/token, grant_type=client_credentials: an agent (HTTP Basic)
-- asks for a machine token, as itself. Each token is a durable write (its record, kept until it
-- expires for the agent's count of live tokens and for revocation, and its activity-feed
-- entry). BENCH_AGENT holds one `slug<TAB>client_id<TAB>basic` line (seed agent). A 200 without
-- an access token counts as an error; extra.tokens counts the tokens issued.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local req

function init(args)
   bench.init_thread()
   local agent = bench.share(bench.env("BENCH_AGENT"), 0, 1)[1]
   req = wrk.format("POST", "/v1/tenants/" .. agent[1] .. "/oauth/token", {
      ["Authorization"] = "Basic " .. agent[3],
      ["Content-Type"] = "application/x-www-form-urlencoded",
   }, "grant_type=client_credentials")
end

function request()
   return req
end

function response(status, headers, body)
   bench.count(status, body)
   if status == 200 then
      if string.find(body, '"access_token"', 1, true) then
         bench.bump("tokens")
      else
         bench.fail("no access_token", body)
      end
   end
end
