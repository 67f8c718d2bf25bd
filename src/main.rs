//! The `tessera` command: `serve`, `check-config` and `admin ...`.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, Subcommand};
use tessera::{
    admin::{client, protocol::AdminRequest},
    config::{Config, Overrides},
};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tessera",
    version,
    about = "Multi-tenant authentication server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the server.
    Serve {
        /// The config file; default `$TESSERA_CONFIG`, then `./config.toml`, then
        /// `/etc/tessera/config.toml`.
        #[arg(long, env = "TESSERA_CONFIG")]
        config: Option<PathBuf>,
        /// Listen address; wins over the config.
        #[arg(long)]
        listen: Option<String>,
        /// Data directory; wins over the config.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Validates a config file (and the environment) and prints the result.
    CheckConfig {
        /// The config file; found as `serve` finds it.
        #[arg(long, env = "TESSERA_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Restores a backup into an empty data directory (the server stopped).
    Restore {
        /// The backup file (`tessera admin backup --out`).
        #[arg(long)]
        from: PathBuf,
        /// The new data directory: empty, or holding only the master key file.
        #[arg(long)]
        data_dir: PathBuf,
        /// The master key file the data was written with; default `<data-dir>/master.key`.
        /// Refused when group or others may read or write it (`chmod 600` it).
        #[arg(long)]
        master_key_file: Option<PathBuf>,
    },
    /// Reports a data directory's format, tenants and users, and whether a migration is
    /// pending, without changing anything (the server stopped).
    CheckData {
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Operator commands over the local admin socket.
    Admin {
        /// The admin socket; default `<data_dir>/admin.sock` from the config.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// The config file used to find the socket when --socket is not given; found as
        /// `serve` finds it.
        #[arg(long, env = "TESSERA_CONFIG")]
        config: Option<PathBuf>,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// API keys.
    Apikey {
        #[command(subcommand)]
        command: ApikeyCommand,
    },
    /// The guest purge.
    Purge {
        #[command(subcommand)]
        command: PurgeCommand,
    },
    /// Token-signing keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Resources of the scope catalog.
    Resource {
        #[command(subcommand)]
        command: ResourceCommand,
    },
    /// The scope catalog's entries.
    Scope {
        #[command(subcommand)]
        command: ScopeCommand,
    },
    /// A tenant's OAuth clients.
    OauthClient {
        #[command(subcommand)]
        command: OauthClientCommand,
    },
    /// Fault drills (need `[testing] fault_injection = true`).
    Fault {
        #[command(subcommand)]
        command: FaultCommand,
    },
    /// End users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Dashboard accounts.
    Dashboard {
        #[command(subcommand)]
        command: DashboardCommand,
    },
    /// The local outboxes (`mail.transport = "file"`, `sms.transport = "outbox"`).
    Outbox {
        #[command(subcommand)]
        command: OutboxCommand,
    },
    /// A tenant's wallet verifier identity (OpenID4VP request signing).
    Eudi {
        #[command(subcommand)]
        command: EudiCommand,
    },
    /// A consistent snapshot of the whole database while the server serves (`--out FILE`),
    /// or the check of one (`--verify FILE`, offline).
    Backup {
        /// Where the server writes the backup (a new file).
        #[arg(long, conflicts_with = "verify", required_unless_present = "verify")]
        out: Option<PathBuf>,
        /// Checks a backup file without restoring it.
        #[arg(long)]
        verify: Option<PathBuf>,
    },
    /// The master key that seals every secret at rest.
    MasterKey {
        #[command(subcommand)]
        command: MasterKeyCommand,
    },
}

#[derive(Subcommand)]
enum MasterKeyCommand {
    /// Re-seals every sealed value under the key in FILE (base64 of 32 random bytes, e.g.
    /// `(umask 077; head -c 32 /dev/urandom | base64 > FILE)`; a FILE group or others may read
    /// or write is refused) while the server serves, then makes it the key file. Crash-safe:
    /// the data is always readable with exactly one of the two keys, and the server finishes
    /// an interrupted rotation at start.
    Rotate {
        #[arg(long)]
        new_key_file: PathBuf,
    },
}

#[derive(Subcommand)]
enum EudiCommand {
    /// Sets the key and certificate chain that sign the tenant's wallet requests. The chain
    /// (PEM, leaf first, without the root) must end at a CA wallets trust; the leaf must not
    /// be self-signed and must hold the key's public half.
    SetVerifierCert {
        slug: String,
        /// PEM private key (PKCS#8, or SEC1 `EC PRIVATE KEY`), P-256 or Ed25519.
        #[arg(long)]
        key_file: PathBuf,
        /// PEM certificates, leaf first.
        #[arg(long)]
        chain_file: PathBuf,
    },
    /// Makes and sets a development chain (a root and a leaf for this server's host) so the
    /// flow can be tried with a test wallet. No real wallet trusts it. Prints the root.
    DevCert {
        slug: String,
        /// How long the leaf is valid.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
    /// The verifier identity in use: client id, expiry, whether it is a development one.
    Show { slug: String },
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Creates a tenant; with --owner-email, the owner's password is read from stdin.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: Option<String>,
        #[arg(long)]
        owner_email: Option<String>,
    },
    /// Lists every tenant.
    List,
    /// Shows one tenant.
    Show { slug: String },
    /// Sets a tenant's tier: free, pro or enterprise.
    SetTier { slug: String, tier: String },
    /// Overrides a tenant's limits.
    SetLimits {
        slug: String,
        /// Monthly active users; past it, no new guests this month.
        #[arg(long)]
        mau_cap: u64,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Imports users that come with an Argon2id password hash, from JSON Lines on stdin (or
    /// --file): {"email": "...", "password_hash": "$argon2id$v=19$...", "email_verified": true}.
    /// Addresses that already have an account are skipped, so an import can be run again.
    Import {
        #[arg(long)]
        tenant: String,
        /// Read this file instead of stdin.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Lists a tenant's users, newest first (one page; `--cursor` for the next).
    List {
        #[arg(long)]
        tenant: String,
        /// Only addresses starting with this (any case).
        #[arg(long)]
        email: Option<String>,
        /// active, blocked, held, anonymous or unverified.
        #[arg(long)]
        status: Option<String>,
        /// 1-200 (default 50).
        #[arg(long)]
        limit: Option<usize>,
        /// The `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Shows one user: profile, factors, sessions, activity.
    Show {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    /// Blocks a user: every session ends and signing in is refused until unblocked.
    Block {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    Unblock {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    /// Erases a user and everything keyed to them.
    Delete {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    /// Lists every stored record of the tenant whose key or value contains one of the
    /// needles (a user id, also matched as its 16 raw bytes; an address; a number): the check
    /// that an erasure left nothing behind. Audit events keep the ids of erased users.
    Traces {
        #[arg(long)]
        tenant: String,
        #[arg(required = true)]
        needles: Vec<String>,
    },
}

#[derive(Subcommand)]
enum ApikeyCommand {
    /// Replaces a tenant's API key; the old key stops working at once. Prints the new key once.
    Rotate { slug: String },
}

#[derive(Subcommand)]
enum PurgeCommand {
    /// Deletes guests inactive beyond their tenant's retention now (at most 1000 a tenant).
    Run {
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<String>,
        /// Evaluate ages as of this RFC 3339 instant instead of now.
        #[arg(long)]
        as_of: Option<String>,
        /// Count, delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Signs with a new key from now on; the previous key stays in the JWKS until the last
    /// token it signed has expired.
    Rotate { slug: String },
}

#[derive(Subcommand)]
enum ResourceCommand {
    /// Registers a resource (an API the tenant's tokens may be minted for, RFC 8707) owned
    /// by a tenant; prints it with its id.
    Register {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        uri: String,
    },
}

#[derive(Subcommand)]
enum ScopeCommand {
    /// The catalog's entries (with --pending, only those awaiting review).
    List {
        #[arg(long)]
        pending: bool,
    },
    /// Approves an entry: it becomes grantable.
    Approve {
        resource_id: String,
        scope_id: String,
    },
}

#[derive(Subcommand)]
enum OauthClientCommand {
    /// Marks a third-party client as checked by the operator: its consent screen says
    /// `attested` instead of `unverified`.
    Attest { slug: String, client_id: String },
}

#[derive(Subcommand)]
enum FaultCommand {
    /// Crashes a tenant's actor to check that it is restarted.
    PanicTenant { slug: String },
    /// Holds a tenant's mailbox for a while to check that callers get 503, not a hang.
    StallTenant {
        slug: String,
        /// How long, in milliseconds (at most 60000).
        #[arg(long, default_value_t = 2000)]
        ms: u64,
    },
    /// Makes the next write to the store hang for good, as a sled deadlock would, to check that
    /// the storage watchdog stops the process (exit code 75) for its supervisor to restart.
    HangStorage,
}

#[derive(Subcommand)]
enum DashboardCommand {
    /// Takes the second factor off the account with this address, for a holder who lost
    /// their authenticator and recovery codes (check who asks first): the next login asks
    /// for the password only.
    ResetMfa { email: String },
}

#[derive(Subcommand)]
enum OutboxCommand {
    /// Lists the messages written to the outbox, newest first (empty with SMTP or the HTTP
    /// SMS provider).
    List {
        /// Only this tenant's messages (by slug).
        #[arg(long)]
        tenant: Option<String>,
        /// `mail` (the default) or `sms`.
        #[arg(long, value_enum, default_value = "mail")]
        kind: OutboxKind,
    },
    /// Prints one mail message: its headers, its text and the links in it (`file` from the
    /// listing, or its UUID).
    Show { id: String },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OutboxKind {
    Mail,
    Sms,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            config,
            listen,
            data_dir,
        } => match find_config(config) {
            Ok(config) => serve(&config, Overrides { listen, data_dir }),
            Err(e) => usage_error(e),
        },
        Command::CheckConfig { config } => match find_config(config) {
            Err(e) => usage_error(e),
            Ok(config) => check_config(&config),
        },
        Command::Restore {
            from,
            data_dir,
            master_key_file,
        } => print_local(tessera::ops::restore(
            &from,
            &data_dir,
            master_key_file.as_deref(),
        )),
        Command::CheckData { data_dir } => print_local(tessera::ops::check_data(&data_dir)),
        Command::Admin {
            command: AdminCommand::Backup {
                verify: Some(file), ..
            },
            ..
        } => print_local(tessera::ops::verify_backup(&file)),
        Command::Admin {
            socket,
            config,
            command,
        } => {
            let config = match (&socket, find_config(config)) {
                (_, Ok(c)) => c,
                // The socket alone is enough for every command but those that read a setting.
                (Some(_), Err(_)) => PathBuf::from(DEFAULT_CONFIG),
                (None, Err(e)) => {
                    return usage_error(format!(
                        "cannot find the admin socket: give --socket PATH (the `admin.sock` in \
                         the server's data directory), or the server's config file with \
                         --config or TESSERA_CONFIG; {e}"
                    ));
                }
            };
            let socket = match socket {
                Some(socket) => socket,
                None => match Config::load(&config, &Overrides::default()) {
                    Ok(c) => c.admin_socket_path(),
                    Err(e) => {
                        return usage_error(format!(
                            "cannot find the admin socket from {}: {e}; give --socket PATH",
                            config.display()
                        ));
                    }
                },
            };
            if let AdminCommand::User {
                command: UserCommand::Import { tenant, file },
            } = &command
            {
                return import_users(&socket, tenant, file.as_deref());
            }
            let req = match admin_request(command, &config) {
                Ok(r) => r,
                Err(e) => return usage_error(e),
            };
            match client::run(&socket, &req) {
                0 => ExitCode::SUCCESS,
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn serve(config_path: &Path, overrides: Overrides) -> ExitCode {
    let config = match Config::load(config_path, &overrides) {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    tessera::telemetry::init(&config.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tessera::run(config, shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutdown signal received");
}

/// Prints a local command's document, or its error (exit 1).
fn print_local(out: Result<serde_json::Value, String>) -> ExitCode {
    match out.and_then(|v| serde_json::to_string_pretty(&v).map_err(|e| e.to_string())) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The config file in the current directory, the default of `--config`.
const DEFAULT_CONFIG: &str = "config.toml";
/// Where a system-wide installation keeps its config file (the systemd unit's path).
const SYSTEM_CONFIG: &str = "/etc/tessera/config.toml";

/// The config file: `--config` (or `TESSERA_CONFIG`, which clap reads into it) as given,
/// else `./config.toml`, else `/etc/tessera/config.toml`, whichever exists first.
fn find_config(given: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = given {
        return Ok(path);
    }
    for candidate in [DEFAULT_CONFIG, SYSTEM_CONFIG] {
        let path = PathBuf::from(candidate);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(format!(
        "no config file: --config and TESSERA_CONFIG are not set, and neither ./{DEFAULT_CONFIG} \
         nor {SYSTEM_CONFIG} exists (the repository's config.toml is a complete example)"
    ))
}

/// Says what is wrong with the command line, the config or the environment; exit status 2.
fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

fn check_config(config: &Path) -> ExitCode {
    match Config::load(config, &Overrides::default()) {
        Ok(c) => {
            println!(
                "{} is valid; data directory {}",
                config.display(),
                c.storage.data_dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => usage_error(e),
    }
}

/// `config`: the file `--config` names, read only where a command needs a setting.
fn admin_request(command: AdminCommand, config: &Path) -> Result<AdminRequest, String> {
    Ok(match command {
        AdminCommand::Tenant { command } => match command {
            TenantCommand::Create {
                name,
                slug,
                owner_email,
            } => {
                let owner_password = match &owner_email {
                    Some(_) => Some(read_password()?),
                    None => None,
                };
                AdminRequest::TenantCreate {
                    name,
                    slug,
                    owner_email,
                    owner_password,
                }
            }
            TenantCommand::List => AdminRequest::TenantList,
            TenantCommand::Show { slug } => AdminRequest::TenantShow { slug },
            TenantCommand::SetTier { slug, tier } => AdminRequest::TenantSetTier { slug, tier },
            TenantCommand::SetLimits { slug, mau_cap } => {
                AdminRequest::TenantSetLimits { slug, mau_cap }
            }
        },
        AdminCommand::Apikey {
            command: ApikeyCommand::Rotate { slug },
        } => AdminRequest::ApikeyRotate { slug },
        AdminCommand::Purge {
            command:
                PurgeCommand::Run {
                    tenant,
                    as_of,
                    dry_run,
                },
        } => AdminRequest::PurgeRun {
            tenant,
            as_of,
            dry_run,
        },
        AdminCommand::Keys {
            command: KeysCommand::Rotate { slug },
        } => AdminRequest::KeysRotate { slug },
        AdminCommand::Resource {
            command: ResourceCommand::Register { tenant, name, uri },
        } => AdminRequest::ResourceRegister { tenant, name, uri },
        AdminCommand::Scope {
            command: ScopeCommand::List { pending },
        } => AdminRequest::ScopeList { pending },
        AdminCommand::Scope {
            command:
                ScopeCommand::Approve {
                    resource_id,
                    scope_id,
                },
        } => AdminRequest::ScopeApprove {
            resource_id,
            scope_id,
        },
        AdminCommand::OauthClient {
            command: OauthClientCommand::Attest { slug, client_id },
        } => AdminRequest::OauthClientAttest { slug, client_id },
        AdminCommand::Fault {
            command: FaultCommand::PanicTenant { slug },
        } => AdminRequest::FaultPanicTenant { slug },
        AdminCommand::Fault {
            command: FaultCommand::StallTenant { slug, ms },
        } => AdminRequest::FaultStallTenant { slug, millis: ms },
        AdminCommand::Fault {
            command: FaultCommand::HangStorage,
        } => AdminRequest::FaultHangStorage,
        AdminCommand::User { command } => match command {
            UserCommand::Import { .. } => {
                return Err("user import is handled before a single request is built".into())
            }
            UserCommand::List {
                tenant,
                email,
                status,
                limit,
                cursor,
            } => AdminRequest::UserList {
                tenant,
                email,
                status,
                limit,
                cursor,
            },
            UserCommand::Show { tenant, id } => AdminRequest::UserShow { tenant, id },
            UserCommand::Block { tenant, id } => AdminRequest::UserBlock {
                tenant,
                id,
                block: true,
            },
            UserCommand::Unblock { tenant, id } => AdminRequest::UserBlock {
                tenant,
                id,
                block: false,
            },
            UserCommand::Delete { tenant, id } => AdminRequest::UserDelete { tenant, id },
            UserCommand::Traces { tenant, needles } => AdminRequest::UserTraces { tenant, needles },
        },
        AdminCommand::Eudi { command } => match command {
            EudiCommand::SetVerifierCert {
                slug,
                key_file,
                chain_file,
            } => AdminRequest::EudiSetVerifier {
                slug,
                key_pem: read_pem(&key_file)?,
                chain_pem: read_pem(&chain_file)?,
            },
            EudiCommand::DevCert { slug, days } => AdminRequest::EudiDevCert { slug, days },
            EudiCommand::Show { slug } => AdminRequest::EudiShow { slug },
        },
        AdminCommand::Backup { out, .. } => {
            let out = out.ok_or("--out FILE or --verify FILE")?;
            // The server writes the file: name it absolutely.
            let out = std::path::absolute(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            AdminRequest::Backup {
                out: out.display().to_string(),
            }
        }
        AdminCommand::MasterKey {
            command: MasterKeyCommand::Rotate { new_key_file },
        } => {
            // Read and checked here, so a bad file is named before the server is asked. A key
            // others could read may be known already: rotating to it would protect nothing.
            if let Some(shared) =
                tessera_storage::MasterKey::shared_file(&new_key_file).map_err(|e| e.to_string())?
            {
                let allowed = Config::load(config, &Overrides::default())
                    .is_ok_and(|c| c.security.allow_insecure_master_key_file_mode);
                if !allowed {
                    return Err(format!(
                        "{shared} (or set security.allow_insecure_master_key_file_mode = true in \
                         {} to use it anyway)",
                        config.display()
                    ));
                }
                eprintln!(
                    "warning: {shared}; used anyway, as security.allow_insecure_master_key_file_mode \
                     = true allows"
                );
            }
            let text = std::fs::read_to_string(&new_key_file)
                .map_err(|e| format!("cannot read {}: {e}", new_key_file.display()))?;
            tessera_storage::MasterKey::from_base64(&text)
                .map_err(|e| format!("{}: {e}", new_key_file.display()))?;
            AdminRequest::MasterKeyRotate {
                new_key: text.trim().to_owned(),
            }
        }
        AdminCommand::Outbox {
            command: OutboxCommand::List { tenant, kind },
        } => AdminRequest::OutboxList {
            tenant,
            sms: matches!(kind, OutboxKind::Sms),
        },
        AdminCommand::Outbox {
            command: OutboxCommand::Show { id },
        } => AdminRequest::OutboxShow { id },
        AdminCommand::Dashboard {
            command: DashboardCommand::ResetMfa { email },
        } => AdminRequest::DashboardResetMfa { email },
    })
}

fn import_users(socket: &Path, tenant: &str, file: Option<&Path>) -> ExitCode {
    let code = match file {
        None => client::import(socket, tenant, std::io::stdin().lock()),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => client::import(socket, tenant, std::io::BufReader::new(f)),
            Err(e) => {
                eprintln!("error: cannot open {}: {e}", path.display());
                2
            }
        },
    };
    match code {
        0 => ExitCode::SUCCESS,
        2 => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    }
}

/// A PEM file the admin command sends over the socket (at most 64 KiB).
fn read_pem(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > 64 * 1024 {
        return Err(format!("{}: larger than 64 KiB", path.display()));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The owner's password: the first line of stdin.
fn read_password() -> Result<String, String> {
    let mut input = String::new();
    std::io::stdin()
        .take(4096)
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the owner password from stdin: {e}"))?;
    let line = input.lines().next().unwrap_or("").to_owned();
    if line.is_empty() {
        return Err("the owner password is read from stdin, and stdin was empty".into());
    }
    Ok(line)
}
