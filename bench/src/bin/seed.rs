//! `seed`: the HTTP side of a benchmark's set-up, run before any load (tenants and bulk users
//! come from the admin CLI; this makes what only the API can make).
//!
//! - `seed login`: signs in every `api_key<TAB>email` line of `--input` (with the password of
//!   `--password` / `BENCH_PASSWORD`) and writes `api_key<TAB>email<TAB>access<TAB>refresh`
//!   lines, in input order, to `--output`: the bearer tokens of `me` and `step_up`, the
//!   refresh tokens the refresh scenario starts from.
//! - `seed register`: registers every `api_key<TAB>email` line through `POST /v1/auth/register`
//!   and confirms the address with the token of the verification mail, read from the file
//!   outbox (`--outbox`, `<data_dir>/outbox`).
//! - `seed enable-guests`: for every `slug<TAB>owner_email` line, logs in to the dashboard as
//!   the owner and turns guest sign-ins on (`PATCH .../settings/anonymous`).
//! - `seed magic-link`: signs in every `api_key<TAB>email` line of `--input` with an e-mailed
//!   login link (`POST /v1/auth/magic-link`, the link read from the file outbox, then
//!   `.../magic-link/verify`) and writes the same lines as `seed login`. No password is
//!   checked, so thousands of users (one per tenant of the scale runs) get tokens in seconds
//!   instead of an Argon2 verification each.
//! - `seed touch`: `GET /v1/auth/me` once for every `api_key<TAB>email<TAB>access` line, with
//!   `--concurrency` requests in flight: one pass that starts every tenant's actor before a
//!   measurement (an idle tenant's actor is stopped after `server.tenant_idle_secs`). Prints
//!   the count, the time and the rate (the first-touch rate).
//! - `seed agent`: registers the bench's agent (client credentials, token exchange, CIBA;
//!   scopes `openid orders:read`) as the tenant's owner, the tenant already on a paid tier.
//! - `seed agent-consent`: has every user of a token file consent to the agent (a CIBA
//!   request, approved by the user), then checks it with one token exchange each.
//!
//! Any answer other than the expected one stops the program with the status and the body.

use std::{collections::HashMap, path::PathBuf, sync::Arc, time::Duration};

use base64::Engine;
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};
use tessera_bench::{call, client_ip, field, read_rows, Result};
use tokio::{sync::Semaphore, task::JoinSet};

#[derive(Parser)]
#[command(
    name = "seed",
    about = "Users, tokens and settings a benchmark needs, made over HTTP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Common {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    base: String,
    /// Tab-separated lines (see the command).
    #[arg(long)]
    input: PathBuf,
    /// The password of every user and owner.
    #[arg(long, env = "BENCH_PASSWORD")]
    password: String,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Signs users in; writes their tokens.
    Login {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        output: PathBuf,
    },
    /// Registers users through the API and confirms their addresses.
    Register {
        #[command(flatten)]
        common: Common,
        /// The server's mail outbox directory.
        #[arg(long)]
        outbox: PathBuf,
    },
    /// Turns guest sign-ins on for tenants, as their owners.
    EnableGuests {
        #[command(flatten)]
        common: Common,
    },
    /// `GET /v1/auth/me` once per token line.
    Touch {
        /// The server, `http://127.0.0.1:PORT`.
        #[arg(long)]
        base: String,
        /// `api_key<TAB>email<TAB>access_token[<TAB>...]` lines.
        #[arg(long)]
        input: PathBuf,
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
    },
    /// Registers a confidential OAuth client for a tenant, as its owner; writes
    /// `slug<TAB>client_id<TAB>basic` (`basic`: the HTTP Basic credentials, base64).
    OauthClient {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        output: PathBuf,
    },
    /// For every user of `--input` (token lines), an OAuth grant of the client in `--client`
    /// (authorize with the user's token, consent when asked, code exchange); writes
    /// `slug<TAB>basic<TAB>user_access<TAB>oauth_access<TAB>oauth_refresh<TAB>client_id`
    /// lines.
    OauthGrants {
        #[command(flatten)]
        common: Common,
        /// The `oauth-client` output.
        #[arg(long)]
        client: PathBuf,
        #[arg(long)]
        output: PathBuf,
    },
    /// Authorization codes for the code-exchange scenario: `--count` authorizes (consent on
    /// file) spread over the grants of `--input` (the `oauth-grants` output), each with the
    /// user's token; writes `slug<TAB>basic<TAB>code` lines. The server's code lifetime
    /// (`tokens.authorization_code_ttl_secs`) must outlast the scenario.
    OauthCodes {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        count: usize,
        #[arg(long)]
        output: PathBuf,
    },
    /// Registers an agent for a tenant, as its owner (the tenant must be on a paid tier:
    /// `tessera admin tenant set-tier SLUG pro`), with the client credentials, token exchange
    /// and CIBA grants and the scopes `openid orders:read`; writes `slug<TAB>client_id<TAB>basic`
    /// (`basic`: the HTTP Basic credentials, each part form-urlencoded, base64).
    Agent {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        output: PathBuf,
    },
    /// For every user of `--input` (`api_key<TAB>email<TAB>access[<TAB>...]` lines), the
    /// user's consent to the agent of `--agent` (the `agent` output) for `--scope`: the agent
    /// starts a CIBA request (`bc-authorize`, `login_hint` the user's address), the user finds
    /// it in `GET /v1/users/me/agent-requests` and approves it. The consent is remembered: one
    /// token exchange of the user's access token then checks it. The server's ceiling of CIBA
    /// requests per agent and minute (`agents.max_ciba_initiate_per_min`) must allow as many
    /// requests as there are users.
    AgentConsent {
        #[command(flatten)]
        common: Common,
        /// The `agent` output.
        #[arg(long)]
        agent: PathBuf,
        #[arg(long, default_value = "orders:read")]
        scope: String,
    },
    /// Signs users in with e-mailed login links; writes their tokens.
    MagicLink {
        #[command(flatten)]
        common: Common,
        /// The server's mail outbox directory.
        #[arg(long)]
        outbox: PathBuf,
        #[arg(long)]
        output: PathBuf,
        /// Links requested before their mails are awaited.
        #[arg(long, default_value_t = 500)]
        batch: usize,
    },
}

/// The bench client's redirect URI, and the PKCE pair of RFC 7636 appendix B that every bench
/// authorization uses (the wrk scripts send the same).
const OAUTH_REDIRECT: &str = "https://rp.bench.test/cb";
const OAUTH_VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const OAUTH_CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// The grants of the bench's agent, and RFC 8693's token type of an access token.
const CLIENT_CREDENTIALS: &str = "client_credentials";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const CIBA: &str = "urn:openid:params:grant-type:ciba";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The binding message of the set-up's CIBA requests: the user finds them by it.
const CONSENT_BINDING: &str = "tessera bench consent";

/// HTTP Basic credentials of an OAuth client (RFC 6749 2.3.1: each part form-urlencoded).
fn basic_credentials(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(id), enc(secret)))
}

/// Logs the owner in to the dashboard and re-authenticates the session (registering a client
/// or an agent asks for a recent one); answers the session token.
async fn owner_session(
    http: &reqwest::Client,
    base: &str,
    owner: &str,
    password: &str,
) -> Result<String> {
    let login = call(
        format!("dashboard login of {owner}"),
        200,
        http.post(format!("{base}/v1/auth/dashboard/login"))
            .json(&json!({ "email": owner, "password": password })),
    )
    .await?;
    let session = login["session_token"]
        .as_str()
        .ok_or_else(|| format!("dashboard login of {owner}: no session_token"))?
        .to_owned();
    call(
        "re-authentication".into(),
        200,
        http.post(format!("{base}/v1/auth/dashboard/reauth"))
            .bearer_auth(&session)
            .json(&json!({ "password": password })),
    )
    .await?;
    Ok(session)
}

fn oauth_authorize_url(iss: &str, client_id: &str) -> String {
    format!(
        "{iss}/oauth/authorize?client_id={client_id}&redirect_uri=https%3A%2F%2Frp.bench.test%2Fcb\
         &response_type=code&scope=openid%20email&state=bench&code_challenge={OAUTH_CHALLENGE}\
         &code_challenge_method=S256"
    )
}

fn main() -> std::process::ExitCode {
    tessera_bench::main_with("seed", run(Cli::parse()))
}

fn client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .user_agent("tessera-bench seed")
        .build()?)
}

/// Runs `job(i, row)` for every row with at most `concurrency` at once; answers the results in
/// row order, or the first error.
async fn for_each<T, F, Fut>(rows: Vec<Vec<String>>, concurrency: usize, job: F) -> Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize, Vec<String>) -> Fut,
    Fut: std::future::Future<Output = Result<T>> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut set = JoinSet::new();
    let n = rows.len();
    for (i, row) in rows.into_iter().enumerate() {
        let permit = permits.clone().acquire_owned().await?;
        let fut = job(i, row);
        set.spawn(async move {
            let out = fut.await;
            drop(permit);
            (i, out)
        });
    }
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        let (i, r) = joined?;
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(r?);
        }
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| "a job did not finish".into()))
        .collect()
}

async fn run(cli: Cli) -> Result<Value> {
    let http = client()?;
    match cli.command {
        Command::Login { common, output } => {
            let rows = read_rows(&common.input, 2)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let password = Arc::new(common.password);
            let lines = for_each(rows, common.concurrency, |_, row| {
                let (http, base, password) = (http.clone(), base.clone(), password.clone());
                async move {
                    let key = field(&row, 0)?.to_owned();
                    let email = field(&row, 1)?.to_owned();
                    let body = call(
                        format!("login of {email}"),
                        200,
                        http.post(format!("{base}/v1/auth/login"))
                            .header("x-api-key", &key)
                            .json(&json!({ "email": email, "password": *password })),
                    )
                    .await?;
                    let (Some(access), Some(refresh)) = (
                        body["access_token"].as_str(),
                        body["refresh_token"].as_str(),
                    ) else {
                        return Err(format!("login of {email}: no token pair in {body}").into());
                    };
                    Ok(format!("{key}\t{email}\t{access}\t{refresh}\n"))
                }
            })
            .await?;
            std::fs::write(&output, lines.concat())?;
            Ok(json!({ "signed_in": n }))
        }
        Command::Register { common, outbox } => {
            let rows = read_rows(&common.input, 2)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let password = Arc::new(common.password);
            let emails: Vec<(String, String)> = for_each(rows, common.concurrency, |i, row| {
                let (http, base, password) = (http.clone(), base.clone(), password.clone());
                async move {
                    let key = field(&row, 0)?.to_owned();
                    let email = field(&row, 1)?.to_owned();
                    call(
                        format!("registration of {email}"),
                        200,
                        http.post(format!("{base}/v1/auth/register"))
                            .header("x-api-key", &key)
                            .header("x-forwarded-for", client_ip(i))
                            .json(&json!({
                                "email": email, "password": *password, "consent": true,
                            })),
                    )
                    .await?;
                    Ok((key, email))
                }
            })
            .await?;
            let tokens = Outbox::new(outbox)
                .wait_for("verify-email?token=", &emails)
                .await?;
            let rows: Vec<Vec<String>> = emails.into_iter().map(|(k, e)| vec![k, e]).collect();
            let tokens = Arc::new(tokens);
            for_each(rows, common.concurrency, |_, row| {
                let (http, base, tokens) = (http.clone(), base.clone(), tokens.clone());
                async move {
                    let key = field(&row, 0)?;
                    let email = field(&row, 1)?;
                    let token = tokens
                        .get(email)
                        .ok_or_else(|| format!("no verification token for {email}"))?;
                    call(
                        format!("verification of {email}"),
                        200,
                        http.post(format!("{base}/v1/auth/verify-email"))
                            .header("x-api-key", key)
                            .json(&json!({ "token": token })),
                    )
                    .await?;
                    Ok(())
                }
            })
            .await?;
            Ok(json!({ "registered_and_verified": n }))
        }
        Command::EnableGuests { common } => {
            let rows = read_rows(&common.input, 2)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let password = Arc::new(common.password);
            for_each(rows, common.concurrency, |_, row| {
                let (http, base, password) = (http.clone(), base.clone(), password.clone());
                async move {
                    let slug = field(&row, 0)?.to_owned();
                    let owner = field(&row, 1)?.to_owned();
                    let login = call(
                        format!("dashboard login of {owner}"),
                        200,
                        http.post(format!("{base}/v1/auth/dashboard/login"))
                            .json(&json!({ "email": owner, "password": *password })),
                    )
                    .await?;
                    let session = login["session_token"]
                        .as_str()
                        .ok_or_else(|| format!("dashboard login of {owner}: no session_token"))?;
                    let settings = call(
                        format!("enabling guests of {slug}"),
                        200,
                        http.patch(format!(
                            "{base}/v1/auth/dashboard/tenants/{slug}/settings/anonymous"
                        ))
                        .bearer_auth(session)
                        // The first enabling while the default role is not `reader`.
                        .header("x-service-confirm", "privileged-default-role")
                        .json(&json!({ "anonymous_signins_enabled": true })),
                    )
                    .await?;
                    if settings["anonymous_signins_enabled"] != Value::Bool(true) {
                        return Err(format!("{slug}: guests still off: {settings}").into());
                    }
                    Ok(())
                }
            })
            .await?;
            Ok(json!({ "guests_enabled": n }))
        }
        Command::OauthClient { common, output } => {
            let rows = read_rows(&common.input, 2)?;
            let (slug, owner) = (field(&rows[0], 0)?, field(&rows[0], 1)?);
            let base = &common.base;
            let session = owner_session(&http, base, owner, &common.password).await?;
            let client = call(
                format!("an OAuth client of {slug}"),
                201,
                http.post(format!(
                    "{base}/v1/auth/dashboard/tenants/{slug}/oauth-clients"
                ))
                .bearer_auth(&session)
                .json(&json!({
                    "name": "Bench RP",
                    "client_type": "confidential",
                    "redirect_uris": [OAUTH_REDIRECT],
                    "allowed_scopes": ["openid", "email"],
                })),
            )
            .await?;
            let (Some(id), Some(secret)) = (
                client["client_id"].as_str(),
                client["client_secret"].as_str(),
            ) else {
                return Err(format!("no client id and secret in {client}").into());
            };
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
            std::fs::write(&output, format!("{slug}\t{id}\t{basic}\n"))?;
            Ok(json!({ "client_id": id }))
        }
        Command::Agent { common, output } => {
            let rows = read_rows(&common.input, 2)?;
            let (slug, owner) = (field(&rows[0], 0)?, field(&rows[0], 1)?);
            let base = &common.base;
            let session = owner_session(&http, base, owner, &common.password).await?;
            let agent = call(
                format!("an agent of {slug} (is the tenant on a paid tier?)"),
                201,
                http.post(format!("{base}/v1/auth/dashboard/tenants/{slug}/agents"))
                    .bearer_auth(&session)
                    .json(&json!({
                        "name": "Bench Agent",
                        "grant_types": [CLIENT_CREDENTIALS, TOKEN_EXCHANGE, CIBA],
                        "scopes": ["openid", "orders:read"],
                    })),
            )
            .await?;
            let (Some(id), Some(secret)) =
                (agent["client_id"].as_str(), agent["client_secret"].as_str())
            else {
                return Err(format!("no client id and secret in {agent}").into());
            };
            let basic = basic_credentials(id, secret);
            std::fs::write(&output, format!("{slug}\t{id}\t{basic}\n"))?;
            Ok(json!({ "client_id": id }))
        }
        Command::AgentConsent {
            common,
            agent,
            scope,
        } => {
            let a = read_rows(&agent, 3)?;
            let (slug, id, basic) = (
                field(&a[0], 0)?.to_owned(),
                field(&a[0], 1)?.to_owned(),
                field(&a[0], 2)?.to_owned(),
            );
            let rows = read_rows(&common.input, 3)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let ctx = Arc::new((slug, id, basic, scope));
            let started = std::time::Instant::now();
            for_each(rows, common.concurrency, |_, row| {
                let (http, base, ctx) = (http.clone(), base.clone(), ctx.clone());
                async move {
                    let (slug, id, basic, scope) = &*ctx;
                    let key = field(&row, 0)?.to_owned();
                    let email = field(&row, 1)?.to_owned();
                    let user = field(&row, 2)?.to_owned();
                    let oauth = format!("{base}/v1/tenants/{slug}/oauth");
                    call(
                        format!("the agent's CIBA request to {email}"),
                        200,
                        http.post(format!("{oauth}/bc-authorize"))
                            .header("authorization", format!("Basic {basic}"))
                            .form(&[
                                ("login_hint", email.as_str()),
                                ("scope", scope.as_str()),
                                ("binding_message", CONSENT_BINDING),
                            ]),
                    )
                    .await?;
                    // The user's pending requests from this agent (seconds at most).
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                    let pending = loop {
                        let list = call(
                            format!("agent requests of {email}"),
                            200,
                            http.get(format!("{base}/v1/users/me/agent-requests"))
                                .header("x-api-key", &key)
                                .bearer_auth(&user),
                        )
                        .await?;
                        let ids: Vec<String> = list["data"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|r| {
                                r["agent_client_id"] == id.as_str()
                                    && r["binding_message"] == CONSENT_BINDING
                            })
                            .filter_map(|r| r["id"].as_str().map(str::to_owned))
                            .collect();
                        if !ids.is_empty() {
                            break ids;
                        }
                        if tokio::time::Instant::now() > deadline {
                            return Err(format!(
                                "{email}: no request of the agent after 10 s: {list}"
                            )
                            .into());
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    };
                    for request in pending {
                        let decided = call(
                            format!("approval by {email}"),
                            200,
                            http.post(format!(
                                "{base}/v1/users/me/agent-requests/{request}/approve"
                            ))
                            .header("x-api-key", &key)
                            .bearer_auth(&user)
                            .json(&json!({})),
                        )
                        .await?;
                        if decided["status"] != "approved" {
                            return Err(format!("{email}: not approved: {decided}").into());
                        }
                    }
                    let exchanged = call(
                        format!("token exchange for {email}"),
                        200,
                        http.post(format!("{oauth}/token"))
                            .header("authorization", format!("Basic {basic}"))
                            .form(&[
                                ("grant_type", TOKEN_EXCHANGE),
                                ("subject_token", user.as_str()),
                                ("subject_token_type", ACCESS_TOKEN_TYPE),
                                ("scope", scope.as_str()),
                            ]),
                    )
                    .await?;
                    if exchanged["access_token"].as_str().is_none() {
                        return Err(format!("{email}: no access_token in {exchanged}").into());
                    }
                    Ok(())
                }
            })
            .await?;
            Ok(json!({
                "consented": n,
                "seconds": tessera_bench::round3(started.elapsed().as_secs_f64()),
            }))
        }
        Command::OauthGrants {
            common,
            client,
            output,
        } => {
            let c = read_rows(&client, 3)?;
            let (slug, id, basic) = (
                field(&c[0], 0)?.to_owned(),
                field(&c[0], 1)?.to_owned(),
                field(&c[0], 2)?.to_owned(),
            );
            let rows = read_rows(&common.input, 3)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let ctx = Arc::new((slug, id, basic));
            let lines = for_each(rows, common.concurrency, |_, row| {
                let (http, base, ctx) = (http.clone(), base.clone(), ctx.clone());
                async move {
                    let (slug, id, basic) = &*ctx;
                    let user = field(&row, 2)?.to_owned();
                    let iss = format!("{base}/v1/tenants/{slug}");
                    let asked = call(
                        "authorize".into(),
                        200,
                        http.get(oauth_authorize_url(&iss, id))
                            .header("accept", "application/json")
                            .bearer_auth(&user),
                    )
                    .await?;
                    let to = if asked["consent_required"] == Value::Bool(true) {
                        let mut body = json!({"decision": "approve"});
                        for k in [
                            "client_id",
                            "redirect_uri",
                            "response_type",
                            "scope",
                            "state",
                            "code_challenge",
                            "code_challenge_method",
                            "resource_commitment",
                        ] {
                            body[k] = asked[k].clone();
                        }
                        call(
                            "consent".into(),
                            200,
                            http.post(format!("{iss}/oauth/consent"))
                                .bearer_auth(&user)
                                .json(&body),
                        )
                        .await?["redirect_to"]
                            .clone()
                    } else {
                        asked["redirect_to"].clone()
                    };
                    let code = to
                        .as_str()
                        .and_then(|t| t.split("code=").nth(1))
                        .and_then(|t| t.split('&').next())
                        .ok_or_else(|| format!("no code in {to}"))?
                        .to_owned();
                    let tokens = call(
                        "code exchange".into(),
                        200,
                        http.post(format!("{iss}/oauth/token"))
                            .header("authorization", format!("Basic {basic}"))
                            .form(&[
                                ("grant_type", "authorization_code"),
                                ("code", &code),
                                ("redirect_uri", OAUTH_REDIRECT),
                                ("code_verifier", OAUTH_VERIFIER),
                            ]),
                    )
                    .await?;
                    let (Some(access), Some(refresh)) = (
                        tokens["access_token"].as_str(),
                        tokens["refresh_token"].as_str(),
                    ) else {
                        return Err(format!("no tokens in {tokens}").into());
                    };
                    Ok(format!(
                        "{slug}\t{basic}\t{user}\t{access}\t{refresh}\t{id}\n"
                    ))
                }
            })
            .await?;
            std::fs::write(&output, lines.concat())?;
            Ok(json!({ "grants": n }))
        }
        Command::OauthCodes {
            common,
            count,
            output,
        } => {
            let grants = read_rows(&common.input, 6)?;
            if grants.is_empty() {
                return Err("no grants".into());
            }
            let rows: Vec<Vec<String>> = (0..count)
                .map(|i| grants[i % grants.len()].clone())
                .collect();
            let base = Arc::new(common.base);
            let started = std::time::Instant::now();
            let lines = for_each(rows, common.concurrency, |_, row| {
                let (http, base) = (http.clone(), base.clone());
                async move {
                    let slug = field(&row, 0)?.to_owned();
                    let basic = field(&row, 1)?.to_owned();
                    let user = field(&row, 2)?.to_owned();
                    let id = field(&row, 5)?.to_owned();
                    let iss = format!("{base}/v1/tenants/{slug}");
                    let asked = call(
                        "authorize".into(),
                        200,
                        http.get(oauth_authorize_url(&iss, &id))
                            .header("accept", "application/json")
                            .bearer_auth(&user),
                    )
                    .await?;
                    let to = asked["redirect_to"].as_str().unwrap_or_default();
                    let code = to
                        .split("code=")
                        .nth(1)
                        .and_then(|t| t.split('&').next())
                        .filter(|c| !c.is_empty())
                        .ok_or_else(|| format!("no code (consent on file?) in {asked}"))?;
                    Ok(format!("{slug}\t{basic}\t{code}\n"))
                }
            })
            .await?;
            std::fs::write(&output, lines.concat())?;
            let secs = started.elapsed().as_secs_f64();
            Ok(json!({
                "codes": count,
                "seconds": tessera_bench::round3(secs),
            }))
        }
        Command::Touch {
            base,
            input,
            concurrency,
        } => {
            let rows = read_rows(&input, 3)?;
            let n = rows.len();
            let base = Arc::new(base);
            let started = std::time::Instant::now();
            for_each(rows, concurrency, |_, row| {
                let (http, base) = (http.clone(), base.clone());
                async move {
                    let key = field(&row, 0)?.to_owned();
                    let email = field(&row, 1)?.to_owned();
                    let access = field(&row, 2)?.to_owned();
                    call(
                        format!("me of {email}"),
                        200,
                        http.get(format!("{base}/v1/auth/me"))
                            .header("x-api-key", &key)
                            .bearer_auth(&access),
                    )
                    .await?;
                    Ok(())
                }
            })
            .await?;
            let secs = started.elapsed().as_secs_f64();
            Ok(json!({
                "requests": n,
                "seconds": tessera_bench::round3(secs),
                "rps": tessera_bench::round3(n as f64 / secs),
                "errors": 0,
                "connections": concurrency,
            }))
        }
        Command::MagicLink {
            common,
            outbox,
            output,
            batch,
        } => {
            let rows = read_rows(&common.input, 2)?;
            let n = rows.len();
            let base = Arc::new(common.base);
            let mut outbox_state = Outbox::new(outbox);
            let mut lines = Vec::with_capacity(n);
            for chunk in rows.chunks(batch.max(1)) {
                let requested: Vec<(String, String)> =
                    for_each(chunk.to_vec(), common.concurrency, |_, row| {
                        let (http, base) = (http.clone(), base.clone());
                        async move {
                            let key = field(&row, 0)?.to_owned();
                            let email = field(&row, 1)?.to_owned();
                            call(
                                format!("login link for {email}"),
                                202,
                                http.post(format!("{base}/v1/auth/magic-link"))
                                    .header("x-api-key", &key)
                                    .json(&json!({ "email": email })),
                            )
                            .await?;
                            Ok((key, email))
                        }
                    })
                    .await?;
                let tokens = Arc::new(
                    outbox_state
                        .wait_for("/magic-link?token=", &requested)
                        .await?,
                );
                let rows: Vec<Vec<String>> =
                    requested.into_iter().map(|(k, e)| vec![k, e]).collect();
                let signed = for_each(rows, common.concurrency, |_, row| {
                    let (http, base, tokens) = (http.clone(), base.clone(), tokens.clone());
                    async move {
                        let key = field(&row, 0)?.to_owned();
                        let email = field(&row, 1)?.to_owned();
                        let token = tokens
                            .get(&email)
                            .ok_or_else(|| format!("no login link for {email}"))?;
                        let body = call(
                            format!("login link of {email}"),
                            200,
                            http.post(format!("{base}/v1/auth/magic-link/verify"))
                                .header("x-api-key", &key)
                                .json(&json!({ "token": token })),
                        )
                        .await?;
                        let (Some(access), Some(refresh)) = (
                            body["access_token"].as_str(),
                            body["refresh_token"].as_str(),
                        ) else {
                            return Err(
                                format!("login link of {email}: no token pair in {body}").into()
                            );
                        };
                        Ok(format!("{key}\t{email}\t{access}\t{refresh}\n"))
                    }
                })
                .await?;
                lines.extend(signed);
            }
            std::fs::write(&output, lines.concat())?;
            Ok(json!({ "signed_in": n }))
        }
    }
}

/// The file outbox, read incrementally: each `.eml` is parsed once.
struct Outbox {
    dir: PathBuf,
    seen: std::collections::HashSet<std::ffi::OsString>,
    /// (marker, recipient) -> token, from every mail read so far.
    found: HashMap<(String, String), String>,
}

impl Outbox {
    fn new(dir: PathBuf) -> Self {
        Outbox {
            dir,
            seen: Default::default(),
            found: HashMap::new(),
        }
    }

    /// Reads the mails not read yet, noting the token after each of `markers`.
    fn scan(&mut self, markers: &[&str]) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if self.seen.contains(&name) || !name.to_string_lossy().ends_with(".eml") {
                continue;
            }
            // A mail without the marker (or still being written) is read again next time.
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            for marker in markers {
                if let Some((to, token)) = link_token(&text, marker) {
                    self.found.insert(((*marker).to_owned(), to), token);
                    self.seen.insert(name.clone());
                }
            }
        }
    }

    /// Polls until every address in `emails` has a mail with `marker`; answers address -> token.
    async fn wait_for(
        &mut self,
        marker: &str,
        emails: &[(String, String)],
    ) -> Result<HashMap<String, String>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            self.scan(&[marker]);
            let missing = emails
                .iter()
                .filter(|(_, e)| {
                    !self
                        .found
                        .contains_key(&(marker.to_owned(), e.to_ascii_lowercase()))
                })
                .count();
            if missing == 0 {
                return Ok(emails
                    .iter()
                    .filter_map(|(_, e)| {
                        self.found
                            .get(&(marker.to_owned(), e.to_ascii_lowercase()))
                            .map(|t| (e.clone(), t.clone()))
                    })
                    .collect());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "{missing} mails with {marker} missing from {} after 120 s",
                    self.dir.display()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The recipient of a mail and the token right after `marker` in it (links are intact: the
/// text part of every mail is 7bit or 8bit). A marker preceded by `/step-up` is not a match.
fn link_token(eml: &str, marker: &str) -> Option<(String, String)> {
    let to = eml
        .lines()
        .take_while(|l| !l.is_empty() && *l != "\r")
        .find_map(|l| l.strip_prefix("To:"))?
        .trim();
    let to = match (to.find('<'), to.rfind('>')) {
        (Some(a), Some(b)) if a < b => to.get(a + 1..b)?,
        _ => to,
    };
    let start = eml
        .match_indices(marker)
        .map(|(i, _)| i)
        .find(|&i| !eml.get(..i).is_some_and(|head| head.ends_with("/step-up")))?
        + marker.len();
    let rest = eml.get(start..)?;
    let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))?;
    // No character after the token: the file may still be being written.
    let token = rest.get(..len)?;
    (!token.is_empty()).then(|| (to.trim().to_ascii_lowercase(), token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_recipient_and_the_token() {
        let eml = "From: x\r\nTo: ada@example.com\r\nSubject: s\r\n\r\nopen http://h/verify-email?token=AbC-_9 now\r\n";
        assert_eq!(
            link_token(eml, "verify-email?token="),
            Some(("ada@example.com".into(), "AbC-_9".into()))
        );
        assert_eq!(
            link_token("To: a@b.c\r\n\r\nno link", "verify-email?token="),
            None
        );
        assert_eq!(
            link_token(
                "To: a@b.c\r\n\r\nhttp://h/verify-email?token=Trunc",
                "verify-email?token="
            ),
            None
        );
        let step_up = "To: <a@b.c>\r\n\r\nhttp://h/step-up/magic-link?token=X1\r\n";
        assert_eq!(link_token(step_up, "/magic-link?token="), None);
        let login = "To: A <a@b.c>\r\n\r\nhttp://h/magic-link?token=Y2\r\n";
        assert_eq!(
            link_token(login, "/magic-link?token="),
            Some(("a@b.c".into(), "Y2".into()))
        );
    }
}
