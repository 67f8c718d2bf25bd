-- GET /v1/auth/dashboard/tenants/{slug}/users?email=<prefix>&limit=50: the first page of the
-- users list by e-mail prefix, as an admin's search box asks it, with the owner's dashboard
-- session (BENCH_SESSION) on the tenant BENCH_SLUG, whose users are u000000@... to
-- u099999@.... Prefixes of 4, 3 and 2 digits after "u0" match 10, 100 and 1,000 users.
dofile(os.getenv("BENCH_WRK_DIR") .. "/common.lua")

local session, path

function init(args)
   bench.init_thread()
   session = "Bearer " .. bench.env("BENCH_SESSION")
   path = "/v1/auth/dashboard/tenants/" .. bench.env("BENCH_SLUG") .. "/users?limit=50&email=u0"
end

function request()
   local digits = math.random(2, 4)
   local prefix = string.format("%0" .. digits .. "d", math.random(0, 10 ^ digits - 1))
   return wrk.format("GET", path .. prefix, { ["Authorization"] = session })
end

function response(status, headers, body)
   bench.count(status, body)
end
