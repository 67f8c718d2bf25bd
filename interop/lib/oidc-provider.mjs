// An organization's own OpenID provider, for the federation tests: oidc-provider (a certified
// OP) in this process on a free port of 127.0.0.1, with the accounts and clients a test names.
// Tessera is its relying party. No person is there to type a password, so the sign-in page
// completes itself: the test appends `login_hint=<email>` to the authorization request Tessera
// sent the browser to, and the redirects alone lead back to Tessera's callback.

import { createHash, generateKeyPair, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { promisify } from 'node:util';

import { Provider } from 'oidc-provider';

import { atExit, show } from './tessera.mjs';

/** Where the provider sends the browser for a sign-in or a consent: handled here, not by it. */
const INTERACTION_PATH = '/interaction/';

/**
 * What each scope releases, in the ID token as at userinfo. `groups` comes with `profile`
 * (what a relying party asks for anyway) and has a scope of its own for one that asks only for
 * it.
 */
const CLAIMS = {
  openid: ['sub'],
  email: ['email', 'email_verified'],
  profile: [
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'picture',
    'locale',
    'zoneinfo',
    'updated_at',
    'groups',
  ],
  groups: ['groups'],
};

/**
 * Starts the provider. `accounts` maps an email address to that account's claims (`sub`, else
 * a hash of the address; `email`, else the address); `clients` are `{ client_id,
 * client_secret, redirect_uris }`, registered with client_secret_basic unless they say
 * otherwise (oidc-provider takes client_secret_post from such a client too).
 *
 * Answers `{ issuer, provider, kid, rotateKeys(), close() }`: `provider` and `kid` (the
 * signing key's id) change when `rotateKeys()` replaces the key. The server also stops when
 * the test process ends (atExit).
 */
export async function startOidcProvider({ accounts = {}, clients = [] } = {}) {
  const directory = accountDirectory(accounts);
  let current;
  const server = createServer((req, res) => route(current, directory, req, res));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  // Keep-alive connections (fetch's) would hold the server open: ended with it.
  const stop = (done) => {
    server.close(done);
    server.closeAllConnections();
  };
  atExit(stop);

  const issuer = `http://127.0.0.1:${server.address().port}`;
  // Kept across a key rotation, as a real provider keeps its sign-ins when it changes keys.
  const cookieKeys = [randomBytes(32).toString('base64url')];
  const adapter = memoryStore();
  const start = async () => {
    const key = await signingKey();
    const provider = new Provider(issuer, configuration({ directory, clients, key, cookieKeys, adapter }));
    current = { provider, kid: key.kid, handle: provider.callback() };
  };
  await start();

  return {
    issuer,
    get provider() {
      return current.provider;
    },
    get kid() {
      return current.kid;
    },
    /**
     * Signs with a new key of a new `kid` from now on, the old one no longer published. The
     * keys are read once when a Provider is made, so this makes the Provider again with the
     * same issuer, clients, cookie keys and store: sessions, grants and codes carry over.
     * Answers the new `kid`.
     */
    async rotateKeys() {
      await start();
      return current.kid;
    },
    /** Stops the server; answers once it has (also when it already had). */
    close() {
      return new Promise((resolve) => stop(() => resolve()));
    },
  };
}

/** The accounts by email and by `sub`, each with its claims. */
function accountDirectory(accounts) {
  const byEmail = new Map();
  const bySub = new Map();
  for (const [address, claims] of Object.entries(accounts)) {
    // The same account keeps the same `sub` from one run to the next, as at a real provider.
    const sub = claims.sub ?? createHash('sha256').update(address).digest('base64url').slice(0, 22);
    const account = { ...claims, email: claims.email ?? address, sub };
    byEmail.set(address.toLowerCase(), account);
    bySub.set(sub, account);
  }
  return { byEmail, bySub };
}

/** A new RS256 signing key (the algorithm every client and relying party supports). */
async function signingKey() {
  const { privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
  const kid = `harness-${randomBytes(6).toString('base64url')}`;
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
}

/**
 * oidc-provider's storage, in memory: one per provider, shared by the Providers a key rotation
 * makes (oidc-provider's own in-memory store would be each Provider's, and warns on each). Its
 * entries are not evicted: a test's provider lives seconds, and oidc-provider checks `exp`.
 */
function memoryStore() {
  const items = new Map();
  const where = (model, test) => {
    for (const [key, payload] of items) if (key.startsWith(`${model}:`) && test(payload)) return payload;
    return undefined;
  };
  return (model) => ({
    async upsert(id, payload) {
      items.set(`${model}:${id}`, payload);
    },
    async find(id) {
      return items.get(`${model}:${id}`);
    },
    async findByUid(uid) {
      return where(model, (p) => p.uid === uid);
    },
    async findByUserCode(userCode) {
      return where(model, (p) => p.userCode === userCode);
    },
    async consume(id) {
      const payload = items.get(`${model}:${id}`);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    },
    async destroy(id) {
      items.delete(`${model}:${id}`);
    },
    // A code used twice revokes what it gave: every token of the grant, of whatever model.
    async revokeByGrantId(grantId) {
      for (const [key, payload] of items) {
        if (payload.grantId === grantId && payload.kind !== 'Grant') items.delete(key);
      }
    },
  });
}

function configuration({ directory, clients, key, cookieKeys, adapter }) {
  return {
    adapter,
    clients: clients.map((c) => ({
      token_endpoint_auth_method: 'client_secret_basic',
      response_types: ['code'],
      grant_types: ['authorization_code'],
      ...c,
    })),
    jwks: { keys: [key] },
    scopes: ['openid'],
    claims: CLAIMS,
    // Scope claims in the ID token too, not only at userinfo: the relying party may read only
    // the ID token.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    // oidc-provider 9 asks public clients only for PKCE; this one asks every client, so a
    // relying party that leaves it out fails here.
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => findAccount(directory, sub),
    interactions: { url: (_ctx, interaction) => `${INTERACTION_PATH}${interaction.uid}` },
    features: { devInteractions: { enabled: false } },
    cookies: {
      keys: cookieKeys,
      // Names of their own: the tests' browser sends every cookie to every server.
      names: { session: 'op_session', interaction: 'op_interaction', resume: 'op_interaction_resume' },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    // Plain text, for a test's error message.
    renderError(ctx, out) {
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = Object.entries(out)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n');
    },
  };
}

function findAccount(directory, sub) {
  const account = directory.bySub.get(sub);
  if (!account) return undefined;
  // Every claim of the account: oidc-provider keeps those the granted scopes release.
  return { accountId: sub, claims: async () => ({ ...account }) };
}

/** The interaction pages here, everything else to the provider in use. */
async function route(current, directory, req, res) {
  if (!req.url.startsWith(INTERACTION_PATH)) {
    current.handle(req, res);
    return;
  }
  try {
    await interact(current.provider, directory, req, res);
  } catch (e) {
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`the interaction failed: ${e.message}`);
  }
}

/**
 * Completes the pending sign-in or consent without a page: the sign-in as the account that
 * `login_hint` names (none, or one unknown, is access_denied back at the relying party), the
 * consent by granting all that was asked.
 */
async function interact(provider, directory, req, res) {
  const details = await provider.interactionDetails(req, res);
  let result;
  switch (details.prompt.name) {
    case 'login':
      result = signIn(directory, details.params.login_hint);
      break;
    case 'consent':
      result = { consent: { grantId: await grantAll(provider, details) } };
      break;
    default:
      result = { error: 'access_denied', error_description: `no answer for the ${details.prompt.name} prompt` };
  }
  await provider.interactionFinished(req, res, result);
}

function signIn(directory, hint) {
  if (!hint) {
    return { error: 'access_denied', error_description: 'no login_hint: the harness signs in only whom it names' };
  }
  const account = directory.byEmail.get(hint.toLowerCase());
  if (!account) return { error: 'access_denied', error_description: `no account ${hint}` };
  return { login: { accountId: account.sub } };
}

/** The grant of everything the consent prompt found missing: answers its id. */
async function grantAll(provider, { grantId, session, params, prompt }) {
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  await grant.save();
  return grant.jti;
}

/** `url` (the provider's authorization request) with `login_hint=<email>` added. */
export function withLoginHint(url, email) {
  const u = new URL(url);
  u.searchParams.set('login_hint', email);
  return u.href;
}

/**
 * Follows the redirects from `location` with `browser` (a user-agent.mjs Browser: through the
 * provider's authorization endpoint, its interactions and resumes) until one leads to
 * `rpOrigin`; answers that URL, the relying party's callback, not fetched.
 */
export async function followToRp(browser, location, rpOrigin, maxHops = 12) {
  const rp = new URL(rpOrigin).origin;
  let url = location;
  for (let hops = 0; hops < maxHops; hops++) {
    if (new URL(url).origin === rp) return url;
    const page = await browser.get(url);
    if (!page.location) {
      throw new Error(`${url} answered ${page.status} without a redirect: ${show(page.body)}`);
    }
    url = page.location;
  }
  throw new Error(`no redirect to ${rp} within ${maxHops} hops; last: ${url}`);
}
