-- POST /v1/tenants/{slug}/oauth/token, grant_type=authorization_code: each request exchanges
-- one code made before the run (seed oauth-codes: authorizes with consent on file), with HTTP
-- Basic and the PKCE verifier. BENCH_CODES holds `slug<TAB>basic<TAB>code` lines; each thread
-- takes its share and uses each code once. A thread out of codes sends one that cannot work,
-- so it shows as an error (mint more). extra.exchanges counts the tokens issued.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

-- RFC 7636 appendix B, as the seed's authorizations use.
local VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
local REDIRECT = "https%3A%2F%2Frp.bench.test%2Fcb"

local rows
local i = 0

local function exchange(row, code)
   return wrk.format("POST", "/v1/tenants/" .. row[1] .. "/oauth/token", {
      ["Authorization"] = "Basic " .. row[2],
      ["Content-Type"] = "application/x-www-form-urlencoded",
   }, "grant_type=authorization_code&code=" .. code .. "&redirect_uri=" .. REDIRECT
      .. "&code_verifier=" .. VERIFIER)
end

function init(args)
   bench.init_thread()
   rows = bench.share(bench.env("BENCH_CODES"), bench.tid, bench.nthreads)
end

function request()
   i = i + 1
   local row = rows[i]
   if row == nil then
      bench.bump("starved")
      return exchange(rows[1], "starved")
   end
   return exchange(row, row[3])
end

function response(status, headers, body)
   bench.count(status, body)
   if status == 200 then
      if string.find(body, '"id_token"', 1, true) then
         bench.bump("exchanges")
      else
         bench.fail("no id_token", body)
      end
   end
end
