# Builds bench/results/latest.json from the per-run documents ($runs), the scale document
# ($scale), the store stress ($stress) and the run's settings (see the jq call at the end of bench/run.sh).

def median:
  map(select(. != null)) | sort
  | if length == 0 then null
    elif length % 2 == 1 then .[(length - 1) / 2]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def div($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;

def scenario_names: [
  "healthz", "me", "login", "login_at_cores", "step_up", "refresh", "refresh_nondurable",
  "anonymous", "anonymous_nondurable", "mixed", "passkey_sign_in", "introspect",
  "code_exchange", "oauth_round_trip", "client_credentials", "token_exchange",
  "wallet_presentation", "sso_oidc_sign_in", "sso_saml_sign_in"
];

# What each target compares, per run.
def ratio_values:
  {
    "login_rps / argon2_verifications_per_s_all_cores":
      div(.login.rps; .ceilings.argon2id.all_cores.verifications_per_s),
    "login_p50_at_cores / argon2_single_verification_ms":
      div(.login_at_cores.p50_ms; .ceilings.argon2id.single_thread.latency.p50_ms),
    "me_rps / healthz_rps": div(.me.rps; .healthz.rps),
    "refresh_rps / refresh_rps_nondurable": div(.refresh.rps; .refresh_nondurable.rps),
    "passkey_sign_in_rps / refresh_rps": div(.passkey_sign_in.rps; .refresh.rps),
    "sso_oidc_sign_in_rps / refresh_rps": div(.sso_oidc_sign_in.rps; .refresh.rps),
    "sso_saml_sign_in_rps / refresh_rps": div(.sso_saml_sign_in.rps; .refresh.rps),
    "introspect_rps / me_rps": div(.introspect.rps; .me.rps),
    "code_exchange_rps / refresh_rps": div(.code_exchange.rps; .refresh.rps),
    "client_credentials_rps / refresh_rps": div(.client_credentials.rps; .refresh.rps),
    "token_exchange_rps / refresh_rps": div(.token_exchange.rps; .refresh.rps),
    "wallet_presentation_rps": .wallet_presentation.rps,
    "anonymous_rps / anonymous_rps_nondurable": div(.anonymous.rps; .anonymous_nondurable.rps),
    "mixed_me_p99_ms (probe)": .mixed_probe.latency.p99_ms,
    "overload_503_p99_ms (probe)": .overload_probe.latency_503.p99_ms,
    "overload_503_answers (probe)": .overload_probe.refused_503,
    "overload_503_without_retry_after (probe)":
      (.overload_probe.refused_503 - .overload_probe.refused_503_with_retry_after)
  };

def targets:
  {
    "login_rps / argon2_verifications_per_s_all_cores": {op: ">=", target: 0.85},
    "login_p50_at_cores / argon2_single_verification_ms": {op: "<=", target: 1.2},
    "me_rps / healthz_rps": {op: ">=", target: 0.4},
    "refresh_rps / refresh_rps_nondurable": {op: ">=", target: 0.5},
    "passkey_sign_in_rps / refresh_rps": {op: ">=", target: 0.5},
    "sso_oidc_sign_in_rps / refresh_rps": {op: ">=", target: 0.3},
    "sso_saml_sign_in_rps / refresh_rps": {op: ">=", target: 0.3},
    "introspect_rps / me_rps": {op: ">=", target: 0.8},
    "code_exchange_rps / refresh_rps": {op: ">=", target: 0.5},
    "client_credentials_rps / refresh_rps": {op: ">=", target: 0.8},
    "token_exchange_rps / refresh_rps": {op: ">=", target: 0.5},
    "wallet_presentation_rps": {op: ">=", target: 500},
    "anonymous_rps / anonymous_rps_nondurable": {op: ">=", target: 0.6},
    "mixed_me_p99_ms (probe)": {op: "<", target: 20},
    "overload_503_p99_ms (probe)": {op: "<=", target: 10},
    "overload_503_answers (probe)": {op: ">=", target: 1},
    "overload_503_without_retry_after (probe)": {op: "<=", target: 0},
    "me_throughput_drop_1_to_10k_tenants_pct": {op: "<=", target: 20},
    "login_throughput_drop_1_to_10k_tenants_pct": {op: "<=", target: 20},
    "users_by_email_prefix_p99_ms_100k_users": {op: "<", target: 20}
  };

def meets($v; $t):
  if $v == null then false
  elif $t.op == ">=" then $v >= $t.target
  elif $t.op == "<=" then $v <= $t.target
  elif $t.op == "<" then $v < $t.target
  else false end;

def drop_pct($s; $kind):
  ($s.scenarios["\($kind)_tenants_1"].rps) as $one
  | ($s.scenarios["\($kind)_tenants_10k"].rps) as $many
  | if $one == null or $many == null or $one == 0 then null
    else (1 - $many / $one) * 100 end;

($scale[0] // {}) as $sc
| ($runs | map(ratio_values)) as $per_run
| (if $scale_on == 1 then
     {
       "me_throughput_drop_1_to_10k_tenants_pct": drop_pct($sc; "me"),
       "login_throughput_drop_1_to_10k_tenants_pct": drop_pct($sc; "login"),
       "users_by_email_prefix_p99_ms_100k_users": $sc.scenarios.users_prefix_100k.p99_ms
     }
   else {} end) as $scale_ratios
| ([targets | to_entries[]
    | .key as $k | .value as $t
    | if ($scale_ratios | has($k)) then
        {name: $k, value: ($scale_ratios[$k] | r3), per_run: [$scale_ratios[$k] | r3]}
      elif ($k | test("tenants|100k_users")) then empty
      else
        {name: $k, value: ($per_run | map(.[$k]) | median | r3), per_run: ($per_run | map(.[$k] | r3))}
      end
    | . + {target: "\($t.op) \($t.target)", pass: meets(.value; $t)}]) as $ratios
# Errors of every wrk phase, warm-ups included, but for the overload run (503s are its point).
| ([$runs[] | to_entries[] | select(.key != "overload")
    | select(.value | type == "object" and has("errors")) | .value.errors]
   + [$sc.scenarios // {} | .[] | .errors]
   | add // 0) as $errors_measured
| {
    machine: {
      nproc: $nproc, cpu_model: $cpu, kernel: $kernel, memory_kib: $mem, date: $date,
      git_commit: $commit, git_dirty: $dirty, rustc: $rustc, wrk: $wrk,
      loadavg_at_start: $load_start, loadavg_after_runs: $load_end
    },
    settings: {
      runs: $runs_n, quick: ($quick == 1), seconds_per_scenario: $dur, warmup_seconds: $warm,
      wrk_connections: $conns, wrk_threads: $threads,
      argon2id: {m_cost_kib: $m, t_cost: $t, p_cost: $p}
    },
    scenarios: (
      scenario_names | map(. as $n | {
        key: $n,
        value: {
          rps: ($runs | map(.[$n].rps) | median | r3),
          p50_ms: ($runs | map(.[$n].p50_ms) | median | r3),
          p99_ms: ($runs | map(.[$n].p99_ms) | median | r3),
          errors: ($runs | map(.[$n].errors) | add),
          server_cpu_cores: ($runs | map(.[$n].server_cpu_cores) | median | r3),
          server_cpu_ms_per_request: ($runs | map(.[$n].server_cpu_ms_per_request) | median | r3),
          per_run: ($runs | map(.[$n] | {rps, p50_ms, p99_ms, errors, server_cpu_cores, server_cpu_ms_per_request, loadavg_after}))
        }
      }) | from_entries
    ),
    probes: {
      mixed_me: {
        method: "probe me: GET /v1/auth/me at a fixed rate, one request at a time over one keep-alive connection, during the measured mixed load; its own user and token",
        rate_per_s: ($runs[0].mixed_probe.rate_per_s),
        p50_ms: ($runs | map(.mixed_probe.latency.p50_ms) | median | r3),
        p99_ms: ($runs | map(.mixed_probe.latency.p99_ms) | median | r3),
        sent: ($runs | map(.mixed_probe.sent) | add),
        failed: ($runs | map(.mixed_probe.failed) | add)
      },
      timing_202: {
        method: "probe timing: magic-link, email-otp and forgot-password, \($runs[0].timing_202.count_per_kind) calls each for addresses with an account and as many without, interleaved at random, one at a time over one keep-alive connection, on the idle durable server; gap = existing - unknown",
        routes: (["magic-link", "email-otp", "forgot-password"] | map(. as $r | {
          key: $r,
          value: {
            existing_p50_ms: ($runs | map(.timing_202.routes[$r].existing.p50_ms) | median | r3),
            unknown_p50_ms: ($runs | map(.timing_202.routes[$r].unknown.p50_ms) | median | r3),
            gap_p50_ms: ($runs | map(.timing_202.routes[$r].gap_p50_ms) | median | r3),
            gap_mean_ms: ($runs | map(.timing_202.routes[$r].gap_mean_ms) | median | r3),
            per_run_gap_p50_ms: ($runs | map(.timing_202.routes[$r].gap_p50_ms))
          }
        }) | from_entries)
      },
      overload: {
        connections: $overload_conns, queue: $overload_queue, method: "server with security.hashing_queue_max = \($overload_queue); wrk drives login with \($overload_conns) connections; probe login sends 50 logins one at a time, 100 ms apart, over one keep-alive connection",
        probe_sent: ($runs | map(.overload_probe.sent) | add),
        probe_statuses: ($runs | map(.overload_probe.statuses)),
        refused_503_median: ($runs | map(.overload_probe.refused_503) | median),
        refused_503_with_retry_after_median: ($runs | map(.overload_probe.refused_503_with_retry_after) | median),
        latency_503_p50_ms: ($runs | map(.overload_probe.latency_503.p50_ms) | median | r3),
        latency_503_p99_ms: ($runs | map(.overload_probe.latency_503.p99_ms) | median | r3),
        wrk_rps: ($runs | map(.overload.rps) | median | r3),
        wrk_statuses: ($runs | map(.overload.statuses))
      }
    },
    ceilings: {
      argon2_verifications_per_s_all_cores:
        ($runs | map(.ceilings.argon2id.all_cores.verifications_per_s) | median | r3),
      argon2_verifications_per_s_single_thread:
        ($runs | map(.ceilings.argon2id.single_thread.verifications_per_s) | median | r3),
      argon2_single_verification_ms_p50:
        ($runs | map(.ceilings.argon2id.single_thread.latency.p50_ms) | median | r3),
      argon2_single_verification_ms_mean:
        ($runs | map(.ceilings.argon2id.single_thread.latency.mean_ms) | median | r3),
      argon2_all_cores_verification_ms_p50:
        ($runs | map(.ceilings.argon2id.all_cores.latency.p50_ms) | median | r3),
      argon2_all_cores_cpu_share:
        ($runs | map(.ceilings.argon2id.all_cores.cpu_share) | median | r3),
      es256_sign_per_s_single_thread: ($runs | map(.ceilings.es256.sign_per_s_single_thread) | median | r3),
      es256_sign_per_s_all_cores: ($runs | map(.ceilings.es256.sign_per_s_all_cores) | median | r3),
      es256_verify_per_s_single_thread: ($runs | map(.ceilings.es256.verify_per_s_single_thread) | median | r3),
      es256_verify_per_s_all_cores: ($runs | map(.ceilings.es256.verify_per_s_all_cores) | median | r3),
      webauthn_assertion_verify_per_s_single_thread: ($runs | map(.ceilings.webauthn.assertion_verify_per_s_single_thread) | median | r3),
      sled_insert_flush_per_s: ($runs | map(.ceilings.sled.insert_flush_per_s) | median | r3),
      sled_insert_flush_fdatasync_per_s: ($runs | map(.ceilings.sled.insert_flush_fdatasync_per_s) | median | r3)
    },
    ratios: $ratios,
    info: {
      # CPU-time views of the first and third targets: the share of the server's CPU per login
      # that is the Argon2 verification itself, and the CPU cost of `me` against `healthz`.
      # Both hardly move with other load on the machine, unlike the rates.
      "argon2_cpu_ms_per_verification / server_cpu_ms_per_login": (
        $runs | map(div(.ceilings.argon2id.single_thread.cpu_ms_per_verification; .login.server_cpu_ms_per_request)) | median | r3),
      "server_cpu_ms_per_me / server_cpu_ms_per_healthz": (
        $runs | map(div(.me.server_cpu_ms_per_request; .healthz.server_cpu_ms_per_request)) | median | r3),
      "login_p50_at_cores / argon2_all_cores_verification_ms_p50": (
        $runs | map(div(.login_at_cores.p50_ms; .ceilings.argon2id.all_cores.latency.p50_ms)) | median | r3),
      "login_rps / argon2_verifications_per_s_single_thread": (
        $runs | map(div(.login.rps; .ceilings.argon2id.single_thread.verifications_per_s)) | median | r3),
      # The agent grants' server CPU per token against a refresh's (the rates' targets on a
      # machine shared with wrk).
      "server_cpu_ms_per_client_credentials / server_cpu_ms_per_refresh": (
        $runs | map(div(.client_credentials.server_cpu_ms_per_request; .refresh.server_cpu_ms_per_request)) | median | r3),
      "server_cpu_ms_per_token_exchange / server_cpu_ms_per_refresh": (
        $runs | map(div(.token_exchange.server_cpu_ms_per_request; .refresh.server_cpu_ms_per_request)) | median | r3),
      # Wallet presentations (an answer's JWE decrypted, then an SD-JWT VC with its issuer
      # chain, signature, key binding and cached status list, or an mdoc with its chain,
      # issuer and device signatures) against one ES256 (P-256) verification, the
      # presentations' main cost; and the figures per credential format.
      "wallet_presentation_rps / es256_verify_per_s_all_cores": (
        $runs | map(div(.wallet_presentation.rps; .ceilings.es256.verify_per_s_all_cores)) | median | r3),
      "wallet_presentation_rps / es256_verify_per_s_single_thread": (
        $runs | map(div(.wallet_presentation.rps; .ceilings.es256.verify_per_s_single_thread)) | median | r3),
      wallet_presentation_by_format: (["dc+sd-jwt", "mso_mdoc"] | map(. as $f | {
        key: $f,
        value: {
          rps: ($runs | map(.wallet_presentation.by_format[$f].rps) | median | r3),
          p50_ms: ($runs | map(.wallet_presentation.by_format[$f].p50_ms) | median | r3),
          p99_ms: ($runs | map(.wallet_presentation.by_format[$f].p99_ms) | median | r3)
        }
      }) | from_entries),
      wallet_presentation_flow_p50_ms: ($runs | map(.wallet_presentation.flow_latency.p50_ms) | median | r3),
      wallet_presentation_generator_cpu_cores: ($runs | map(.wallet_presentation.generator_cpu_cores) | median | r3),
      wallet_status_list_fetches_under_load: ($runs | map(.wallet_presentation.status_list.fetches_during_load)),
      # Single sign-on: the server's CPU per sign-in (four requests, the provider's answer
      # checked: an ES256 ID token, or an ECDSA-signed SAML assertion) against a refresh's,
      # and the cores the load generator and its identity provider took beside the server.
      "server_cpu_ms_per_sso_oidc_sign_in / server_cpu_ms_per_refresh": (
        $runs | map(div(.sso_oidc_sign_in.server_cpu_ms_per_request; .refresh.server_cpu_ms_per_request)) | median | r3),
      "server_cpu_ms_per_sso_saml_sign_in / server_cpu_ms_per_refresh": (
        $runs | map(div(.sso_saml_sign_in.server_cpu_ms_per_request; .refresh.server_cpu_ms_per_request)) | median | r3),
      sso_generator_cpu_cores: {
        oidc: ($runs | map(.sso_oidc_sign_in.generator_cpu_cores) | median | r3),
        saml: ($runs | map(.sso_saml_sign_in.generator_cpu_cores) | median | r3)
      },
      mixed_overall_p99_ms: ($runs | map(.mixed.p99_ms) | median | r3),
      mixed_requests_sent_by_kind: ($runs | map(.mixed.extra))
    },
    scale: (if $scale_on == 1 then ($sc + {
      summary: {
        rps: ($sc.scenarios // {} | with_entries(.value = .value.rps)),
        me_throughput_drop_1_to_10k_tenants_pct: ($scale_ratios.me_throughput_drop_1_to_10k_tenants_pct | r3),
        login_throughput_drop_1_to_10k_tenants_pct: ($scale_ratios.login_throughput_drop_1_to_10k_tenants_pct | r3)
      }
    }) else null end),
    store_stress: (if ($stress[0] | length) == 0 then null else $stress[0] end),
    server_rss_kb_after_scenarios: ($runs | map(.server_rss_kb_after_scenarios)),
    errors_total: $errors_measured,
    failures: ($failures | split("\n") | map(select(length > 0))),
    targets_met: ($ratios | all(.pass)),
    runs: $runs
  }
