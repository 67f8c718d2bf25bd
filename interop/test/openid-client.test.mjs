// openid-client (v6), as its quick start uses it: discovery with the client's id and secret
// (so client_secret_post, its default), the authorization URL with PKCE and a nonce, the code
// exchange from the callback URL with its ID token checks, userinfo, refresh, introspection,
// revocation and RP-initiated logout; an authorization naming one of the user's
// organizations (the `organization` parameter with its scope, passed through the library's
// own parameters) gives tokens with its claims, and one naming another organization comes
// back as access_denied. The user's side is the tenant's UI in API mode.

import assert from 'node:assert/strict';
import { after } from 'node:test';

import * as client from 'openid-client';
import * as jose from 'jose';

import { startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';
import { approveInApiMode, Browser, form } from '../lib/user-agent.mjs';

const REDIRECT_URI = 'https://rp.example/callback';
const SIGNED_OUT_URI = 'https://rp.example/signed-out';
const EMAIL = 'reader@example.com';

// The steps that later ones build on.
const SETUP = 'setup: the server, a tenant, a confidential client registered without a method, a user';
const DISCOVERY = 'discovery';
const AUTHORIZE = 'buildAuthorizationUrl with PKCE and a nonce, the user consents (API mode)';
const CODE_GRANT = 'authorizationCodeGrant (client_secret_post) with the ID token checks';
const REFRESH = 'refreshTokenGrant';

let srv;
after(async () => {
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

walk('openid-client', [
  [
    SETUP,
    async (s) => {
      srv = await startTessera();
      const t = await srv.tenant('Acme');
      const c = await t.registerClient({
        client_type: 'confidential',
        redirect_uris: [REDIRECT_URI],
        post_logout_redirect_uris: [SIGNED_OUT_URI],
        allowed_scopes: ['openid', 'email', 'offline_access', 'organization'],
      });
      s.user = await t.createUser(EMAIL);
      s.userToken = (await t.login(EMAIL)).access_token;
      Object.assign(s, { t, clientId: c.client_id, clientSecret: c.client_secret });
    },
  ],
  [
    DISCOVERY,
    async (s) => {
      const t = needs(s.t, SETUP);
      s.config = await client.discovery(new URL(t.issuer), s.clientId, s.clientSecret, undefined, {
        execute: [client.allowInsecureRequests],
      });
      const meta = s.config.serverMetadata();
      assert.equal(meta.issuer, t.issuer);
      assert.ok(meta.supportsPKCE(), 'S256 PKCE is advertised');
    },
  ],
  [
    AUTHORIZE,
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      s.codeVerifier = client.randomPKCECodeVerifier();
      const code_challenge = await client.calculatePKCECodeChallenge(s.codeVerifier);
      s.nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid email offline_access',
        code_challenge,
        code_challenge_method: 'S256',
        nonce: s.nonce,
      });
      s.callback = await approveInApiMode(url.href, s.userToken);
      assert.ok(s.callback.startsWith(`${REDIRECT_URI}?`), s.callback);
    },
  ],
  [
    CODE_GRANT,
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const callback = needs(s.callback, AUTHORIZE);
      const tokens = await client.authorizationCodeGrant(config, new URL(callback), {
        pkceCodeVerifier: s.codeVerifier,
        expectedNonce: s.nonce,
        idTokenExpected: true,
      });
      assert.ok(tokens.access_token && tokens.refresh_token && tokens.id_token, 'an access, refresh and ID token');
      const claims = tokens.claims();
      assert.equal(claims.sub, s.user.id);
      assert.equal(claims.aud, s.clientId);
      assert.equal(claims.nonce, s.nonce);
      assert.equal(claims.email, EMAIL);
      s.tokens = tokens;
    },
  ],
  [
    "the ID token's signature against the JWKS (jose)",
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      const meta = s.config.serverMetadata();
      const jwks = jose.createRemoteJWKSet(new URL(meta.jwks_uri));
      const { protectedHeader } = await jose.jwtVerify(tokens.id_token, jwks, {
        issuer: meta.issuer,
        audience: s.clientId,
        algorithms: meta.id_token_signing_alg_values_supported,
      });
      assert.ok(meta.id_token_signing_alg_values_supported.includes(protectedHeader.alg), protectedHeader.alg);
    },
  ],
  [
    'fetchUserInfo',
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      const info = await client.fetchUserInfo(s.config, tokens.access_token, tokens.claims().sub);
      assert.equal(info.sub, s.user.id);
      assert.equal(info.email, EMAIL);
      assert.equal(info.email_verified, true);
    },
  ],
  [
    'userinfo without a token: a bare Bearer challenge (RFC 6750 3.1)',
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const r = await fetch(config.serverMetadata().userinfo_endpoint);
      assert.equal(r.status, 401);
      const challenge = r.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer\b/i, `WWW-Authenticate: ${challenge}`);
      assert.doesNotMatch(
        challenge,
        /\berror=/,
        `a request with no credentials gets no error code (RFC 6750 3.1); WWW-Authenticate: ${challenge}`,
      );
    },
  ],
  [
    'an authorization naming an organization: its claims in the ID and access tokens',
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const t = s.t;
      const org = await t.dash(201, 'POST', '/organizations', { name: 'Umbrella' });
      const other = await t.dash(201, 'POST', '/organizations', { name: 'Not hers' });
      await t.dash(201, 'POST', `/organizations/${org.id}/members`, { user_id: s.user.id, role: 'admin' });
      const ask = async (organization) => {
        const codeVerifier = client.randomPKCECodeVerifier();
        const nonce = client.randomNonce();
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT_URI,
          scope: 'openid email organization',
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: 'S256',
          nonce,
          organization,
        });
        assert.equal(url.searchParams.get('organization'), organization);
        return { callback: await approveInApiMode(url.href, s.userToken), codeVerifier, nonce };
      };
      const hers = await ask(org.id);
      const tokens = await client.authorizationCodeGrant(config, new URL(hers.callback), {
        pkceCodeVerifier: hers.codeVerifier,
        expectedNonce: hers.nonce,
        idTokenExpected: true,
      });
      assert.equal(tokens.claims().org_id, org.id);
      const access = jose.decodeJwt(tokens.access_token);
      assert.equal(access.org_id, org.id);
      assert.equal(access.org_role, 'admin');
      assert.ok(access.org_permissions.includes('members:manage'), JSON.stringify(access.org_permissions));
      // Not hers: the relying party's callback carries the refusal, which the library raises.
      const not = await ask(other.id);
      await assert.rejects(
        client.authorizationCodeGrant(config, new URL(not.callback), {
          pkceCodeVerifier: not.codeVerifier,
          expectedNonce: not.nonce,
        }),
        (e) => e.error === 'access_denied',
        `another organization's authorization came back as ${not.callback}`,
      );
    },
  ],
  [
    REFRESH,
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      const fresh = await client.refreshTokenGrant(s.config, tokens.refresh_token);
      assert.ok(fresh.access_token);
      assert.ok(fresh.refresh_token && fresh.refresh_token !== tokens.refresh_token, 'the refresh token rotates');
      s.refreshed = fresh;
    },
  ],
  [
    'tokenIntrospection of the access token',
    async (s) => {
      const fresh = needs(s.refreshed, REFRESH);
      const info = await client.tokenIntrospection(s.config, fresh.access_token);
      assert.equal(info.active, true);
      assert.equal(info.client_id, s.clientId);
      assert.equal(info.sub, s.user.id);
      assert.equal(info.iss, s.t.issuer);
    },
  ],
  [
    'tokenIntrospection of the refresh token',
    async (s) => {
      const fresh = needs(s.refreshed, REFRESH);
      const info = await client.tokenIntrospection(s.config, fresh.refresh_token);
      assert.equal(info.active, true);
      assert.equal(info.client_id, s.clientId);
      // RFC 7662 2.2: token_type is a token type of RFC 6749 7.1 (the access token types
      // registry: Bearer, N_A, PoP, DPoP), not the kind of token introspected.
      assert.ok(
        info.token_type === undefined || /^(Bearer|N_A|PoP|DPoP)$/i.test(info.token_type),
        `token_type ${JSON.stringify(info.token_type)} is not an OAuth token type (RFC 7662 2.2, RFC 6749 7.1)`,
      );
    },
  ],
  [
    'tokenRevocation of the refresh token ends the grant',
    async (s) => {
      const fresh = needs(s.refreshed, REFRESH);
      await client.tokenRevocation(s.config, fresh.refresh_token);
      const refresh = await client.tokenIntrospection(s.config, fresh.refresh_token);
      assert.equal(refresh.active, false, 'the revoked refresh token');
      const access = await client.tokenIntrospection(s.config, fresh.access_token);
      assert.equal(access.active, false, "the grant's access token");
      await assert.rejects(
        client.refreshTokenGrant(s.config, fresh.refresh_token),
        (e) => e.error === 'invalid_grant',
        'a refresh with the revoked token is invalid_grant',
      );
    },
  ],
  [
    'buildEndSessionUrl with id_token_hint',
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      const state = client.randomState();
      const url = client.buildEndSessionUrl(s.config, {
        id_token_hint: tokens.id_token,
        post_logout_redirect_uri: SIGNED_OUT_URI,
        state,
      });
      const r = await fetch(url, { redirect: 'manual' });
      const body = r.status === 302 ? '' : await r.text();
      assert.equal(r.status, 302, `end_session answered ${r.status}: ${body}`);
      const to = new URL(r.headers.get('location'));
      assert.equal(`${to.origin}${to.pathname}`, SIGNED_OUT_URI);
      assert.equal(to.searchParams.get('state'), state);
    },
  ],
  [
    'buildEndSessionUrl without id_token_hint (client_id and a registered post_logout_redirect_uri)',
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const state = client.randomState();
      const url = client.buildEndSessionUrl(config, { post_logout_redirect_uri: SIGNED_OUT_URI, state });
      assert.equal(url.searchParams.get('client_id'), s.clientId, 'openid-client names the client');
      // Without the hint nothing says which sign-in ends, so the provider asks the person
      // (RP-Initiated Logout 1.0 section 2): the browser the relying party sends there gets a
      // confirmation page, and its button ends at the registered URI with the state.
      const browser = new Browser();
      let page = await browser.get(url.href);
      assert.equal(page.status, 302, `end_session answered ${page.status}: ${page.body}`);
      page = await browser.get(page.location);
      assert.equal(page.status, 200, `the confirmation page answered ${page.status}: ${page.body}`);
      const confirm = form(page, 'name="csrf"');
      assert.ok(confirm, `no confirmation form on ${page.url}`);
      page = await browser.post(confirm.action, confirm.fields);
      assert.equal(page.status, 303, `the confirmation answered ${page.status}: ${page.body}`);
      const to = new URL(page.location);
      assert.equal(`${to.origin}${to.pathname}`, SIGNED_OUT_URI);
      assert.equal(to.searchParams.get('state'), state);
    },
  ],
]);
