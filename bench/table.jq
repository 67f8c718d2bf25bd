# The printed table of bench/results/latest.json (jq -r).

def pad($n): tostring | if length < $n then . + (" " * ($n - length)) else . end;
def lpad($n): tostring | if length < $n then (" " * ($n - length)) + . else . end;
def f1: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
def f2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
def f3: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;

"",
"Tessera benchmark: \(.machine.cpu_model), \(.machine.nproc) cores, kernel \(.machine.kernel)",
"\(.machine.date), commit \(.machine.git_commit[0:12])\(if .machine.git_dirty then " (+ uncommitted changes)" else "" end), load average at start \(.machine.loadavg_at_start)",
"\(.settings.runs) run(s), \(.settings.seconds_per_scenario) s per scenario after \(.settings.warmup_seconds) s warm-up, wrk -t\(.settings.wrk_threads) -c\(.settings.wrk_connections) (login_at_cores: -c\(.machine.nproc)); medians over the runs",
"",
("scenario" | pad(24)) + ("req/s" | lpad(10)) + ("p50 ms" | lpad(10)) + ("p99 ms" | lpad(10)) + ("errors" | lpad(8)) + ("server cores" | lpad(14)) + ("cpu ms/req" | lpad(12)),
(.scenarios | to_entries[] |
  (.key | pad(24)) + (.value.rps | f1 | lpad(10)) + (.value.p50_ms | f2 | lpad(10))
  + (.value.p99_ms | f2 | lpad(10)) + (.value.errors | tostring | lpad(8)) + (.value.server_cpu_cores | f2 | lpad(14))
  + (.value.server_cpu_ms_per_request | f3 | lpad(12))),
"",
"mixed load, me latency seen by the probe (\(.probes.mixed_me.rate_per_s)/s): p50 \(.probes.mixed_me.p50_ms | f2) ms, p99 \(.probes.mixed_me.p99_ms | f2) ms, \(.probes.mixed_me.failed) failed of \(.probes.mixed_me.sent)",
"202 answers, existing vs unknown address (\(.probes.timing_202.routes | to_entries[0].value | .per_run_gap_p50_ms | length) run(s)): " + (.probes.timing_202.routes | to_entries | map("\(.key) p50 \(.value.existing_p50_ms | f3) vs \(.value.unknown_p50_ms | f3) ms (gap \(.value.gap_p50_ms | f3), mean gap \(.value.gap_mean_ms | f3))") | join("; ")),
"overload (queue \(.probes.overload.queue), \(.probes.overload.connections) connections): probe got \(.probes.overload.refused_503_median) x 503 (\(.probes.overload.refused_503_with_retry_after_median) with Retry-After) of 50, 503 latency p50 \(.probes.overload.latency_503_p50_ms | f2) ms, p99 \(.probes.overload.latency_503_p99_ms | f2) ms; wrk statuses \(.probes.overload.wrk_statuses | tostring)",
"",
"ceilings: argon2id \(.ceilings.argon2_verifications_per_s_all_cores | f1)/s all cores (\(.ceilings.argon2_all_cores_verification_ms_p50 | f2) ms each, the threads got \(.ceilings.argon2_all_cores_cpu_share | f2) of the cores), \(.ceilings.argon2_verifications_per_s_single_thread | f1)/s one thread (\(.ceilings.argon2_single_verification_ms_p50 | f2) ms each); ES256 sign \(.ceilings.es256_sign_per_s_single_thread | f1)/s (1 thread), \(.ceilings.es256_sign_per_s_all_cores | f1)/s (all), verify \(.ceilings.es256_verify_per_s_single_thread | f1)/s (1 thread), \(.ceilings.es256_verify_per_s_all_cores | f1)/s (all); passkey assertion check (webauthn-rs-core) \(.ceilings.webauthn_assertion_verify_per_s_single_thread | f1)/s (1 thread); sled insert+flush \(.ceilings.sled_insert_flush_per_s | f1)/s, + fdatasync \(.ceilings.sled_insert_flush_fdatasync_per_s | f1)/s",
"",
("target" | pad(54)) + ("value" | lpad(10)) + ("  " + ("target" | pad(10))) + "result   per run",
(.ratios[] |
  (.name | pad(54)) + (.value | f3 | lpad(10)) + "  " + (.target | pad(10))
  + (if .pass then "pass" else "FAIL" end | pad(9)) + (.per_run | map(f3) | join(" "))),
"",
"for comparison: login_p50_at_cores / argon2 time of one verification while every core verifies = \(.info["login_p50_at_cores / argon2_all_cores_verification_ms_p50"] | f3); mixed overall p99 (wrk, all kinds) \(.info.mixed_overall_p99_ms | f2) ms",
"CPU time: argon2 verification / server CPU per login = \(.info["argon2_cpu_ms_per_verification / server_cpu_ms_per_login"] | f3); server CPU per me / per healthz = \(.info["server_cpu_ms_per_me / server_cpu_ms_per_healthz"] | f3)",
"wallet presentations: \(.scenarios.wallet_presentation.rps | f1)/s verified (SD-JWT VC \(.info.wallet_presentation_by_format["dc+sd-jwt"].rps | f1)/s, mdoc \(.info.wallet_presentation_by_format.mso_mdoc.rps | f1)/s; answer p50 \(.scenarios.wallet_presentation.p50_ms | f2) ms, whole flow p50 \(.info.wallet_presentation_flow_p50_ms | f2) ms; the load generator used \(.info.wallet_presentation_generator_cpu_cores | f2) cores) = \(.info["wallet_presentation_rps / es256_verify_per_s_all_cores"] | f3) of the ES256 verify ceiling (all cores), \(.info["wallet_presentation_rps / es256_verify_per_s_single_thread"] | f3) of one thread's; status list fetched \(.info.wallet_status_list_fetches_under_load | map(tostring) | join("/")) times under load",
"single sign-on (start, provider, callback or ACS, code exchange): OpenID Connect \(.scenarios.sso_oidc_sign_in.rps | f1)/s (p50 \(.scenarios.sso_oidc_sign_in.p50_ms | f2) ms), SAML \(.scenarios.sso_saml_sign_in.rps | f1)/s (p50 \(.scenarios.sso_saml_sign_in.p50_ms | f2) ms); server CPU per sign-in / per refresh = \(.info["server_cpu_ms_per_sso_oidc_sign_in / server_cpu_ms_per_refresh"] | f3) (OIDC), \(.info["server_cpu_ms_per_sso_saml_sign_in / server_cpu_ms_per_refresh"] | f3) (SAML); the load generator and its provider used \(.info.sso_generator_cpu_cores.oidc | f2) / \(.info.sso_generator_cpu_cores.saml | f2) cores",
"CPU time of the agent grants: server CPU per client_credentials token / per refresh = \(.info["server_cpu_ms_per_client_credentials / server_cpu_ms_per_refresh"] | f3); per token_exchange / per refresh = \(.info["server_cpu_ms_per_token_exchange / server_cpu_ms_per_refresh"] | f3)",
"",
(if .scale == null then "scale: not run (--no-scale)" else
  (.scale as $s |
   "scale (one run):",
   ($s.scenarios | to_entries[] |
     if (.value | has("seconds")) then
       "  " + (.key | pad(22)) + (.value.rps | f1 | lpad(10)) + " req/s  (one pass over the tokens: \(.value.requests) requests in \(.value.seconds) s)"
     else
       "  " + (.key | pad(22)) + (.value.rps | f1 | lpad(10)) + " req/s" + (.value.p50_ms | f2 | lpad(9)) + " ms p50"
       + (.value.p99_ms | f2 | lpad(9)) + " ms p99" + ("errors " + (.value.errors | tostring) | lpad(10))
     end),
   "  throughput drop 1 -> 10k tenants: me \($s.summary.me_throughput_drop_1_to_10k_tenants_pct | f1) %, login \($s.summary.login_throughput_drop_1_to_10k_tenants_pct | f1) %",
   "  \($s.tenants.created) tenants created in \($s.tenants.create_seconds) s (admin CLI, xargs -P 8); one user each imported in \($s.tenants.import_one_user_each_seconds) s",
   "  server RSS after the runs with 1 / 100 / 10k tenants: \($s.tenants.rss_kb_after["1"] / 1024 | f1) / \($s.tenants.rss_kb_after["100"] / 1024 | f1) / \($s.tenants.rss_kb_after["10k"] / 1024 | f1) MiB",
   "  idle tenants: right after the 10k run \($s.tenants.after_10k_run.tenant_actors_running) actors running, RSS \($s.tenants.after_10k_run.rss_kb / 1024 | f1) MiB; after \($s.tenants.after_idle.waited_s) s idle \($s.tenants.after_idle.tenant_actors_running) actors, RSS \($s.tenants.after_idle.rss_kb / 1024 | f1) MiB",
   "  restart with \($s.tenants.created) tenants: listening after \($s.tenants.restart.listening_s) s, /readyz 200 after \($s.tenants.restart.readyz_200_s) s, first me 200 after \($s.tenants.restart.first_me_200_s) s",
   "  \($s.users.count) users in one tenant: imported in \($s.users.import_seconds) s, \($s.users.bytes_per_user) bytes of data directory per user (\($s.users.bytes_per_user_whole_dir) counting the whole directory), RSS after \($s.users.rss_kb_after / 1024 | f1) MiB")
 end),
"",
(if .store_stress == null then "store stress: not run" else
  (["store stress (the store alone, 64 writers at their maximum rate):"]
   + (.store_stress | to_entries | map(.value as $v |
       "  \(.key | pad(8)) \($v.secs | f1) s: \($v.batches_per_s | f1) batches/s, at most \($v.outstanding_max) unflushed (bound \($v.max_unflushed_batches)), oldest call \($v.oldest_call_max_ms | f1) ms, ack p99 \($v.ack_latency.p99_ms | f2) ms, \($v.disk_bytes_max / 1048576 | f1) MiB on disk at most, stalled: \($v.stalled)"))
   | join("\n"))
 end),
"",
"errors: \(.errors_total)\(if (.failures | length) > 0 then " (" + (.failures | join("; ")) + ")" else "" end); targets met: \(.targets_met)"
