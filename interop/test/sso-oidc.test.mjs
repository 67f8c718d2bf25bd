// OpenID Connect federation: an organization signs its people in with its own provider,
// oidc-provider (a certified implementation, in this process). The organization proves its
// domain by DNS (a local nameserver), creates a connection by the issuer alone (the server
// reads the discovery document), and a browser without script goes out to the provider and
// back; the app trades the code for tokens that carry the organization. Then what must be
// refused: a code delivered with another sign-in's state (its ID token has the other
// nonce), an issuer whose discovery document names another, a provider account at a domain
// the organization did not prove against an existing account; and the provider's key
// rotation (the server fetches the keys again on the unknown `kid`).

import assert from 'node:assert/strict';
import { after } from 'node:test';

import { startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';
import { Browser } from '../lib/user-agent.mjs';
import { startOidcProvider, followToRp, withLoginHint } from '../lib/oidc-provider.mjs';
import { startDnsStub } from '../lib/dns-stub.mjs';

const APP = 'https://app.example';
const BACK = `${APP}/sso-done`;

const SETUP = 'setup: the provider, a nameserver, the server, a tenant, an organization with a proven domain';
const CONNECT = 'a connection by its issuer (discovery read and checked)';
const SIGN_IN = 'a sign-in through the provider: a new member, tokens with the organization';
const ROTATE = 'the provider rotates its key: the next sign-in still checks (keys fetched again)';
const NONCE = 'a code brought back with another sign-in\'s state is refused (nonce)';
const ISSUER = 'an issuer whose discovery document names another is refused';
const FOREIGN = 'an address outside the proven domain never reaches an existing account';
const ROUTING = 'an unproven claim routes nothing; an SSO-only domain refuses the other ways in';

let srv;
let op;
let dns;
after(async () => {
  dns?.close();
  await op?.close();
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

/** The claims of a JWT's payload (not checked: the server's own token). */
function payload(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
}

/** Goes out from `start` to the provider as `email` and back: the URL the app is sent to. */
async function signIn(s, browser, email, start = s.start) {
  const out = await browser.get(`${start}?redirect_uri=${encodeURIComponent(BACK)}`);
  assert.equal(out.status, 302, `start answered ${out.status}: ${out.body}`);
  const callback = await followToRp(browser, withLoginHint(out.location, email), srv.base);
  const back = await browser.get(callback);
  assert.equal(back.status, 302, `the callback answered ${back.status}: ${back.body}`);
  return new URL(back.location);
}

walk('OpenID federation (oidc-provider)', [
  [
    SETUP,
    async (s) => {
      s.dns = await startDnsStub();
      dns = s.dns;
      srv = await startTessera({
        TESSERA__DNS__NAMESERVERS: `["${s.dns.address}"]`,
        TESSERA__SSO__ALLOW_PRIVATE_TARGETS: 'true',
        TESSERA__SSO__KEYS_REFETCH_SECS: '1',
      });
      const t = await srv.tenant('Federated');
      await t.dash(200, 'PUT', '/settings/urls', { site_url: APP, redirect_urls: [BACK] });
      const org = await t.provenOrganization(s.dns, 'Contoso', 'contoso.example');
      await t.dash(200, 'PUT', '/organization-roles/engineer', { permissions: ['code:write'] });
      Object.assign(s, { t, org });
    },
  ],
  [
    CONNECT,
    async (s) => {
      const t = needs(s.t, SETUP);
      const redirect = (id) => `${srv.base}/sso/${t.slug}/${id}/callback`;
      // The client's redirect URI names the connection, so the provider is started with a
      // placeholder and the client registered once the id is known.
      op = await startOidcProvider({
        accounts: {
          'alice@contoso.example': { email_verified: true, given_name: 'Alice', family_name: 'Liddell', groups: ['eng'] },
          'mallory@elsewhere.example': { email_verified: true, given_name: 'Mallory', groups: [] },
        },
        clients: [{ client_id: 'tessera', client_secret: 'op-secret-1', redirect_uris: ['https://placeholder.invalid/cb'] }],
      });
      const c = await t.dash(201, 'POST', `/organizations/${s.org}/connections`, {
        name: 'Contoso OP',
        type: 'oidc',
        oidc: { issuer: op.issuer, client_id: 'tessera', client_secret: 'op-secret-1', scopes: ['email', 'profile'] },
        group_roles: [{ group: 'eng', role: 'engineer' }],
      });
      assert.equal(c.type, 'oidc');
      assert.equal(c.oidc.redirect_uri, redirect(c.id));
      assert.equal(c.oidc.client_secret, undefined, 'the secret is never answered');
      // The provider now knows the redirect URI.
      await op.close();
      op = await startOidcProvider({
        accounts: {
          'alice@contoso.example': { email_verified: true, given_name: 'Alice', family_name: 'Liddell', groups: ['eng'] },
          'mallory@elsewhere.example': { email_verified: true, given_name: 'Mallory', groups: [] },
        },
        clients: [{ client_id: 'tessera', client_secret: 'op-secret-1', redirect_uris: [redirect(c.id)] }],
      });
      // Another issuer: the secret is sent along again (a stored one never goes to another).
      const moved = await srv.request('PATCH', `/v1/auth/dashboard/tenants/${t.slug}/organizations/${s.org}/connections/${c.id}`, {
        bearer: t.session,
        json: { oidc: { issuer: op.issuer } },
      });
      assert.equal(moved.status, 400, JSON.stringify(moved.body));
      await t.dash(200, 'PATCH', `/organizations/${s.org}/connections/${c.id}`, {
        oidc: { issuer: op.issuer, client_secret: 'op-secret-1' },
      });
      const found = await srv.expect(200, 'POST', '/v1/auth/sso/discover', {
        apiKey: t.apiKey,
        json: { email: 'Someone@Contoso.Example' },
      });
      assert.equal(found.sso, true);
      assert.equal(found.connection_id, c.id);
      assert.equal(found.start_url, c.start_url);
      const none = await srv.expect(200, 'POST', '/v1/auth/sso/discover', {
        apiKey: t.apiKey,
        json: { email: 'someone@unclaimed.example' },
      });
      assert.equal(none.sso, false);
      Object.assign(s, { connection: c.id, start: c.start_url });
    },
  ],
  [
    SIGN_IN,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      const back = await signIn(s, new Browser(), 'alice@contoso.example');
      assert.equal(back.origin + back.pathname, BACK);
      const code = back.searchParams.get('code');
      assert.ok(code, `back to the app without a code: ${back}`);
      const login = await srv.expect(200, 'POST', '/v1/auth/sso/session', { apiKey: t.apiKey, json: { code } });
      const claims = payload(login.access_token);
      assert.equal(claims.org_id, s.org);
      assert.equal(claims.org_role, 'engineer', 'the group eng gives the role engineer');
      assert.deepEqual(claims.org_permissions, ['code:write']);
      assert.deepEqual(claims.amr, ['fed']);
      assert.equal(login.user.email, 'alice@contoso.example');
      assert.equal(login.user.email_verified, true, 'the proven domain vouches for the address');
      // Single use.
      const again = await srv.request('POST', '/v1/auth/sso/session', { apiKey: t.apiKey, json: { code } });
      assert.equal(again.status, 401);
      const members = await t.dash(200, 'GET', `/organizations/${s.org}/members`);
      assert.ok(members.data.some((m) => m.email === 'alice@contoso.example' && m.joined_via === 'sso'), JSON.stringify(members));
    },
  ],
  [
    ROTATE,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      const before = op.kid;
      const after = await op.rotateKeys();
      assert.notEqual(before, after);
      // The server's cached key set lacks the new kid; past its refetch interval (1 s here)
      // the unknown kid fetches the set again, which is what lets this pass.
      await new Promise((r) => setTimeout(r, 1_100));
      const back = await signIn(s, new Browser(), 'alice@contoso.example');
      const code = back.searchParams.get('code');
      assert.ok(code, `refused after the key rotation: ${back}`);
      await srv.expect(200, 'POST', '/v1/auth/sso/session', { apiKey: t.apiKey, json: { code } });
    },
  ],
  [
    NONCE,
    async (s) => {
      needs(s.start, CONNECT);
      // One browser begins two sign-ins; the provider's answer to the second is brought back
      // with the first's state (code injection): its ID token carries the second's nonce.
      const browser = new Browser();
      const first = await browser.get(`${s.start}?redirect_uri=${encodeURIComponent(BACK)}`);
      const second = await browser.get(`${s.start}?redirect_uri=${encodeURIComponent(BACK)}`);
      const callback = new URL(await followToRp(browser, withLoginHint(second.location, 'alice@contoso.example'), srv.base));
      const firstState = new URL(first.location).searchParams.get('state');
      callback.searchParams.set('state', firstState);
      const back = await browser.get(callback.href);
      assert.equal(back.status, 302);
      const to = new URL(back.location);
      assert.equal(to.searchParams.get('code'), null, `a code for a mixed-up sign-in: ${to}`);
      assert.equal(to.searchParams.get('error'), 'provider_error');
    },
  ],
  [
    ISSUER,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      // The provider's own address with a trailing path: its discovery document names the
      // issuer without it.
      const r = await srv.request('POST', `/v1/auth/dashboard/tenants/${t.slug}/organizations/${s.org}/connections`, {
        bearer: t.session,
        json: { name: 'Wrong', type: 'oidc', oidc: { issuer: `${op.issuer}/`, client_id: 'x', client_secret: 'y' } },
      });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'sso/provider_invalid');
    },
  ],
  [
    FOREIGN,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      // Someone registered at the address the provider asserts; the provider cannot vouch
      // for a domain the organization did not prove.
      await t.createUser('mallory@elsewhere.example');
      const back = await signIn(s, new Browser(), 'mallory@elsewhere.example');
      assert.equal(back.searchParams.get('code'), null);
      assert.equal(back.searchParams.get('error'), 'email_exists');
    },
  ],
  [
    ROUTING,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      const discover = (email) =>
        srv.expect(200, 'POST', '/v1/auth/sso/discover', { apiKey: t.apiKey, json: { email } });
      // Claimed, not proven: no route.
      await t.dash(201, 'POST', `/organizations/${s.org}/domains`, { domain: 'fabrikam.example' });
      assert.equal((await discover('bob@fabrikam.example')).sso, false);
      // Proven and SSO-only: password sign-in, registration and login links refuse it.
      const d = await t.dash(200, 'PATCH', `/organizations/${s.org}/domains/contoso.example`, { sso_only: true });
      assert.equal(d.sso_only, true);
      assert.equal((await discover('alice@contoso.example')).sso_only, true);
      for (const [path, json] of [
        ['/v1/auth/login', { email: 'alice@contoso.example', password: 'any passphrase at all' }],
        ['/v1/auth/register', { email: 'newcomer@contoso.example', password: 'a long enough passphrase', consent: true }],
        ['/v1/auth/magic-link', { email: 'alice@contoso.example' }],
      ]) {
        const r = await srv.request('POST', path, { apiKey: t.apiKey, json });
        assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, 'auth/sso_required', `${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.details.connection_id, s.connection);
      }
      // Other domains are untouched.
      const other = await srv.request('POST', '/v1/auth/login', {
        apiKey: t.apiKey,
        json: { email: 'mallory@elsewhere.example', password: 'interop user passphrase' },
      });
      assert.equal(other.status, 200, JSON.stringify(other.body));
      // Single sign-on still works.
      const back = await signIn(s, new Browser(), 'alice@contoso.example');
      assert.ok(back.searchParams.get('code'), `${back}`);
    },
  ],
]);
