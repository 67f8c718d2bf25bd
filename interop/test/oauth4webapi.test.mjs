// oauth4webapi (v3), as its examples use it: discovery (OpenID and RFC 8414), the code flow
// with PKCE and a nonce for a confidential client (client_secret_post, as in its examples),
// processAuthorizationCodeResponse with the ID token required, userinfo, refresh,
// introspection and revocation; then RFC 7591 dynamic registration of a public client, whose
// code flow asks for a resource (RFC 8707) and whose access token a resource server checks
// with validateJwtAccessToken (RFC 9068). The user's side is the tenant's UI in API mode.

import assert from 'node:assert/strict';
import { after } from 'node:test';

import * as oauth from 'oauth4webapi';

import { startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';
import { approveInApiMode } from '../lib/user-agent.mjs';

const REDIRECT_URI = 'https://rp.example/callback';
const NATIVE_REDIRECT_URI = 'http://127.0.0.1:53682/callback';
const API = 'https://api.acme.example/orders';
const EMAIL = 'writer@example.com';
// Plain http on loopback: the server under test listens on 127.0.0.1.
const insecure = { [oauth.allowInsecureRequests]: true };

// The steps that later ones build on.
const SETUP =
  'setup: the server, a tenant, a confidential client registered without a method, a resource, a user';
const DISCOVERY = 'discoveryRequest and processDiscoveryResponse (OpenID and RFC 8414)';
const CODE_FLOW =
  'the code flow with PKCE and a nonce: validateAuthResponse, processAuthorizationCodeResponse (client_secret_post)';
const REFRESH = 'refreshTokenGrantRequest and processRefreshTokenResponse';
const DCR = 'dynamicClientRegistrationRequest and processDynamicClientRegistrationResponse (RFC 7591)';
const PUBLIC_FLOW = 'the registered public client: the code flow with a resource (RFC 8707), oauth.None()';

let srv;
after(async () => {
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

/** The code flow up to the callback: PKCE, a nonce and a state, the user's consent. */
async function authorize(as, client, redirectUri, scope, userToken, extra = {}) {
  const code_verifier = oauth.generateRandomCodeVerifier();
  const code_challenge = await oauth.calculatePKCECodeChallenge(code_verifier);
  const nonce = oauth.generateRandomNonce();
  const state = oauth.generateRandomState();
  const authorizationUrl = new URL(as.authorization_endpoint);
  authorizationUrl.searchParams.set('client_id', client.client_id);
  authorizationUrl.searchParams.set('redirect_uri', redirectUri);
  authorizationUrl.searchParams.set('response_type', 'code');
  authorizationUrl.searchParams.set('scope', scope);
  authorizationUrl.searchParams.set('code_challenge', code_challenge);
  authorizationUrl.searchParams.set('code_challenge_method', 'S256');
  authorizationUrl.searchParams.set('nonce', nonce);
  authorizationUrl.searchParams.set('state', state);
  for (const [k, v] of Object.entries(extra)) authorizationUrl.searchParams.set(k, v);
  const callback = new URL(await approveInApiMode(authorizationUrl.href, userToken));
  return { callback, code_verifier, nonce, state };
}

walk('oauth4webapi', [
  [
    SETUP,
    async (s) => {
      srv = await startTessera();
      const t = await srv.tenant('Acme');
      const c = await t.registerClient({
        client_type: 'confidential',
        redirect_uris: [REDIRECT_URI],
        allowed_scopes: ['openid', 'email', 'offline_access'],
      });
      await t.resourceWithScope(API, 'orders:read');
      s.user = await t.createUser(EMAIL);
      s.userToken = (await t.login(EMAIL)).access_token;
      Object.assign(s, { t, client: { client_id: c.client_id }, clientAuth: oauth.ClientSecretPost(c.client_secret) });
    },
  ],
  [
    DISCOVERY,
    async (s) => {
      const issuer = new URL(needs(s.t, SETUP).issuer);
      s.as = await oauth
        .discoveryRequest(issuer, { algorithm: 'oidc', ...insecure })
        .then((response) => oauth.processDiscoveryResponse(issuer, response));
      const rfc8414 = await oauth
        .discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure })
        .then((response) => oauth.processDiscoveryResponse(issuer, response));
      assert.equal(s.as.issuer, issuer.href);
      assert.deepEqual(rfc8414, s.as, 'both documents are the same metadata');
      assert.ok(s.as.code_challenge_methods_supported?.includes('S256'));
    },
  ],
  [
    CODE_FLOW,
    async (s) => {
      const as = needs(s.as, DISCOVERY);
      const { callback, code_verifier, nonce, state } = await authorize(
        as,
        s.client,
        REDIRECT_URI,
        'openid email offline_access',
        s.userToken,
      );
      const params = oauth.validateAuthResponse(as, s.client, callback, state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        s.client,
        s.clientAuth,
        params,
        REDIRECT_URI,
        code_verifier,
        insecure,
      );
      const result = await oauth.processAuthorizationCodeResponse(as, s.client, response, {
        expectedNonce: nonce,
        requireIdToken: true,
      });
      const claims = oauth.getValidatedIdTokenClaims(result);
      assert.equal(claims.sub, s.user.id);
      assert.equal(claims.email, EMAIL);
      s.tokens = result;
    },
  ],
  [
    'userInfoRequest and processUserInfoResponse',
    async (s) => {
      const tokens = needs(s.tokens, CODE_FLOW);
      const response = await oauth.userInfoRequest(s.as, s.client, tokens.access_token, insecure);
      const info = await oauth.processUserInfoResponse(s.as, s.client, s.user.id, response);
      assert.equal(info.email, EMAIL);
    },
  ],
  [
    REFRESH,
    async (s) => {
      const tokens = needs(s.tokens, CODE_FLOW);
      const response = await oauth.refreshTokenGrantRequest(s.as, s.client, s.clientAuth, tokens.refresh_token, insecure);
      s.refreshed = await oauth.processRefreshTokenResponse(s.as, s.client, response);
      assert.ok(s.refreshed.access_token);
      assert.notEqual(s.refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotates');
    },
  ],
  [
    'introspectionRequest and processIntrospectionResponse',
    async (s) => {
      const fresh = needs(s.refreshed, REFRESH);
      const response = await oauth.introspectionRequest(s.as, s.client, s.clientAuth, fresh.access_token, insecure);
      const info = await oauth.processIntrospectionResponse(s.as, s.client, response);
      assert.equal(info.active, true);
      assert.equal(info.sub, s.user.id);
      assert.equal(info.client_id, s.client.client_id);
    },
  ],
  [
    'revocationRequest and processRevocationResponse',
    async (s) => {
      const fresh = needs(s.refreshed, REFRESH);
      const response = await oauth.revocationRequest(s.as, s.client, s.clientAuth, fresh.refresh_token, insecure);
      await oauth.processRevocationResponse(response);
      const check = await oauth.introspectionRequest(s.as, s.client, s.clientAuth, fresh.access_token, insecure);
      const info = await oauth.processIntrospectionResponse(s.as, s.client, check);
      assert.equal(info.active, false, "the revoked grant's access token is inactive");
    },
  ],
  [
    DCR,
    async (s) => {
      const t = needs(s.t, SETUP);
      await t.allowDynamicRegistration();
      const issuer = new URL(t.issuer);
      // The metadata names the registration endpoint once the tenant allows it.
      const as = await oauth
        .discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure })
        .then((response) => oauth.processDiscoveryResponse(issuer, response));
      assert.equal(as.registration_endpoint, `${t.issuer}/oauth/register`);
      const response = await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: 'Native App',
          redirect_uris: [NATIVE_REDIRECT_URI],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
          scope: 'openid email offline_access orders:read',
        },
        insecure,
      );
      s.publicClient = await oauth.processDynamicClientRegistrationResponse(response);
      assert.ok(s.publicClient.client_id);
      assert.equal(s.publicClient.client_secret, undefined, 'a public client has no secret');
      s.as2 = as;
    },
  ],
  [
    PUBLIC_FLOW,
    async (s) => {
      const client = needs(s.publicClient, DCR);
      const { callback, code_verifier, nonce, state } = await authorize(
        s.as2,
        client,
        NATIVE_REDIRECT_URI,
        'openid email offline_access orders:read',
        s.userToken,
        { resource: API },
      );
      const params = oauth.validateAuthResponse(s.as2, client, callback, state);
      const response = await oauth.authorizationCodeGrantRequest(
        s.as2,
        client,
        oauth.None(),
        params,
        NATIVE_REDIRECT_URI,
        code_verifier,
        { ...insecure, additionalParameters: { resource: API } },
      );
      s.publicTokens = await oauth.processAuthorizationCodeResponse(s.as2, client, response, {
        expectedNonce: nonce,
        requireIdToken: true,
      });
      assert.equal(oauth.getValidatedIdTokenClaims(s.publicTokens).sub, s.user.id);
      assert.equal(s.publicTokens.scope, 'openid email offline_access orders:read');
    },
  ],
  [
    "validateJwtAccessToken: the resource server's check of the access token (RFC 9068)",
    async (s) => {
      const tokens = needs(s.publicTokens, PUBLIC_FLOW);
      const request = new Request(API, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      const claims = await oauth.validateJwtAccessToken(s.as2, request, API, insecure);
      assert.equal(claims.sub, s.user.id);
      assert.equal(claims.client_id, s.publicClient.client_id);
      assert.equal(claims.scope, 'openid email offline_access orders:read');
    },
  ],
  [
    'a client registered with id_token_signed_response_alg RS256 gets RS256 ID tokens',
    async (s) => {
      const as = needs(s.as2, DCR);
      const response = await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: 'RS256 Relying Party',
          redirect_uris: [NATIVE_REDIRECT_URI],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
          id_token_signed_response_alg: 'RS256',
          scope: 'openid email',
        },
        insecure,
      );
      const registered = await oauth.processDynamicClientRegistrationResponse(response);
      // The client expects what it registered (OpenID Connect Dynamic Client Registration 2):
      // oauth4webapi then takes only an RS256 ID token.
      const client = { ...registered, id_token_signed_response_alg: 'RS256' };
      const { callback, code_verifier, nonce, state } = await authorize(as, client, NATIVE_REDIRECT_URI, 'openid email', s.userToken);
      const params = oauth.validateAuthResponse(as, client, callback, state);
      const result = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, NATIVE_REDIRECT_URI, code_verifier, insecure),
        { expectedNonce: nonce, requireIdToken: true },
      );
      assert.equal(oauth.getValidatedIdTokenClaims(result).sub, s.user.id);
      assert.equal(JSON.parse(Buffer.from(result.id_token.split('.')[0], 'base64url')).alg, 'RS256');
      assert.equal(registered.id_token_signed_response_alg, 'RS256', 'the registration answer keeps the algorithm');
      assert.ok(as.id_token_signing_alg_values_supported.includes('RS256'), 'discovery lists RS256');
    },
  ],
  [
    'the registered public client: userinfo, refresh and revocation',
    async (s) => {
      const client = needs(s.publicClient, DCR);
      const tokens = needs(s.publicTokens, PUBLIC_FLOW);
      const info = await oauth.processUserInfoResponse(
        s.as2,
        client,
        s.user.id,
        await oauth.userInfoRequest(s.as2, client, tokens.access_token, insecure),
      );
      assert.equal(info.email, EMAIL);
      const fresh = await oauth.processRefreshTokenResponse(
        s.as2,
        client,
        await oauth.refreshTokenGrantRequest(s.as2, client, oauth.None(), tokens.refresh_token, {
          ...insecure,
          additionalParameters: { resource: API },
        }),
      );
      assert.ok(fresh.access_token && fresh.refresh_token);
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(s.as2, client, oauth.None(), fresh.refresh_token, insecure),
      );
      const again = await oauth.refreshTokenGrantRequest(s.as2, client, oauth.None(), fresh.refresh_token, insecure);
      await assert.rejects(
        oauth.processRefreshTokenResponse(s.as2, client, again),
        (e) => e.error === 'invalid_grant',
        'the revoked refresh token is invalid_grant',
      );
    },
  ],
]);
