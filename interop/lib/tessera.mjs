// The real `tessera` binary on a free port with a temporary data directory, talked to over HTTP
// and the admin socket as operators and clients do, as the Rust tests do (tests/it/support.rs).

import { spawn, execFile } from 'node:child_process';
import { createWriteStream, rmSync } from 'node:fs';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The binary under test: `TESSERA_BIN`, else the debug build CI makes. */
export const BIN = process.env.TESSERA_BIN || path.join(ROOT, 'target', 'debug', 'tessera');

const exitHooks = [];
let exitHooked = false;

/**
 * Runs `fn` (synchronous) when this process ends, however it ends: normally, on an uncaught
 * error, or on SIGINT, SIGTERM or SIGHUP (the test runner ending it), so no server outlives
 * the test that started it.
 */
export function atExit(fn) {
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      for (const f of exitHooks.splice(0)) {
        try {
          f();
        } catch {
          // already gone
        }
      }
    });
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(signal, () => process.exit(1));
  }
  exitHooks.push(fn);
}

/** The owner's dashboard password and an end user's password (neither on a common list). */
export const OWNER_PASSWORD = 'interop owner passphrase';
export const USER_PASSWORD = 'interop user passphrase';

/**
 * The environment every server of the suite runs with: cheap Argon2 (tests need speed, not
 * cracking resistance), many sign-ups from 127.0.0.1, and `extra`.
 */
export function serverEnv(extra = {}) {
  return {
    ...process.env,
    TESSERA__LOG__LEVEL: 'info',
    TESSERA__SECURITY__ARGON2_M_COST_KIB: '1024',
    TESSERA__SECURITY__ARGON2_T_COST: '1',
    TESSERA__SECURITY__ONBOARDING_PER_IP_HOURLY: '100000',
    ...extra,
  };
}

/**
 * Starts `tessera serve --listen 127.0.0.1:0` with a fresh data directory (or, `again`, a
 * stopped server's data directory at its address); answers once the server prints its
 * listening line.
 */
export async function startTessera(extraEnv = {}, again = null) {
  const dir = again ? again.dir : await mkdtemp(path.join(tmpdir(), 'tessera-interop-'));
  const dataDir = path.join(dir, 'data');
  const logPath = path.join(dir, again ? 'server-again.log' : 'server.log');
  const log = createWriteStream(logPath);
  // Started again: the same data directory at the same address.
  const listen = again ? new URL(again.base).host : '127.0.0.1:0';
  const child = spawn(
    BIN,
    ['serve', '--listen', listen, '--config', path.join(ROOT, 'config.toml'), '--data-dir', dataDir],
    { env: serverEnv(extraEnv), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stderr.pipe(log);
  atExit(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const lines = createInterface({ input: child.stdout });
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tessera did not start within 30 s (${BIN})`)), 30_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`tessera could not be started (${BIN}): ${e.message}; set TESSERA_BIN or build it`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`tessera exited (${code ?? signal}) before listening; log: ${logPath}`));
    });
    lines.once('line', (line) => {
      clearTimeout(timer);
      const m = /http:\/\/(\S+)/.exec(line);
      if (m) resolve(`http://${m[1]}`);
      else reject(new Error(`no address in tessera's first line: ${line}`));
    });
  });
  return new Tessera({ child, exited, base, dir, dataDir, logPath });
}

export class Tessera {
  constructor({ child, exited, base, dir, dataDir, logPath }) {
    Object.assign(this, { child, exited, base, dir, dataDir, logPath });
    this.socket = path.join(dataDir, 'admin.sock');
  }

  url(p) {
    return `${this.base}${p}`;
  }

  /** `tessera admin --socket <this server's socket> ARGS`: its JSON answer. */
  admin(args, stdin = '') {
    return new Promise((resolve, reject) => {
      const p = execFile(BIN, ['admin', '--socket', this.socket, ...args], (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`tessera admin ${args.join(' ')} failed (${err.code}): ${stderr.trim()}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new Error(`tessera admin ${args.join(' ')} printed no JSON: ${stdout}`));
        }
      });
      p.stdin.end(stdin);
    });
  }

  /** One JSON request; answers `{status, headers, body}` (body parsed when JSON, else text). */
  async request(method, p, { bearer, apiKey, json, form, headers = {} } = {}) {
    const h = { ...headers };
    if (bearer) h.authorization = `Bearer ${bearer}`;
    if (apiKey) h['x-api-key'] = apiKey;
    let body;
    if (json !== undefined) {
      h['content-type'] = 'application/json';
      body = JSON.stringify(json);
    } else if (form !== undefined) {
      body = new URLSearchParams(form);
    }
    const r = await fetch(p.startsWith('http') ? p : this.url(p), { method, headers: h, body, redirect: 'manual' });
    const text = await r.text();
    let parsed = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text
    }
    return { status: r.status, headers: r.headers, body: parsed };
  }

  /** A request that must answer `status`; answers the body, else throws with the answer. */
  async expect(status, method, p, opts) {
    const r = await this.request(method, p, opts);
    if (r.status !== status) {
      throw new Error(`${method} ${p} answered ${r.status} (expected ${status}): ${show(r.body)}`);
    }
    return r.body;
  }

  /**
   * A tenant made through onboarding, its owner's dashboard session (re-authenticated, for
   * the writes that need it) and its API key.
   */
  async tenant(name = 'Acme', owner = 'owner@example.com') {
    const made = await this.expect(201, 'POST', '/v1/onboarding/signup', {
      json: {
        email: owner,
        password: OWNER_PASSWORD,
        tenant_name: name,
        consent_terms: true,
        consent_privacy: true,
      },
    });
    const login = await this.expect(200, 'POST', '/v1/auth/dashboard/login', {
      json: { email: owner, password: OWNER_PASSWORD },
    });
    const t = new Tenant(this, made.tenant.slug, made.api_key, login.session_token);
    await t.reauth();
    return t;
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
  }

  /** The last lines of the server's log. */
  async logTail(n = 30) {
    const text = await readFile(this.logPath, 'utf8').catch(() => '');
    return text.split('\n').slice(-n - 1).join('\n');
  }

  async remove() {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** One tenant, seen by its owner through the dashboard API. */
export class Tenant {
  constructor(srv, slug, apiKey, session) {
    Object.assign(this, { srv, slug, apiKey, session });
    this.issuer = `${srv.base}/v1/tenants/${slug}`;
  }

  dash(status, method, p, json) {
    return this.srv.expect(status, method, `/v1/auth/dashboard/tenants/${this.slug}${p}`, {
      bearer: this.session,
      json,
    });
  }

  reauth() {
    return this.srv.expect(200, 'POST', '/v1/auth/dashboard/reauth', {
      bearer: this.session,
      json: { password: OWNER_PASSWORD },
    });
  }

  /** An end user with a confirmed address, made by the owner; answers the user record. */
  createUser(email, password = USER_PASSWORD) {
    return this.dash(201, 'POST', '/users', { email, password, email_verified: true });
  }

  /** An OAuth client registered on the dashboard; answers the 201 body (with its secret). */
  registerClient(fields) {
    return this.dash(201, 'POST', '/oauth-clients', { name: 'Relying Party', ...fields });
  }

  /**
   * An organization `name` that proved `domain` by DNS, its TXT record published on `dns`
   * (a `startDnsStub`, which the server must use: `TESSERA__DNS__NAMESERVERS`); answers the
   * organization's id.
   */
  async provenOrganization(dns, name, domain) {
    const org = await this.dash(201, 'POST', '/organizations', { name });
    const claim = await this.dash(201, 'POST', `/organizations/${org.id}/domains`, { domain });
    dns.publish(claim.txt_name, claim.txt_value);
    await this.dash(200, 'POST', `/organizations/${org.id}/domains/${domain}/verify`);
    return org.id;
  }

  /** Turns RFC 7591 dynamic client registration on. */
  allowDynamicRegistration() {
    return this.dash(200, 'PATCH', '/settings/agents', { dynamic_client_registration: true });
  }

  /**
   * A resource of the tenant (admin CLI) with one approved `normal` scope: answers the
   * resource's id.
   */
  async resourceWithScope(uri, scopeName, text = 'Read your orders') {
    const resource = await this.srv.admin(['resource', 'register', '--tenant', this.slug, '--name', 'API', '--uri', uri]);
    const entry = await this.srv.expect(201, 'POST', `/v1/resources/${resource.id}/scopes`, {
      bearer: this.session,
      json: {
        scope_name: scopeName,
        sensitivity: 'normal',
        display_metadata: { kind: 'locale_text', locale_text: { en: text, pl: text, de: text, fr: text, es: text } },
      },
    });
    await this.srv.admin(['scope', 'approve', resource.id, entry.id]);
    return resource.id;
  }

  /** The user's own (first-party) token pair, from a password login with the API key. */
  login(email, password = USER_PASSWORD) {
    return this.srv.expect(200, 'POST', '/v1/auth/login', { apiKey: this.apiKey, json: { email, password } });
  }
}

/** A value for an error message, cut to a readable length. */
export function show(v) {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s && s.length > 1500 ? `${s.slice(0, 1500)}...` : s;
}
