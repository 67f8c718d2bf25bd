-- POST /v1/tenants/{slug}/oauth/token, RFC 8693 token exchange: an agent (HTTP Basic) trades a
-- user's own access token for one acting for the user (`act` names the agent), scope
-- orders:read, which every user of BENCH_TOKENS consented to before the run (seed
-- agent-consent). Each token is a durable write, as for client_credentials.lua, plus the
-- user's record of the agent. BENCH_AGENT as for client_credentials.lua; BENCH_TOKENS holds
-- `api_key<TAB>email<TAB>access<TAB>refresh` lines, each thread walks its share round-robin.
-- A 200 that is not an exchange's answer counts as an error; extra.exchanges counts the tokens
-- issued.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local GRANT = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
local SUBJECT_TYPE = "urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"

local reqs = {}
local i = 0

-- application/x-www-form-urlencoded, for a value.
local function form(s)
   return (string.gsub(s, "[^%w%-%._~]", function(c)
      return string.format("%%%02X", string.byte(c))
   end))
end

function init(args)
   bench.init_thread()
   local agent = bench.share(bench.env("BENCH_AGENT"), 0, 1)[1]
   local path = "/v1/tenants/" .. agent[1] .. "/oauth/token"
   for _, row in ipairs(bench.share(bench.env("BENCH_TOKENS"), bench.tid, bench.nthreads)) do
      reqs[#reqs + 1] = wrk.format("POST", path, {
         ["Authorization"] = "Basic " .. agent[3],
         ["Content-Type"] = "application/x-www-form-urlencoded",
      }, "grant_type=" .. GRANT .. "&subject_token=" .. form(row[3]) .. "&subject_token_type="
         .. SUBJECT_TYPE .. "&scope=orders%3Aread")
   end
   i = math.random(#reqs) - 1
end

function request()
   i = i % #reqs + 1
   return reqs[i]
end

function response(status, headers, body)
   bench.count(status, body)
   if status == 200 then
      if string.find(body, '"issued_token_type"', 1, true) then
         bench.bump("exchanges")
      else
         bench.fail("no issued_token_type", body)
      end
   end
end
