-- The OAuth round trip with consent on file: GET .../oauth/authorize (API mode, the user's own
-- token) answers a code at once; POST .../oauth/token exchanges it (HTTP Basic, the PKCE
-- verifier). request() sends an exchange when this thread holds a code, else the next user's
-- authorize; response() queues the code an authorize answered. Each code is used once, seconds
-- after it was made. BENCH_OAUTH as for introspect.lua; extra.exchanges counts the tokens
-- issued.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

-- RFC 7636 appendix B, as the seed's authorizations use.
local VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
local CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
local REDIRECT = "https%3A%2F%2Frp.bench.test%2Fcb"

local authorizes = {}
local i = 0
local codes = {}
local head, tail = 1, 0
local token_path, basic

function init(args)
   bench.init_thread()
   for _, row in ipairs(bench.share(bench.env("BENCH_OAUTH"), bench.tid, bench.nthreads)) do
      token_path = "/v1/tenants/" .. row[1] .. "/oauth/token"
      basic = row[2]
      authorizes[#authorizes + 1] = wrk.format("GET", "/v1/tenants/" .. row[1]
         .. "/oauth/authorize?client_id=" .. row[6] .. "&redirect_uri=" .. REDIRECT
         .. "&response_type=code&scope=openid%20email&state=bench&code_challenge=" .. CHALLENGE
         .. "&code_challenge_method=S256", {
         ["Accept"] = "application/json",
         ["Authorization"] = "Bearer " .. row[3],
      })
   end
   i = math.random(#authorizes) - 1
end

function request()
   if head <= tail then
      local code = codes[head]
      codes[head] = nil
      head = head + 1
      return wrk.format("POST", token_path, {
         ["Authorization"] = "Basic " .. basic,
         ["Content-Type"] = "application/x-www-form-urlencoded",
      }, "grant_type=authorization_code&code=" .. code .. "&redirect_uri=" .. REDIRECT
         .. "&code_verifier=" .. VERIFIER)
   end
   i = i % #authorizes + 1
   return authorizes[i]
end

function response(status, headers, body)
   bench.count(status, body)
   if status ~= 200 then
      return
   end
   local code = string.match(body, '"redirect_to"%s*:%s*"[^"]*[?&]code=([^&"]+)')
   if code then
      tail = tail + 1
      codes[tail] = code
   elseif string.find(body, '"access_token"', 1, true) then
      bench.bump("exchanges")
   else
      bench.fail("neither a code nor tokens", body)
   end
end
