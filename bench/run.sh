#!/usr/bin/env bash
# Tessera's benchmark: the real server (release build, production Argon2 parameters from
# config.toml) on temporary data directories, loaded with wrk, beside the hardware ceilings of
# its expensive steps measured on the same machine. Prints a table and writes
# bench/results/latest.json.
#
#   bench/run.sh [--runs N] [--quick] [--scale | --no-scale | --scale-only] [--keep]
#
#   --runs N     repeat the scenario set N times (default 3); every figure and every ratio is
#                the median over the runs (ratios are computed per run first)
#   --quick      1 run, 3 s per scenario after a 1 s warm-up: a smoke check
#   --scale      also the scale runs (the default): 1, 100 and 10,000 tenants, 100,000 users
#   --no-scale   skip them
#   --scale-only only the scale runs (no scenario set, so no ratios); the summary goes to the
#                work directory, not to latest.json
#   --keep       keep the temporary directory (data directories, logs, wrk output)
#
# The store stress (`store_stress`, BENCH_STRESS_SECS seconds in each durability mode, default
# 60, 5 with --quick) drives the store alone at its maximum rate after the scenarios; a storage
# call stuck for 5 s, or any error, fails the run.
#
# Exit status: 0 when every scenario answered without error and every target was met, 1 on an
# error (socket errors or non-2xx answers in a scenario, a set-up step that failed), 3 when
# the run was clean but a target was missed.
set -euo pipefail

RUNS=3
SCALE_ONLY=0
QUICK=0
SCALE=1
KEEP=0
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
    --runs=*) RUNS=${1#--runs=}; shift ;;
    --quick) QUICK=1; shift ;;
    --scale) SCALE=1; shift ;;
    --no-scale) SCALE=0; shift ;;
    --scale-only) SCALE_ONLY=1; shift ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "--runs must be a positive integer" >&2; exit 2; }
if ((QUICK)); then
  RUNS=1 DUR=3 WARM=1
else
  DUR=10 WARM=3
fi
if ((SCALE_ONLY)); then
  RUNS=0 SCALE=1
fi

# ----------------------------------------------------------------------------------------------
# Fixed parameters of the scenarios
# ----------------------------------------------------------------------------------------------
CONNS=64                # wrk -c for every scenario but login_at_cores and overload
THREADS=2               # wrk -t
USERS=1000              # imported users of the main tenant (login spreads over them)
API_USERS=8             # users registered and confirmed through the API
ANON_TENANTS=100        # tenants the guest sign-ins spread over (1000 an hour per key)
OVERLOAD_QUEUE=8        # security.hashing_queue_max of the overload server
OVERLOAD_CONNS=${BENCH_OVERLOAD_CONNS:-256}   # BENCH_OVERLOAD_CONNS=64: the connections of the other scenarios
OVERLOAD_SECS=12
OVERLOAD_PROBES=50
MIXED_PROBE_RATE=20     # `me` requests a second sent by the probe during the mixed load
TIMING_CALLS=200        # calls per route and kind of address of the 202 timing probe
SCALE_TENANTS=${BENCH_SCALE_TENANTS:-10000}
SCALE_USERS=${BENCH_SCALE_USERS:-100000}
SCALE_IDLE_SECS=20      # server.tenant_idle_secs of the scale server
USERS_CONNS=4           # wrk -c of the users-list search at 100,000 users
# The ceilings of every agent's limits (config.toml holds production's: 600 tokens a minute by
# each grant, 1,000 live tokens, 60 CIBA requests a minute): one agent takes every token of the
# agent scenarios, and each `me` user consents to it through a CIBA request.
AGENT_ENV=(TESSERA__AGENTS__MAX_CLIENT_CREDENTIALS_PER_MIN=100000000
  TESSERA__AGENTS__MAX_TOKEN_EXCHANGE_PER_MIN=100000000
  TESSERA__AGENTS__MAX_CONCURRENT_TOKENS=100000000
  TESSERA__AGENTS__MAX_CIBA_INITIATE_PER_MIN=100000)
# Every bench user's password (and every owner's): not on the common-password list.
export BENCH_PASSWORD='tessera-bench passphrase, not a real one'

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
TESSERA=$BIN/tessera
NPROC=$(nproc)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# ----------------------------------------------------------------------------------------------
# Tools and build
# ----------------------------------------------------------------------------------------------
ensure_tool() { # command package
  command -v "$1" >/dev/null 2>&1 && return 0
  log "installing $2 with apt-get"
  local sudo=
  [[ $(id -u) == 0 ]] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "$2" >/dev/null
  command -v "$1" >/dev/null 2>&1 || die "$1 is still missing"
}
ensure_tool wrk wrk
ensure_tool jq jq
ensure_tool curl curl

cd "$ROOT"
log "building (release)"
cargo build --release --locked -p tessera -p tessera-bench >&2

cfg_int() { # key in config.toml
  local v
  v=$(sed -n "s/^$1[[:space:]]*=[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$ROOT/config.toml" | head -1)
  [[ -n $v ]] || die "no $1 in config.toml"
  echo "$v"
}
M_COST=$(cfg_int argon2_m_cost_kib)
T_COST=$(cfg_int argon2_t_cost)
P_COST=$(cfg_int argon2_p_cost)
# The server reads its settings from the environment too: every server here must run on
# config.toml plus only what this script sets.
if env | grep -q '^TESSERA__'; then
  die "unset the TESSERA__* variables first: $(env | grep '^TESSERA__' | cut -d= -f1 | tr '\n' ' ')"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessera-bench.XXXXXX")
log "work directory $WORK"
FAILURES=$WORK/failures.txt
: >"$FAILURES"

# ----------------------------------------------------------------------------------------------
# Servers
# ----------------------------------------------------------------------------------------------
declare -A SPID SBASE SDATA
start_server() { # name data_dir [VAR=value ...]
  local name=$1 data=$2
  shift 2
  local out=$WORK/$name.stdout err=$WORK/$name.log
  : >"$out"
  mkdir -p "$data"
  # Every load generator connects from 127.0.0.1, as a reverse proxy would: no per-address
  # connection cap (the overload run alone opens 256 connections). The agents' ceilings: see
  # AGENT_ENV.
  env TESSERA__SERVER__TRUSTED_PROXIES='["127.0.0.1/32"]' TESSERA__SERVER__MAX_CONNECTIONS_PER_IP=0 \
    "${AGENT_ENV[@]}" "$@" \
    "$TESSERA" serve --listen 127.0.0.1:0 --config "$ROOT/config.toml" --data-dir "$data" \
    >"$out" 2>>"$err" &
  local pid=$! addr=
  SPID[$name]=$pid
  SDATA[$name]=$data
  for _ in $(seq 1200); do
    addr=$(grep -o 'http://[^ ]*' "$out" | head -1 || true)
    [[ -n $addr ]] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -20 "$err" >&2
      unset "SPID[$name]"
      die "server $name exited at start"
    fi
    sleep 0.05
  done
  [[ -n $addr ]] || die "server $name did not start in 60 s"
  SBASE[$name]=$addr
}

stop_server() { # name
  local pid=${SPID[$1]:-}
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "SPID[$1]"
}

cleanup() {
  local n
  for n in "${!SPID[@]}"; do
    stop_server "$n"
  done
  if ((KEEP)); then
    log "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

admin() { # data_dir args...
  local data=$1
  shift
  "$TESSERA" admin --socket "$data/admin.sock" "$@"
}

rss_kb() { # server name
  awk '/^VmRSS:/ { print $2 }' "/proc/${SPID[$1]}/status"
}

running_tenants() { # server name: the gauge, or null when /metrics has none
  local v
  v=$(curl -sf "${SBASE[$1]}/metrics" | awk '$1 == "tessera_tenant_actors_running" { print $2 }' || true)
  echo "${v:-null}"
}

# ----------------------------------------------------------------------------------------------
# Set-up: tenants (admin CLI), users (admin import and the API), guest sign-ins enabled
# ----------------------------------------------------------------------------------------------
log "hashing the bench password (m=$M_COST, t=$T_COST, p=$P_COST)"
HASH=$(printf '%s\n' "$BENCH_PASSWORD" |
  "$BIN/ceilings" hash --m-cost "$M_COST" --t-cost "$T_COST" --p-cost "$P_COST")

users_jsonl() { # count email-format
  awk -v n="$1" -v fmt="$2" -v h="$HASH" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "{\"email\":\"" fmt "\",\"password_hash\":\"%s\",\"email_verified\":true}\n", i, h
    }
  }'
}

expect_imported() { # json count
  local got
  got=$(jq -r '.imported' <<<"$1")
  [[ $got == "$2" ]] || die "user import: expected $2 imported, got: $1"
}

# Tenants with an owner each (their dashboard turns guest sign-ins on), on the enterprise tier
# (no monthly-active-user cap). Runs the admin CLI in parallel.
create_anon_tenant() {
  printf '%s\n' "$BENCH_PASSWORD" |
    "$TESSERA" admin --socket "$SOCK" tenant create --name "Bench Anon $1" --slug "bench-anon-$1" \
      --owner-email "owner$1@anon.bench.test" >"$DIR/anon/$1.json"
  "$TESSERA" admin --socket "$SOCK" tenant set-tier "bench-anon-$1" enterprise >/dev/null
}
export -f create_anon_tenant
export TESSERA

# First start of a server on an empty data directory: the main tenant with its users, the
# guest tenants.
setup_server() { # name
  local name=$1 data=${SDATA[$1]} dir=$WORK/$1 key
  mkdir -p "$dir/anon"
  log "$name: set-up"
  printf '%s\n' "$BENCH_PASSWORD" |
    admin "$data" tenant create --name "Bench Main" --slug bench-main \
      --owner-email owner@main.bench.test >"$dir/main.json"
  key=$(jq -r '.api_key' "$dir/main.json")
  expect_imported "$(users_jsonl "$USERS" 'u%04d@main.bench.test' |
    admin "$data" user import --tenant bench-main)" "$USERS"
  awk -v k="$key" -v n="$USERS" 'BEGIN { for (i = 0; i < n; i++) printf "%s\tu%04d@main.bench.test\n", k, i }' \
    >"$dir/users.tsv"
  awk -v k="$key" -v n="$API_USERS" 'BEGIN { for (i = 0; i < n; i++) printf "%s\tapi%d@main.bench.test\n", k, i }' \
    >"$dir/api_users.tsv"
  "$BIN/seed" register --base "${SBASE[$name]}" --input "$dir/api_users.tsv" \
    --outbox "$data/outbox" >/dev/null
  seq 0 $((ANON_TENANTS - 1)) |
    SOCK=$data/admin.sock DIR=$dir xargs -P 4 -n 1 bash -c 'create_anon_tenant "$1"' _
  jq -r '.api_key' "$dir"/anon/*.json >"$dir/anon_keys.txt"
  jq -r '[.tenant.slug, .owner.email] | @tsv' "$dir"/anon/*.json >"$dir/owners.tsv"
  [[ $(wc -l <"$dir/anon_keys.txt") == "$ANON_TENANTS" ]] || die "$name: guest tenants missing"
  "$BIN/seed" enable-guests --base "${SBASE[$name]}" --input "$dir/owners.tsv" >/dev/null
  # The OAuth scenarios' confidential client, registered by the main tenant's owner.
  printf 'bench-main\towner@main.bench.test\n' >"$dir/main_owner.tsv"
  "$BIN/seed" oauth-client --base "${SBASE[$name]}" --input "$dir/main_owner.tsv" \
    --output "$dir/oauth_client.tsv" >/dev/null
  # The agent scenarios' agent (client credentials, token exchange, CIBA), registered by the
  # same owner once the tenant is on a paid tier (agents are not for the free tier).
  admin "$data" tenant set-tier bench-main pro >/dev/null
  "$BIN/seed" agent --base "${SBASE[$name]}" --input "$dir/main_owner.tsv" \
    --output "$dir/agent.tsv" >/dev/null
}

# The wallet scenario's tenant (on a data directory's first start): its owner, a development
# verifier chain from the admin CLI (the wallets trust its root), the bench's test issuers
# (`wallet issuers`), and wallet sign-in turned on with those issuers as trust anchors through
# the dashboard API.
setup_wallet() { # name
  local name=$1 data=${SDATA[$1]} dir=$WORK/$1 session code
  printf '%s\n' "$BENCH_PASSWORD" |
    admin "$data" tenant create --name "Bench Wallet" --slug bench-wallet \
      --owner-email owner@wallet.bench.test >"$dir/wallet_tenant.json"
  admin "$data" eudi dev-cert bench-wallet >"$dir/wallet_verifier.json"
  jq -r '.root_pem' "$dir/wallet_verifier.json" >"$dir/wallet_verifier_root.pem"
  grep -q 'BEGIN CERTIFICATE' "$dir/wallet_verifier_root.pem" ||
    die "$name: eudi dev-cert gave no root: $(cat "$dir/wallet_verifier.json")"
  "$BIN/wallet" issuers --output "$dir/wallet_issuers.json" >"$dir/wallet_settings.json"
  session=$(curl -sf "${SBASE[$name]}/v1/auth/dashboard/login" -H 'content-type: application/json' \
    -d "$(jq -n --arg p "$BENCH_PASSWORD" '{email: "owner@wallet.bench.test", password: $p}')" |
    jq -r '.session_token') || die "$name: the dashboard login of the wallet tenant's owner failed"
  code=$(curl -s -o "$dir/wallet_settings_put.json" -w '%{http_code}' -X PUT \
    "${SBASE[$name]}/v1/auth/dashboard/tenants/bench-wallet/settings/eudi" \
    -H "authorization: Bearer $session" -H 'content-type: application/json' \
    --data-binary @"$dir/wallet_settings.json")
  [[ $code == 200 ]] || die "$name: PUT settings/eudi: $code $(cat "$dir/wallet_settings_put.json")"
}

# The single sign-on scenarios' tenant (on a data directory's first start): its owner, on a
# paid tier (an organization there takes the load's 1,000 users as members). The load
# generator (`sso`) sets the rest up itself through the dashboard API: the redirect URL, the
# organization and its connections, pointed at the identity provider it runs.
setup_sso() { # name
  local name=$1 data=${SDATA[$1]} dir=$WORK/$1
  printf '%s\n' "$BENCH_PASSWORD" |
    admin "$data" tenant create --name "Bench SSO" --slug bench-sso \
      --owner-email owner@sso.bench.test >"$dir/sso_tenant.json"
  admin "$data" tenant set-tier bench-sso pro >/dev/null
}

# sso_load protocol: single sign-on through the `sso` load generator's own identity provider
# (OpenID Connect or SAML), as scenario sso_<protocol>_sign_in.
sso_load() {
  local protocol=$1 out=$RD/sso_$1_sign_in
  "$BIN/sso" --protocol "$protocol" --base "${SBASE[A]}" --slug bench-sso \
    --owner-email owner@sso.bench.test --api-key "$(jq -r '.api_key' "$WORK/A/sso_tenant.json")" \
    --concurrency "$CONNS" --seconds "$DUR" --warmup "$WARM" \
    --server-pid "${SPID[A]}" --clock-ticks "$TICKS" >"$out.json" 2>"$out.err" ||
    die "the $protocol single sign-on load failed: $(cat "$out.err")"
  check_errors "run $RUN sso_${protocol}_sign_in" "$out.json"
  log "  $(jq -r --arg n "sso_${protocol}_sign_in" '"\($n): \(.rps) sign-ins/s, p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, errors \(.errors) (server \(.server_cpu_cores) cores, load generator \(.generator_cpu_cores))"' "$out.json")"
}

# Signs users in before a run: bearer tokens for me / step_up / the probe, refresh tokens for
# the refresh and mixed scenarios (each run starts from fresh ones: they are single-use).
seed_tokens() { # name run_dir
  local name=$1 rd=$2 dir=$WORK/$1
  {
    sed -n '1,64p' "$dir/users.tsv"    # me: 64 users
    cat "$dir/api_users.tsv"           # step_up: the 8 registered through the API...
    sed -n '65,72p' "$dir/users.tsv"   # ...and 8 imported
    sed -n '101,356p' "$dir/users.tsv" # refresh: 256 sessions
    sed -n '401,528p' "$dir/users.tsv" # mixed: 128 sessions
    sed -n "${USERS}p" "$dir/users.tsv" # the probe's own user
  } >"$rd/$name-seed-in.tsv"
  "$BIN/seed" login --base "${SBASE[$name]}" --input "$rd/$name-seed-in.tsv" \
    --output "$rd/$name-tokens.tsv" >/dev/null
  sed -n '1,64p' "$rd/$name-tokens.tsv" >"$rd/$name-me.tsv"
  sed -n '65,80p' "$rd/$name-tokens.tsv" >"$rd/$name-stepup.tsv"
  sed -n '81,336p' "$rd/$name-tokens.tsv" >"$rd/$name-refresh.tsv"
  sed -n '337,464p' "$rd/$name-tokens.tsv" >"$rd/$name-mixed-refresh.tsv"
  sed -n '465p' "$rd/$name-tokens.tsv" >"$rd/$name-probe.tsv"
  # OAuth grants of the me users (their consent is asked and given on the first run only).
  "$BIN/seed" oauth-grants --base "${SBASE[$name]}" --input "$rd/$name-me.tsv" \
    --client "$dir/oauth_client.tsv" --output "$rd/$name-oauth.tsv" >/dev/null
  # The me users' consent to the agent for orders:read (a CIBA request each, approved by the
  # user, checked by one token exchange): asked on the first run only, the tenant keeps it.
  if [[ ! -s $dir/agent_consent.json ]]; then
    "$BIN/seed" agent-consent --base "${SBASE[$name]}" --input "$rd/$name-me.tsv" \
      --agent "$dir/agent.tsv" --scope orders:read --concurrency 8 >"$dir/agent_consent.json.tmp"
    mv "$dir/agent_consent.json.tmp" "$dir/agent_consent.json"
    log "$name: agent consent $(jq -c . "$dir/agent_consent.json")"
  fi
}

# ----------------------------------------------------------------------------------------------
# Load
# ----------------------------------------------------------------------------------------------
# CPU time (user + system, in clock ticks) a server has used so far.
cpu_ticks() { # server name
  awk '{ print $14 + $15 }' "/proc/${SPID[$1]}/stat"
}
TICKS=$(getconf CLK_TCK)

# wrk_run server script conns threads seconds result [VAR=value ...]: one wrk invocation; the
# script's done() writes the JSON result, to which this adds the server's CPU use (cores, and
# CPU milliseconds per request: unlike rates, hardly changed by other load on the machine) and
# the load average after the phase.
wrk_run() {
  local server=$1 script=$2 conns=$3 threads=$4 secs=$5 result=$6 c0 c1
  shift 6
  c0=$(cpu_ticks "$server")
  env BENCH_WRK_DIR="$BENCH/wrk" BENCH_THREADS="$threads" BENCH_RESULT="$result" "$@" \
    wrk -t"$threads" -c"$conns" -d"${secs}s" --latency --timeout 30s \
    -s "$BENCH/wrk/$script.lua" "${SBASE[$server]}" >"${result%.json}.txt" 2>&1 ||
    die "wrk $script failed: $(tail -5 "${result%.json}.txt")"
  c1=$(cpu_ticks "$server")
  [[ -s $result ]] || die "wrk $script wrote no result: $(tail -5 "${result%.json}.txt")"
  jq --argjson t "$((c1 - c0))" --argjson hz "$TICKS" --arg l "$(cut -d' ' -f1-3 /proc/loadavg)" \
    '. + {server_cpu_cores: (if .duration_s > 0 then ($t / $hz / .duration_s * 100 | round) / 100 else null end),
          server_cpu_ms_per_request: (if .requests > 0 then ($t / $hz / .requests * 1e6 | round) / 1000 else null end),
          loadavg_after: $l}' "$result" >"$result.tmp" && mv "$result.tmp" "$result"
}

# Records a failure when a result has errors.
check_errors() { # label result
  local errors
  errors=$(jq -r '.errors' "$2")
  if [[ $errors != 0 ]]; then
    echo "$1: $errors errors: $(jq -c '{socket_error_detail, statuses, samples, first_error}' "$2")" >>"$FAILURES"
    log "  $1: $errors ERRORS $(jq -c '{statuses, samples, first_error}' "$2")"
  fi
}

# scenario server name script conns threads [VAR=value ...]: a warm-up of WARM seconds, then
# the measured DUR seconds. With BENCH_TOKENS_IN, the measured phase starts from the tokens
# the warm-up left unused.
scenario() {
  local server=$1 name=$2 script=$3 conns=$4 threads=$5
  shift 5
  local out=$RD/$name chain=() warm=()
  local a
  for a in "$@"; do
    [[ $a == BENCH_TOKENS_IN=* ]] && chain=("BENCH_TOKENS_OUT=$out.left.tsv")
    # Single-use inputs without a chain: the warm-up takes its own file.
    [[ $a == BENCH_CODES=* ]] && warm=("BENCH_CODES=${a#BENCH_CODES=}.warm")
  done
  wrk_run "$server" "$script" "$conns" "$threads" "$WARM" "$out.warmup.json" "$@" \
    ${chain[@]+"${chain[@]}"} ${warm[@]+"${warm[@]}"}
  check_errors "run $RUN $name (warm-up)" "$out.warmup.json"
  if ((${#chain[@]})); then
    set -- "$@" "BENCH_TOKENS_IN=$out.left.tsv"
  fi
  if [[ -n ${BEFORE_MEASURE:-} ]]; then
    "$BEFORE_MEASURE"
  fi
  wrk_run "$server" "$script" "$conns" "$threads" "$DUR" "$out.json" "$@"
  check_errors "run $RUN $name" "$out.json"
  log "  $(jq -r --arg n "$name" '"\($n): \(.rps) req/s, p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, errors \(.errors)"' "$out.json")"
}

# Codes for the code-exchange scenario: its warm-up's and its own, each 1.5 times what the
# refresh rate of this run would use (an exchange costs at least a refresh).
mint_codes() { # file
  local rate n part out
  rate=$(jq -r '.rps' "$RD/refresh.json")
  for part in warm main; do
    if [[ $part == warm ]]; then
      n=$(awk -v r="$rate" -v s="$WARM" 'BEGIN { printf "%d", r * s * 1.5 + 1000 }')
      out=$1.warm
    else
      n=$(awk -v r="$rate" -v s="$DUR" 'BEGIN { printf "%d", r * s * 1.5 + 1000 }')
      out=$1
    fi
    "$BIN/seed" oauth-codes --base "${SBASE[A]}" --input "$RD/A-oauth.tsv" --count "$n" \
      --concurrency 64 --output "$out" >"$RD/mint-$part.json" ||
      die "minting codes failed"
  done
  log "  minted codes: $(jq -c . "$RD/mint-warm.json") $(jq -c . "$RD/mint-main.json")"
}

start_mixed_probe() {
  local row
  row=$(head -1 "$RD/A-probe.tsv")
  "$BIN/probe" me --base "${SBASE[A]}" --api-key "$(cut -f1 <<<"$row")" \
    --token "$(cut -f3 <<<"$row")" --rate "$MIXED_PROBE_RATE" \
    --seconds "$(awk -v d="$DUR" 'BEGIN { print d - 1 }')" --delay-s 0.5 \
    >"$RD/mixed_probe.json" 2>"$RD/mixed_probe.err" &
  PROBE_PID=$!
}

overload() {
  local base=${SBASE[C]} row wrk_pid
  row=$(sed -n '1p' "$WORK/A/users.tsv")
  env BENCH_WRK_DIR="$BENCH/wrk" BENCH_THREADS="$THREADS" BENCH_RESULT="$RD/overload.json" \
    BENCH_USERS="$WORK/A/users.tsv" \
    wrk -t"$THREADS" -c"$OVERLOAD_CONNS" -d"${OVERLOAD_SECS}s" --latency --timeout 30s \
    -s "$BENCH/wrk/login.lua" "$base" >"$RD/overload.txt" 2>&1 &
  wrk_pid=$!
  "$BIN/probe" login --base "$base" --api-key "$(cut -f1 <<<"$row")" \
    --email "$(cut -f2 <<<"$row")" --count "$OVERLOAD_PROBES" --interval-ms 100 --delay-s 2 \
    >"$RD/overload_probe.json" || die "the overload probe failed"
  wait "$wrk_pid" || die "wrk (overload) failed: $(tail -5 "$RD/overload.txt")"
  log "  overload: wrk $(jq -c '{rps, statuses, socket_errors}' "$RD/overload.json")"
  log "  overload: probe $(jq -c '{statuses, refused_503, refused_503_with_retry_after, p50: .latency_503.p50_ms, p99: .latency_503.p99_ms}' "$RD/overload_probe.json")"
  # Anything but 200 and 503 (with Retry-After) is an error here.
  local bad
  bad=$(jq -r '[.statuses | to_entries[] | select(.key != "200" and .key != "503") | .value] | add // 0' \
    "$RD/overload_probe.json")
  [[ $bad == 0 ]] || echo "run $RUN overload probe: $bad answers other than 200/503: $(jq -c .statuses "$RD/overload_probe.json")" >>"$FAILURES"
}

# The routes that answer 202 whatever the address (magic-link, email-otp, forgot-password):
# TIMING_CALLS calls each for addresses with an account (imported users no scenario signs in
# by link or code; each used once a route, under the one-a-minute spacing) and as many for
# addresses without one, on the idle server, one at a time. The gap between the medians is
# what the answer time tells about an address.
timing_202() {
  local row
  row=$(sed -n '1p' "$WORK/A/users.tsv")
  sed -n "$((USERS - TIMING_CALLS)),$((USERS - 1))p" "$WORK/A/users.tsv" | cut -f2 \
    >"$RD/timing-existing.txt"
  "$BIN/probe" timing --base "${SBASE[A]}" --api-key "$(cut -f1 <<<"$row")" \
    --existing "$RD/timing-existing.txt" --count "$TIMING_CALLS" --tag "run$RUN" \
    >"$RD/timing_202.json" || die "the 202 timing probe failed"
  log "  202 timing: $(jq -c '.routes | map_values({existing_p50: .existing.p50_ms, unknown_p50: .unknown.p50_ms, gap_p50_ms, gap_mean_ms})' "$RD/timing_202.json")"
}

# ----------------------------------------------------------------------------------------------
# The runs
# ----------------------------------------------------------------------------------------------
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for RUN in $(seq 1 "$RUNS"); do
  RD=$WORK/run$RUN
  mkdir -p "$RD"
  log "run $RUN/$RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  cut -d' ' -f1-3 /proc/loadavg >"$RD/loadavg"

  # A: durable writes (the production setting). Restarted every run: rate windows start empty.
  # Codes live 10 minutes here: the code-exchange scenario uses codes made before it.
  # The wallet load serves its issuer's status list on 127.0.0.1 over plain HTTP, and the
  # single sign-on loads their identity providers.
  start_server A "$WORK/data-a" TESSERA__TOKENS__AUTHORIZATION_CODE_TTL_SECS=600 \
    TESSERA__EUDI__ALLOW_LOOPBACK_HTTP=true TESSERA__SSO__ALLOW_PRIVATE_TARGETS=true
  ((RUN > 1)) || setup_server A
  ((RUN > 1)) || setup_wallet A
  ((RUN > 1)) || setup_sso A
  seed_tokens A "$RD"
  log "A (durable) at ${SBASE[A]}"
  scenario A healthz healthz "$CONNS" "$THREADS"
  scenario A me me "$CONNS" "$THREADS" BENCH_TOKENS="$RD/A-me.tsv"
  # The ceilings right before the logins they are compared with (the server is idle): on a
  # shared machine, what else runs changes both alike.
  log "  ceilings"
  "$BIN/ceilings" measure --m-cost "$M_COST" --t-cost "$T_COST" --p-cost "$P_COST" \
    --seconds "$((QUICK ? 1 : 3))" --short-seconds 1 --tmp-dir "$WORK" >"$RD/ceilings.json"
  log "  $(jq -r '"argon2id \(.argon2id.all_cores.verifications_per_s)/s on \(.threads) threads (they had \(.argon2id.all_cores.cpu_share * 100 | round) % of the cores), \(.argon2id.single_thread.latency.p50_ms) ms each on one"' "$RD/ceilings.json")"
  scenario A login login "$CONNS" "$THREADS" BENCH_USERS="$WORK/A/users.tsv"
  scenario A login_at_cores login "$NPROC" "$((NPROC < THREADS ? NPROC : THREADS))" \
    BENCH_USERS="$WORK/A/users.tsv"
  scenario A step_up step_up "$CONNS" "$THREADS" BENCH_TOKENS="$RD/A-stepup.tsv"
  scenario A refresh refresh "$CONNS" "$THREADS" BENCH_TOKENS_IN="$RD/A-refresh.tsv"
  # The OAuth provider: introspection of grants' access tokens by a confidential client, the
  # code exchange alone (codes made just before, enough for the refresh rate just measured,
  # half again), and the authorize (consent on file) -> code exchange round trip.
  scenario A introspect introspect "$CONNS" "$THREADS" BENCH_OAUTH="$RD/A-oauth.tsv"
  mint_codes "$RD/A-codes.tsv"
  scenario A code_exchange code_exchange "$CONNS" "$THREADS" BENCH_CODES="$RD/A-codes.tsv"
  scenario A oauth_round_trip oauth_round_trip "$CONNS" "$THREADS" BENCH_OAUTH="$RD/A-oauth.tsv"
  # Agents: machine tokens by client credentials, and RFC 8693 token exchange of the me users'
  # access tokens (each user consented to the agent for orders:read at set-up). One agent,
  # HTTP Basic; each token a durable write.
  scenario A client_credentials client_credentials "$CONNS" "$THREADS" \
    BENCH_AGENT="$WORK/A/agent.tsv"
  scenario A token_exchange token_exchange "$CONNS" "$THREADS" \
    BENCH_AGENT="$WORK/A/agent.tsv" BENCH_TOKENS="$RD/A-me.tsv"
  # Passkey sign-ins (assert/begin, an ES256 signature, assert/finish): wrk cannot sign, so
  # the bench's own load generator, one passkey per loop, each sign-in from its own address.
  "$BIN/passkeys" --base "${SBASE[A]}" --input "$RD/A-me.tsv" --concurrency "$CONNS" \
    --seconds "$DUR" --warmup "$WARM" --server-pid "${SPID[A]}" --clock-ticks "$TICKS" >"$RD/passkey_sign_in.json" 2>"$RD/passkey_sign_in.err" ||
    die "the passkey load failed: $(cat "$RD/passkey_sign_in.err")"
  check_errors "run $RUN passkey_sign_in" "$RD/passkey_sign_in.json"
  log "  $(jq -r '"passkey_sign_in: \(.rps) sign-ins/s, p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, errors \(.errors)"' "$RD/passkey_sign_in.json")"
  # Single sign-on (an organization's connection): the bench's own identity provider and
  # browser, each sign-in start -> provider -> callback (OpenID) or ACS (SAML, an ECDSA-signed
  # assertion) -> code exchange for the token pair, from its own address, over 1,000
  # provider users (a user's first sign-in creates the account, later ones are linked).
  sso_load oidc
  sso_load saml
  # Wallet presentations (OpenID4VP, direct_post.jwt): the bench's own load generator again,
  # a test wallet per loop (half SD-JWT VC PIDs with a status list it serves itself, cached
  # by the server; half mdoc PIDs): initiate, request object, encrypted answer. The figure
  # is the answers the server verified and took, a second; the latency that of the answer.
  "$BIN/wallet" run --base "${SBASE[A]}" --api-key "$(jq -r '.api_key' "$WORK/A/wallet_tenant.json")" \
    --verifier-root "$WORK/A/wallet_verifier_root.pem" --issuers "$WORK/A/wallet_issuers.json" \
    --wallets "$CONNS" --concurrency "$CONNS" --seconds "$DUR" --warmup "$WARM" \
    --server-pid "${SPID[A]}" --clock-ticks "$TICKS" \
    >"$RD/wallet_presentation.json" 2>"$RD/wallet_presentation.err" ||
    die "the wallet load failed: $(cat "$RD/wallet_presentation.err")"
  check_errors "run $RUN wallet_presentation" "$RD/wallet_presentation.json"
  log "  $(jq -r '"wallet_presentation: \(.rps) verified/s (sd-jwt \(.by_format["dc+sd-jwt"].rps), mdoc \(.by_format.mso_mdoc.rps)), answer p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, errors \(.errors), status list fetched \(.status_list.fetches_during_load) times under load"' "$RD/wallet_presentation.json")"
  scenario A anonymous anonymous "$CONNS" "$THREADS" BENCH_KEYS="$WORK/A/anon_keys.txt"
  BEFORE_MEASURE=start_mixed_probe scenario A mixed mixed "$CONNS" "$THREADS" \
    BENCH_TOKENS="$RD/A-me.tsv" BENCH_TOKENS_IN="$RD/A-mixed-refresh.tsv" \
    BENCH_USERS="$WORK/A/users.tsv"
  wait "$PROBE_PID" || die "the mixed probe failed: $(cat "$RD/mixed_probe.err")"
  log "  mixed: probe me $(jq -c '{sent, ok, p50: .latency.p50_ms, p99: .latency.p99_ms}' "$RD/mixed_probe.json")"
  [[ $(jq -r '.failed' "$RD/mixed_probe.json") == 0 ]] ||
    echo "run $RUN mixed probe: $(jq -c .statuses "$RD/mixed_probe.json")" >>"$FAILURES"
  timing_202
  echo "$(rss_kb A)" >"$RD/rss_a_kb"
  stop_server A

  # B: the same, without waiting for the disk: the cost of durability.
  start_server B "$WORK/data-b" TESSERA__STORAGE__SYNC_WRITES=false
  ((RUN > 1)) || setup_server B
  log "B (sync_writes = false) at ${SBASE[B]}"
  sed -n '101,356p' "$WORK/B/users.tsv" >"$RD/B-seed-in.tsv"
  "$BIN/seed" login --base "${SBASE[B]}" --input "$RD/B-seed-in.tsv" --output "$RD/B-refresh.tsv" >/dev/null
  scenario B refresh_nondurable refresh "$CONNS" "$THREADS" BENCH_TOKENS_IN="$RD/B-refresh.tsv"
  scenario B anonymous_nondurable anonymous "$CONNS" "$THREADS" BENCH_KEYS="$WORK/B/anon_keys.txt"
  stop_server B

  # C: A's data with a small hashing queue, overloaded with logins.
  start_server C "$WORK/data-a" TESSERA__SECURITY__HASHING_QUEUE_MAX="$OVERLOAD_QUEUE"
  log "C (hashing_queue_max = $OVERLOAD_QUEUE) at ${SBASE[C]}: overload"
  overload
  stop_server C

  # The run as one document; the ratios of this run.
  {
    for f in "$RD"/*.json; do
      n=$(basename "$f" .json)
      jq -c --arg n "$n" '{($n): .}' "$f"
    done
    jq -c -n --arg l "$(cat "$RD/loadavg")" --argjson rss "$(cat "$RD/rss_a_kb")" \
      '{loadavg_at_start: $l, server_rss_kb_after_scenarios: $rss}'
  } | jq -s 'add' >"$WORK/run$RUN.json"
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ----------------------------------------------------------------------------------------------
# Scale
# ----------------------------------------------------------------------------------------------
create_scale_tenants() { # indexes...
  local i
  for i in "$@"; do
    "$TESSERA" admin --socket "$SOCK" tenant create --name "Scale $i" --slug "scale-$i" \
      >"$DIR/t/$i.json" || return 1
  done
}
import_scale_users() { # indexes...
  local i
  for i in "$@"; do
    printf '{"email":"u0@scale-%d.bench.test","password_hash":"%s","email_verified":true}\n' "$i" "$HASH" |
      "$TESSERA" admin --socket "$SOCK" user import --tenant "scale-$i" >/dev/null || return 1
  done
}
export -f create_scale_tenants import_scale_users
export HASH

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
wait_ok() { # url [curl args...]: polls every 10 ms until a 2xx, for at most 60 s
  local t0
  t0=$(now)
  until curl -sf -o /dev/null "$@"; do
    awk -v s="$(since "$t0")" 'BEGIN { exit !(s > 60) }' &&
      die "no 2xx from $1 in 60 s; the last answer: $(curl -s -w ' (%{http_code})' "$@")"
    sleep 0.01
  done
}

SCALE_JSON=$WORK/scale.json
echo '{}' >"$SCALE_JSON"
put() { # jq-path json-value
  jq --argjson v "$2" "$1 = \$v" "$SCALE_JSON" >"$SCALE_JSON.tmp" && mv "$SCALE_JSON.tmp" "$SCALE_JSON"
}

if ((SCALE)); then
  RUN=scale
  RD=$WORK/scale
  DIR=$RD
  mkdir -p "$RD/t"
  # A fixed base URL: token issuers name it, and the restart below must accept earlier tokens
  # (by default it is the bound address, whose port changes).
  SCALE_ENV=(TESSERA__SERVER__TENANT_IDLE_SECS="$SCALE_IDLE_SECS"
    TESSERA__SERVER__BASE_URL=http://tessera-bench.test)
  start_server S "$WORK/data-s" "${SCALE_ENV[@]}"
  export SOCK=${SDATA[S]}/admin.sock DIR
  log "scale: S at ${SBASE[S]} (tenant_idle_secs = $SCALE_IDLE_SECS)"

  log "scale: creating $SCALE_TENANTS tenants with the admin CLI (xargs -P 8)"
  t0=$(now)
  seq 0 $((SCALE_TENANTS - 1)) | xargs -P 8 -n 100 bash -c 'create_scale_tenants "$@"' _
  create_secs=$(since "$t0")
  log "scale: $SCALE_TENANTS tenants in $create_secs s"
  t0=$(now)
  seq 0 $((SCALE_TENANTS - 1)) | xargs -P 8 -n 100 bash -c 'import_scale_users "$@"' _
  import_secs=$(since "$t0")
  log "scale: one user each imported in $import_secs s"
  # Tenant 0 gets 99 more users: the one-tenant runs spread over 100 users of one tenant.
  expect_imported "$(users_jsonl 100 'u%d@scale-0.bench.test' | admin "${SDATA[S]}" user import --tenant scale-0)" 99
  # api_key<TAB>email of tenant i on line i+1.
  find "$RD/t" -name '*.json' -print0 | xargs -0 jq -r '[.tenant.slug, .api_key] | @tsv' |
    sed 's/^scale-//' | sort -n | awk -F'\t' '{ printf "%s\tu0@scale-%s.bench.test\n", $2, $1 }' \
    >"$RD/t10k-users.tsv"
  [[ $(wc -l <"$RD/t10k-users.tsv") == "$SCALE_TENANTS" ]] || die "scale tenants missing"
  head -100 "$RD/t10k-users.tsv" >"$RD/t100-users.tsv"
  key0=$(head -1 "$RD/t10k-users.tsv" | cut -f1)
  for i in $(seq 0 99); do printf '%s\tu%d@scale-0.bench.test\n' "$key0" "$i"; done >"$RD/t1-users.tsv"

  # Tokens for `me` through e-mailed login links: no Argon2 verification per tenant.
  log "scale: signing in one user of each tenant, and 100 users of tenant 0 (login links)"
  t0=$(now)
  "$BIN/seed" magic-link --base "${SBASE[S]}" --input "$RD/t10k-users.tsv" --outbox "${SDATA[S]}/outbox" \
    --concurrency 8 --output "$RD/t10k-tokens.tsv" >/dev/null
  # (u0 of tenant 0 has its token already: a second link within a minute would be refused.)
  tail -n +2 "$RD/t1-users.tsv" >"$RD/t1-seed.tsv"
  "$BIN/seed" magic-link --base "${SBASE[S]}" --input "$RD/t1-seed.tsv" --outbox "${SDATA[S]}/outbox" \
    --concurrency 8 --output "$RD/t1-more-tokens.tsv" >/dev/null
  cat <(head -1 "$RD/t10k-tokens.tsv") "$RD/t1-more-tokens.tsv" >"$RD/t1-tokens.tsv"
  head -100 "$RD/t10k-tokens.tsv" >"$RD/t100-tokens.tsv"
  log "scale: signed in in $(since "$t0") s"
  put '.tenants.created' "$SCALE_TENANTS"
  put '.tenants.create_seconds' "$create_secs"
  put '.tenants.import_one_user_each_seconds' "$import_secs"

  for t in 1 100 10k; do
    # One pass over every token first, so the measurement finds the tenants' actors running
    # (an idle one is stopped after tenant_idle_secs); its rate is the first-touch rate.
    "$BIN/seed" touch --base "${SBASE[S]}" --input "$RD/t$t-tokens.tsv" --concurrency "$CONNS" \
      >"$RD/first_touch_tenants_$t.json"
    log "  $(jq -r --arg n "first_touch_tenants_$t" '"\($n): \(.requests) requests in \(.seconds) s, \(.rps) req/s"' "$RD/first_touch_tenants_$t.json")"
    scenario S "me_tenants_$t" me "$CONNS" "$THREADS" BENCH_TOKENS="$RD/t$t-tokens.tsv"
    scenario S "login_tenants_$t" login "$CONNS" "$THREADS" BENCH_USERS="$RD/t$t-users.tsv"
    put ".tenants.rss_kb_after.\"$t\"" "$(rss_kb S)"
  done
  put '.tenants.after_10k_run' "$(jq -n --argjson r "$(rss_kb S)" --argjson n "$(running_tenants S)" \
    '{rss_kb: $r, tenant_actors_running: $n}')"
  log "scale: after the 10k-tenant runs: $(jq -c '.tenants.after_10k_run' "$SCALE_JSON")"
  # Idle: wait the idle time plus 10 s; with the gauge, keep waiting (up to a minute more) until
  # no tenant actor runs.
  t0=$(now)
  sleep $((SCALE_IDLE_SECS + 10))
  if [[ $(running_tenants S) != null ]]; then
    for _ in $(seq 30); do
      [[ $(running_tenants S) == 0 ]] && break
      sleep 2
    done
  fi
  put '.tenants.after_idle' "$(jq -n --argjson r "$(rss_kb S)" --argjson n "$(running_tenants S)" \
    --argjson s "$(since "$t0")" '{waited_s: $s, rss_kb: $r, tenant_actors_running: $n}')"
  log "scale: after the idle time: $(jq -c '.tenants.after_idle' "$SCALE_JSON")"

  # Start-up with every tenant on disk: until /readyz answers 200, until a `me` answers 200.
  stop_server S
  row=$(sed -n "$((SCALE_TENANTS / 2))p" "$RD/t10k-tokens.tsv")
  t0=$(now)
  start_server S "$WORK/data-s" "${SCALE_ENV[@]}"
  listening=$(since "$t0")
  wait_ok "${SBASE[S]}/readyz"
  ready=$(since "$t0")
  wait_ok "${SBASE[S]}/v1/auth/me" -H "X-API-Key: $(cut -f1 <<<"$row")" \
    -H "Authorization: Bearer $(cut -f3 <<<"$row")"
  first_me=$(since "$t0")
  put '.tenants.restart' "$(jq -n --argjson l "$listening" --argjson r "$ready" --argjson m "$first_me" \
    '{listening_s: $l, readyz_200_s: $r, first_me_200_s: $m}')"
  log "scale: restart with $SCALE_TENANTS tenants: $(jq -c '.tenants.restart' "$SCALE_JSON")"
  stop_server S

  # One tenant with SCALE_USERS users, on a data directory of its own.
  start_server U "$WORK/data-u"
  log "scale: U at ${SBASE[U]}: one tenant, $SCALE_USERS users"
  printf '%s\n' "$BENCH_PASSWORD" | admin "${SDATA[U]}" tenant create --name "Scale Users" \
    --slug scale-users --owner-email owner@users.bench.test >"$RD/u.json"
  ukey=$(jq -r '.api_key' "$RD/u.json")
  before_kb=$(du -sk "${SDATA[U]}" | cut -f1)
  t0=$(now)
  expect_imported "$(users_jsonl "$SCALE_USERS" 'u%06d@users.bench.test' |
    admin "${SDATA[U]}" user import --tenant scale-users)" "$SCALE_USERS"
  import_secs=$(since "$t0")
  after_kb=$(du -sk "${SDATA[U]}" | cut -f1)
  log "scale: $SCALE_USERS users imported in $import_secs s; data directory ${before_kb} KiB -> ${after_kb} KiB"
  awk -v k="$ukey" -v n="$SCALE_USERS" 'BEGIN { for (i = 0; i < n; i++) printf "%s\tu%06d@users.bench.test\n", k, i }' \
    >"$RD/u-users.tsv"
  shuf -n 1000 "$RD/u-users.tsv" >"$RD/u-seed.tsv"
  "$BIN/seed" magic-link --base "${SBASE[U]}" --input "$RD/u-seed.tsv" --outbox "${SDATA[U]}/outbox" \
    --concurrency 8 --output "$RD/u-tokens.tsv" >/dev/null
  scenario U me_users_100k me "$CONNS" "$THREADS" BENCH_TOKENS="$RD/u-tokens.tsv"
  scenario U login_users_100k login "$CONNS" "$THREADS" BENCH_USERS="$RD/u-users.tsv"
  # The users list by e-mail prefix, as a tenant's admins search it: a latency target, so at
  # USERS_CONNS searches at once (the tenant's one actor serves them in turn; at 64 the p99 is
  # that queue's length, about 64 / rps).
  usession=$(curl -sf "${SBASE[U]}/v1/auth/dashboard/login" -H 'content-type: application/json' \
    -d "$(jq -n --arg p "$BENCH_PASSWORD" '{email: "owner@users.bench.test", password: $p}')" |
    jq -r '.session_token') || die "the dashboard login of the scale-users owner failed"
  scenario U users_prefix_100k users_prefix "$USERS_CONNS" 1 BENCH_SESSION="$usession" BENCH_SLUG=scale-users
  # The online backup of this directory: how long it takes, its size, the check's time, and how
  # long a write waits meanwhile (writes pause while the snapshot is read): a settings write
  # probed back to back before and during the backup.
  probe_writes() { # out-file stop-file
    local i=0
    while [[ ! -e $2 ]]; do
      i=$((i + 1))
      # Two site URLs in turn: each call changes the setting, so each is a write and a flush.
      curl -s -o /dev/null -w '%{time_total}\n' -X PUT \
        "${SBASE[U]}/v1/auth/dashboard/tenants/scale-users/settings/urls" \
        -H "Authorization: Bearer $usession" -H 'content-type: application/json' \
        -d "{\"site_url\": \"https://app$((i % 2)).bench.test/\", \"redirect_urls\": []}" >>"$1"
    done
  }
  probe_writes "$RD/writes-before.txt" "$RD/before.stop" &
  probe=$!
  sleep 3
  touch "$RD/before.stop"
  wait "$probe"
  probe_writes "$RD/writes-during.txt" "$RD/during.stop" &
  probe=$!
  sleep 0.5
  admin "${SDATA[U]}" backup --out "$RD/u.backup" >"$RD/backup.json" || die "the backup failed"
  touch "$RD/during.stop"
  wait "$probe"
  t0=$(now)
  "$TESSERA" admin backup --verify "$RD/u.backup" >/dev/null || die "the backup's check failed"
  verify_secs=$(since "$t0")
  max_ms() { sort -g "$1" | tail -1 | awk '{ printf "%.1f", $1 * 1000 }'; }
  put '.backup' "$(jq -n --slurpfile b "$RD/backup.json" --argjson v "$verify_secs" \
    --argjson wb "$(max_ms "$RD/writes-before.txt")" --argjson wd "$(max_ms "$RD/writes-during.txt")" \
    --argjson nb "$(wc -l <"$RD/writes-before.txt")" --argjson nd "$(wc -l <"$RD/writes-during.txt")" \
    '{entries: $b[0].header.entries, seconds: $b[0].seconds, bytes: ($b[0].header.body_bytes + 4096),
      verify_seconds: $v, write_max_ms_before: $wb, write_max_ms_during: $wd,
      writes_before: $nb, writes_during: $nd}')"
  log "scale: backup of $SCALE_USERS users: $(jq -c '.backup' "$SCALE_JSON")"
  # A master-key rotation of the same directory: every record read, the sealed ones re-wrapped
  # in one transaction, requests held meanwhile (the same write probe shows for how long).
  # A key file must be the owner's alone (the server refuses one group or others may read).
  (umask 077 && head -c 32 /dev/urandom | base64 >"$RD/new.key")
  probe_writes "$RD/writes-rotation.txt" "$RD/rotation.stop" &
  probe=$!
  sleep 0.5
  admin "${SDATA[U]}" master-key rotate --new-key-file "$RD/new.key" >"$RD/rotation.json" ||
    die "the master-key rotation failed"
  touch "$RD/rotation.stop"
  wait "$probe"
  put '.rotation' "$(jq -n --slurpfile r "$RD/rotation.json" \
    --argjson wd "$(max_ms "$RD/writes-rotation.txt")" \
    '{records_scanned: $r[0].records_scanned, records_rewritten: $r[0].records_rewritten,
      sealed_values: $r[0].sealed_values, seconds: $r[0].seconds, write_max_ms_during: $wd}')"
  log "scale: master-key rotation of $SCALE_USERS users: $(jq -c '.rotation' "$SCALE_JSON")"
  put '.users' "$(jq -n --argjson n "$SCALE_USERS" --argjson s "$import_secs" --argjson b "$before_kb" \
    --argjson a "$after_kb" --argjson r "$(rss_kb U)" \
    '{count: $n, import_seconds: $s, data_dir_kib_before: $b, data_dir_kib_after: $a,
      bytes_per_user: ((($a - $b) * 1024 / $n) | floor), bytes_per_user_whole_dir: (($a * 1024 / $n) | floor),
      rss_kb_after: $r}')"
  stop_server U

  {
    for f in "$RD"/*.json; do
      n=$(basename "$f" .json)
      case $n in u | *.warmup) continue ;; esac
      [[ $n == me_* || $n == login_* || $n == first_touch_* || $n == users_* ]] || continue
      jq -c --arg n "$n" '{($n): .}' "$f"
    done
  } | jq -s 'add // {}' >"$RD/scenarios.json"
  jq --slurpfile s "$RD/scenarios.json" '.scenarios = $s[0]' "$SCALE_JSON" >"$SCALE_JSON.tmp" &&
    mv "$SCALE_JSON.tmp" "$SCALE_JSON"
fi

# ----------------------------------------------------------------------------------------------
# Store stress: the store alone, as the tenant actors drive it, at its maximum rate
# ----------------------------------------------------------------------------------------------
STRESS_JSON=$WORK/store_stress.json
echo '{}' >"$STRESS_JSON"
if ((!SCALE_ONLY)); then
  STRESS_SECS=${BENCH_STRESS_SECS:-$((QUICK ? 5 : 60))}
  for mode in sync relaxed; do
    log "store stress: $mode, $STRESS_SECS s"
    if ! "$BIN/store_stress" --secs "$STRESS_SECS" --durability "$mode" --tmp-dir "$WORK" \
      >"$WORK/stress-$mode.json" 2>"$WORK/stress-$mode.log"; then
      echo "store stress $mode: $(cat "$WORK/stress-$mode.json" "$WORK/stress-$mode.log" | head -c 2000)" >>"$FAILURES"
      continue
    fi
    jq --arg m "$mode" --slurpfile r "$WORK/stress-$mode.json" '.[$m] = $r[0]' "$STRESS_JSON" \
      >"$STRESS_JSON.tmp" && mv "$STRESS_JSON.tmp" "$STRESS_JSON"
    errors=$(jq -r '.errors' "$WORK/stress-$mode.json")
    [[ $errors == 0 ]] || echo "store stress $mode: $errors storage errors" >>"$FAILURES"
    log "  $(jq -r '"\(.batches_per_s | floor) batches/s, at most \(.outstanding_max) unflushed (bound \(.max_unflushed_batches)), oldest call \(.oldest_call_max_ms) ms, ack p99 \(.ack_latency.p99_ms) ms, \(.disk_bytes_end) bytes on disk"' "$WORK/stress-$mode.json")"
  done
fi

# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------
COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo true || echo false)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mkdir -p "$BENCH/results"
OUT=$BENCH/results/latest.json
((SCALE_ONLY)) && OUT=$WORK/summary.json && KEEP=1

jq -n \
  --slurpfile runs <(cat "$WORK"/run[0-9]*.json 2>/dev/null || true) \
  --slurpfile scale "$SCALE_JSON" \
  --slurpfile stress "$STRESS_JSON" \
  --rawfile failures "$FAILURES" \
  --argjson nproc "$NPROC" --arg cpu "$CPU" --arg kernel "$(uname -r)" \
  --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg commit "$COMMIT" --argjson dirty "$DIRTY" \
  --arg rustc "$(rustc --version)" --arg wrk "$(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)" \
  --argjson mem "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)" \
  --arg load_start "$LOAD_START" --arg load_end "$LOAD_END" \
  --argjson runs_n "$RUNS" --argjson dur "$DUR" --argjson warm "$WARM" --argjson conns "$CONNS" \
  --argjson threads "$THREADS" --argjson m "$M_COST" --argjson t "$T_COST" --argjson p "$P_COST" \
  --argjson scale_on "$SCALE" --argjson quick "$QUICK" \
  --argjson overload_conns "$OVERLOAD_CONNS" --argjson overload_queue "$OVERLOAD_QUEUE" \
  -f "$BENCH/summary.jq" >"$OUT"

jq -r -f "$BENCH/table.jq" "$OUT"
log "wrote $OUT"

if [[ $(jq -r '.errors_total' "$OUT") != 0 || -s $FAILURES ]]; then
  log "FAILED: errors during the run:"
  cat "$FAILURES" >&2
  exit 1
fi
if [[ $(jq -r '.targets_met' "$OUT") != true ]]; then
  log "a target was missed"
  exit 3
fi
