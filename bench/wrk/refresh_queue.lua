-- The per-thread queue of refresh tokens used by refresh.lua and mixed.lua. Refresh tokens are
-- single-use and rotate: request() pops one, response() pushes the new one from the answer.
-- BENCH_TOKENS_IN holds `api_key<TAB>email<TAB>access<TAB>refresh` lines made before the run
-- (all of one tenant: an answer does not say which tenant it came from). When BENCH_TOKENS_OUT
-- is set, done() writes the tokens still queued (never sent) there, for the next phase.

rq = {}
rq_head = 1
rq_tail = 0
rq_key = nil

function bench.load_refresh(path)
   for _, row in ipairs(bench.share(path, bench.tid, bench.nthreads)) do
      rq_key = rq_key or row[1]
      if row[1] ~= rq_key then
         error("refresh tokens of more than one tenant in " .. path)
      end
      bench.push_refresh(row[4])
   end
end

function bench.push_refresh(token)
   rq_tail = rq_tail + 1
   rq[rq_tail] = token
end

function bench.pop_refresh()
   if rq_head > rq_tail then
      return nil
   end
   local t = rq[rq_head]
   rq[rq_head] = nil
   rq_head = rq_head + 1
   return t
end

function bench.refresh_request(token)
   return wrk.format("POST", "/v1/auth/refresh", {
      ["X-API-Key"] = rq_key,
      ["Content-Type"] = "application/json",
   }, '{"refresh_token":"' .. token .. '"}')
end

-- Any 2xx answer carrying a refresh token (a rotation, or a login in the mixed load) feeds the
-- queue.
function bench.take_refresh(status, body)
   if status >= 200 and status < 300 then
      local t = string.match(body, '"refresh_token"%s*:%s*"([^"]+)"')
      if t then
         bench.push_refresh(t)
      end
   end
end

-- Runs in the main state, from done().
function bench.on_done()
   local out = os.getenv("BENCH_TOKENS_OUT")
   if out == nil or out == "" then
      return
   end
   local f = io.open(out, "w")
   for _, t in ipairs(bench.threads) do
      local q = t:get("rq") or {}
      local key = t:get("rq_key")
      local h, tl = t:get("rq_head"), t:get("rq_tail")
      for i = h, tl do
         if q[i] then
            f:write(key, "\t-\t-\t", q[i], "\n")
         end
      end
   end
   f:close()
end
