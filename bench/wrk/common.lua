-- Shared by every scenario script (loaded with dofile from BENCH_WRK_DIR).
--
-- Environment (set by bench/run.sh):
--   BENCH_THREADS   wrk's -t (each thread takes every BENCH_THREADS-th line of an input file)
--   BENCH_RESULT    where done() writes the scenario's JSON result
--   BENCH_PASSWORD  the password of every bench user
--
-- Each thread counts non-2xx answers by status and keeps the first few (status and body) as
-- samples; done() adds wrk's socket errors and writes one JSON document.

bench = {}

function bench.env(name, default)
   local v = os.getenv(name)
   if v == nil or v == "" then
      if default == nil then
         error("environment variable " .. name .. " is not set")
      end
      return default
   end
   return v
end

-- Tab-separated fields of a line.
function bench.fields(line)
   local t = {}
   for f in string.gmatch(line, "[^\t]+") do
      t[#t + 1] = f
   end
   return t
end

-- This thread's share of a file's non-empty lines, as field lists: lines i with
-- i % nthreads == tid. With fewer lines than threads every thread takes all of them.
function bench.share(path, tid, nthreads)
   local all = {}
   local f = io.open(path, "r")
   if f == nil then
      error("cannot open " .. path)
   end
   for line in f:lines() do
      if line ~= "" then
         all[#all + 1] = bench.fields(line)
      end
   end
   f:close()
   if #all == 0 then
      error(path .. " is empty")
   end
   if #all < nthreads then
      return all
   end
   local mine = {}
   for i, row in ipairs(all) do
      if (i - 1) % nthreads == tid then
         mine[#mine + 1] = row
      end
   end
   return mine
end

function bench.json_string(s)
   s = string.gsub(s, '[%c"\\]', function(c)
      if c == '"' then return '\\"' end
      if c == "\\" then return "\\\\" end
      return string.format("\\u%04x", string.byte(c))
   end)
   return '"' .. s .. '"'
end

-- setup() runs in the main state once per thread: number them and keep them for done().
bench.threads = {}
local next_tid = 0
function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(bench.threads, thread)
end

-- Per-thread counters, read back by done() through thread:get.
non2xx = 0
statuses = {}
samples = {}
extra = {}

function bench.count(status, body)
   if status < 200 or status >= 300 then
      non2xx = non2xx + 1
      local k = tostring(status)
      statuses[k] = (statuses[k] or 0) + 1
      if #samples < 3 then
         samples[#samples + 1] = k .. " " .. string.sub(body or "", 1, 300)
      end
   end
end

-- A 2xx answer that is still wrong (`label` says how): counted with the non-2xx ones.
function bench.fail(label, body)
   non2xx = non2xx + 1
   statuses[label] = (statuses[label] or 0) + 1
   if #samples < 3 then
      samples[#samples + 1] = label .. " " .. string.sub(body or "", 1, 300)
   end
end

function bench.bump(name, n)
   extra[name] = (extra[name] or 0) + (n or 1)
end

function bench.init_thread()
   bench.tid = tid or 0
   bench.nthreads = tonumber(bench.env("BENCH_THREADS", "1"))
   math.randomseed(os.time() * 1000 + bench.tid * 7919)
   bench.password = bench.env("BENCH_PASSWORD")
end

-- done() runs in the main state after the run.
function done(summary, latency, requests)
   local total_non2xx = 0
   local all_statuses = {}
   local all_samples = {}
   local all_extra = {}
   for _, t in ipairs(bench.threads) do
      total_non2xx = total_non2xx + (t:get("non2xx") or 0)
      for k, v in pairs(t:get("statuses") or {}) do
         all_statuses[k] = (all_statuses[k] or 0) + v
      end
      for _, s in ipairs(t:get("samples") or {}) do
         if #all_samples < 5 then
            all_samples[#all_samples + 1] = s
         end
      end
      for k, v in pairs(t:get("extra") or {}) do
         all_extra[k] = (all_extra[k] or 0) + v
      end
   end
   if bench.on_done then
      bench.on_done()
   end
   local e = summary.errors
   local socket = e.connect + e.read + e.write + e.timeout
   local secs = summary.duration / 1e6
   local parts = {}
   local function add(k, v)
      parts[#parts + 1] = bench.json_string(k) .. ":" .. v
   end
   add("requests", tostring(summary.requests))
   add("duration_s", string.format("%.3f", secs))
   add("rps", string.format("%.2f", summary.requests / secs))
   add("p50_ms", string.format("%.3f", latency:percentile(50) / 1000))
   add("p90_ms", string.format("%.3f", latency:percentile(90) / 1000))
   add("p99_ms", string.format("%.3f", latency:percentile(99) / 1000))
   add("max_ms", string.format("%.3f", latency.max / 1000))
   add("mean_ms", string.format("%.3f", latency.mean / 1000))
   add("socket_errors", tostring(socket))
   add("socket_error_detail", string.format(
      '{"connect":%d,"read":%d,"write":%d,"timeout":%d}', e.connect, e.read, e.write, e.timeout))
   add("non2xx", tostring(total_non2xx))
   add("errors", tostring(socket + total_non2xx))
   local st = {}
   for k, v in pairs(all_statuses) do
      st[#st + 1] = bench.json_string(k) .. ":" .. v
   end
   add("statuses", "{" .. table.concat(st, ",") .. "}")
   local sm = {}
   for _, s in ipairs(all_samples) do
      sm[#sm + 1] = bench.json_string(s)
   end
   add("samples", "[" .. table.concat(sm, ",") .. "]")
   local ex = {}
   for k, v in pairs(all_extra) do
      ex[#ex + 1] = bench.json_string(k) .. ":" .. v
   end
   add("extra", "{" .. table.concat(ex, ",") .. "}")
   local out = "{" .. table.concat(parts, ",") .. "}\n"
   local f = io.open(bench.env("BENCH_RESULT"), "w")
   f:write(out)
   f:close()
end
