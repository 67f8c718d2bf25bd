// The federation tests' OpenID provider (lib/oidc-provider.mjs) checked on its own, with
// openid-client as the relying party in Tessera's place: discovery, a code flow with PKCE and a
// nonce finished by redirects alone, the claims in the ID token, a key rotation the relying
// party picks up by fetching the JWKS again, and an unknown account refused. No Tessera here.

import assert from 'node:assert/strict';
import { after } from 'node:test';

import * as client from 'openid-client';
import * as jose from 'jose';

import { startOidcProvider, followToRp, withLoginHint } from '../lib/oidc-provider.mjs';
import { walk, needs } from '../lib/steps.mjs';
import { Browser } from '../lib/user-agent.mjs';

const REDIRECT_URI = 'http://127.0.0.1:9/federation/callback';
const RP_ORIGIN = new URL(REDIRECT_URI).origin;
const EMAIL = 'alice@corp.example';
const ALICE = { email_verified: true, given_name: 'Alice', family_name: 'A', groups: ['engineering'] };
const CLIENT = { client_id: 'tessera', client_secret: 'a secret of the organization', redirect_uris: [REDIRECT_URI] };

const SETUP = 'setup: the provider with one account and one client';
const DISCOVERY = 'discovery (client_secret_basic)';
const LOGIN = 'a login with PKCE and a nonce, finished by redirects';
const CODE_GRANT = 'authorizationCodeGrant: the ID token and its claims';
const ROTATE = 'rotateKeys: a new kid, the old one no longer published';
const AFTER_ROTATE = 'a login after the rotation: a new kid, checked after the relying party fetches the JWKS again';

let op;
after(async () => {
  await op?.close();
});

/** `fetch`, counting the requests for the JWKS in `s.jwksFetches`. */
function countingFetch(s) {
  return (url, options) => {
    if (String(url) === s.jwksUri) s.jwksFetches += 1;
    return fetch(url, options);
  };
}

/** An authorization request of `config`; answers `{ url, verifier, nonce, state }`. */
async function authorizationRequest(config) {
  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
  });
  return { url: url.href, verifier, nonce, state };
}

function exchange(config, callback, request) {
  return client.authorizationCodeGrant(config, new URL(callback), {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
    idTokenExpected: true,
  });
}

walk('oidc-provider harness', [
  [
    SETUP,
    async (s) => {
      op = await startOidcProvider({ accounts: { [EMAIL]: ALICE }, clients: [CLIENT] });
      assert.match(op.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
      s.op = op;
    },
  ],
  [
    DISCOVERY,
    async (s) => {
      const op = needs(s.op, SETUP);
      s.config = await client.discovery(
        new URL(op.issuer),
        CLIENT.client_id,
        undefined,
        client.ClientSecretBasic(CLIENT.client_secret),
        // Signatures checked against the JWKS (openid-client trusts a token response's ID
        // token without it), as Tessera checks them.
        { execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks] },
      );
      const meta = s.config.serverMetadata();
      assert.equal(meta.issuer, op.issuer);
      assert.ok(meta.supportsPKCE(), 'S256 PKCE is advertised');
      for (const scope of ['openid', 'email', 'profile', 'groups']) {
        assert.ok(meta.scopes_supported.includes(scope), scope);
      }
      for (const claim of ['email', 'email_verified', 'given_name', 'family_name', 'groups']) {
        assert.ok(meta.claims_supported.includes(claim), claim);
      }
      for (const method of ['client_secret_basic', 'client_secret_post']) {
        assert.ok(meta.token_endpoint_auth_methods_supported.includes(method), method);
      }
      s.jwksUri = meta.jwks_uri;
      s.jwksFetches = 0;
      s.config[client.customFetch] = countingFetch(s);
    },
  ],
  [
    'an authorization request without PKCE: invalid_request back at the relying party',
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', nonce: 'n' });
      const callback = new URL(await followToRp(new Browser(), withLoginHint(url, EMAIL), RP_ORIGIN));
      assert.equal(callback.searchParams.get('error'), 'invalid_request', callback.href);
      assert.match(callback.searchParams.get('error_description'), /PKCE/, callback.href);
    },
  ],
  [
    LOGIN,
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      s.request = await authorizationRequest(config);
      s.browser = new Browser();
      s.callback = await followToRp(s.browser, withLoginHint(s.request.url, EMAIL), RP_ORIGIN);
      const callback = new URL(s.callback);
      assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT_URI);
      assert.ok(callback.searchParams.get('code'), s.callback);
      assert.equal(callback.searchParams.get('state'), s.request.state);
    },
  ],
  [
    CODE_GRANT,
    async (s) => {
      const callback = needs(s.callback, LOGIN);
      const tokens = await exchange(s.config, callback, s.request);
      const claims = tokens.claims();
      assert.equal(claims.iss, s.op.issuer);
      assert.equal(claims.aud, CLIENT.client_id);
      assert.equal(claims.nonce, s.request.nonce);
      assert.ok(claims.sub && claims.sub !== EMAIL, `a sub of its own: ${claims.sub}`);
      assert.equal(claims.email, EMAIL);
      assert.equal(claims.email_verified, true);
      assert.equal(claims.given_name, 'Alice');
      assert.equal(claims.family_name, 'A');
      assert.deepEqual(claims.groups, ['engineering']);
      assert.equal(jose.decodeProtectedHeader(tokens.id_token).kid, s.op.kid);
      assert.equal(s.jwksFetches, 1, 'the JWKS fetched once to check the signature');
      s.tokens = tokens;
    },
  ],
  [
    'fetchUserInfo: the same claims',
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      const info = await client.fetchUserInfo(s.config, tokens.access_token, tokens.claims().sub);
      assert.equal(info.email, EMAIL);
      assert.equal(info.email_verified, true);
      assert.deepEqual(info.groups, ['engineering']);
    },
  ],
  [
    ROTATE,
    async (s) => {
      const tokens = needs(s.tokens, CODE_GRANT);
      s.oldKid = jose.decodeProtectedHeader(tokens.id_token).kid;
      const kid = await s.op.rotateKeys();
      assert.notEqual(kid, s.oldKid);
      assert.equal(s.op.kid, kid);
      const { keys } = await (await fetch(s.jwksUri)).json();
      assert.deepEqual(
        keys.map((k) => k.kid),
        [kid],
      );
    },
  ],
  [
    AFTER_ROTATE,
    async (s) => {
      needs(s.oldKid, ROTATE);
      // A second relying party configuration (client_secret_post this time, openid-client's
      // default) holding the first one's JWKS, aged past the 60 s after which oauth4webapi
      // fetches a JWKS again for a kid it does not hold: the relying party that knows only the
      // old key, without the test waiting a minute.
      const config = await client.discovery(new URL(s.op.issuer), CLIENT.client_id, CLIENT.client_secret, undefined, {
        execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks],
      });
      const cached = client.getJwksCache(s.config);
      assert.deepEqual(
        cached.jwks.keys.map((k) => k.kid),
        [s.oldKid],
      );
      client.setJwksCache(config, { ...cached, uat: cached.uat - 61 });
      config[client.customFetch] = countingFetch(s);
      const before = s.jwksFetches;

      // The same browser and no login_hint: the sign-in and the grant outlived the rotation (a
      // lost one would end in access_denied for want of a hint).
      const request = await authorizationRequest(config);
      const callback = await followToRp(s.browser, request.url, RP_ORIGIN);
      const tokens = await exchange(config, callback, request);
      const { kid } = jose.decodeProtectedHeader(tokens.id_token);
      assert.notEqual(kid, s.oldKid);
      assert.equal(kid, s.op.kid);
      assert.equal(s.jwksFetches, before + 1, 'the JWKS fetched again for the unknown kid');
      assert.equal(tokens.claims().sub, s.tokens.claims().sub, 'the same sub');
      assert.deepEqual(tokens.claims().groups, ['engineering']);
    },
  ],
  [
    'an unknown login_hint: access_denied back at the relying party',
    async (s) => {
      const config = needs(s.config, DISCOVERY);
      const request = await authorizationRequest(config);
      const at = await followToRp(new Browser(), withLoginHint(request.url, 'mallory@corp.example'), RP_ORIGIN);
      const callback = new URL(at);
      assert.equal(callback.searchParams.get('error'), 'access_denied', at);
      assert.equal(callback.searchParams.get('state'), request.state);
      assert.equal(callback.searchParams.get('iss'), s.op.issuer);
      assert.equal(callback.searchParams.get('code'), null);
    },
  ],
]);
