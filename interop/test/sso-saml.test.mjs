// SAML 2.0 single sign-on against pysaml2's identity provider (interop/saml/idp.py): an
// organization proves its domain by DNS (a local nameserver), creates a connection from the
// IdP's metadata URL, and the IdP is given the connection's service-provider metadata. A
// browser without script goes out (an AuthnRequest by the HTTP-Redirect binding) and back
// (the response posted to the ACS); the app trades the code for tokens that carry the
// organization. Encrypted assertions sign in too. Every bad response the IdP can make is
// refused: unsigned, signed by another key or with SHA-1, the XML signature wrapping shapes
// XSW1-XSW8, two assertions, a wrong audience, recipient or destination, expired or not yet
// valid, a NameID split by a comment; and an unsolicited response is used once, also after
// the server restarts (the replay cache is on disk). A response the IdP made for one
// connection is refused at another connection of the same IdP, solicited or not.

import assert from 'node:assert/strict';
import { after } from 'node:test';

import { startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';
import { Browser } from '../lib/user-agent.mjs';
import { startSamlIdp, samlPost } from '../lib/saml-idp.mjs';
import { startDnsStub } from '../lib/dns-stub.mjs';

const APP = 'https://app.example';
const BACK = `${APP}/sso-done`;
const USER = 'alice@contoso.example';

const SETUP = 'setup: the IdP, a nameserver, the server, a tenant, an organization with a proven domain';
const CONNECT = 'a connection from the IdP\'s metadata URL; the IdP registers the service provider';
const SIGN_IN = 'a sign-in by the IdP: a new member, tokens with the organization';
const ENCRYPTED = 'an encrypted assertion (AES-256-CBC under RSA-OAEP) signs in';
const REFUSED = 'every bad response is refused';
const REPLAY = 'an unsolicited response is used once, also after a restart';
const OTHER = 'a response the IdP made for one connection is refused at another connection';

let srv;
let env;
let dns;
let idp;
after(async () => {
  dns?.close();
  await idp?.close();
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

function payload(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
}

/** Posts an IdP's form page to the ACS as the browser would: the URL the app is sent to. */
async function post(browser, page) {
  const form = samlPost(page);
  const fields = { SAMLResponse: form.SAMLResponse };
  if (form.RelayState) fields.RelayState = form.RelayState;
  const back = await browser.post(form.action, fields);
  assert.equal(back.status, 302, `the ACS answered ${back.status}: ${back.body}`);
  return new URL(back.location);
}

/** Out to the IdP (with the test's parameters) and back: the URL the app is sent to. */
async function signIn(s, params = {}) {
  const browser = new Browser();
  const out = await browser.get(`${s.start}?redirect_uri=${encodeURIComponent(BACK)}`);
  assert.equal(out.status, 302, `start answered ${out.status}: ${out.body}`);
  const idp = new URL(out.location);
  assert.ok(idp.searchParams.get('SAMLRequest'), `no AuthnRequest in ${idp}`);
  for (const [k, v] of Object.entries({ user: USER, ...params })) idp.searchParams.set(k, v);
  const page = await browser.get(idp.href);
  assert.equal(page.status, 200, `the IdP answered ${page.status}: ${page.body.slice(0, 300)}`);
  return post(browser, page.body);
}

walk('SAML 2.0 (pysaml2)', [
  [
    SETUP,
    async (s) => {
      s.idp = await startSamlIdp();
      idp = s.idp;
      s.dns = await startDnsStub();
      dns = s.dns;
      env = { TESSERA__DNS__NAMESERVERS: `["${s.dns.address}"]`, TESSERA__SSO__ALLOW_PRIVATE_TARGETS: 'true' };
      srv = await startTessera(env);
      const t = await srv.tenant('Federated SAML');
      await t.dash(200, 'PUT', '/settings/urls', { site_url: APP, redirect_urls: [BACK] });
      const org = await t.provenOrganization(s.dns, 'Contoso', 'contoso.example');
      Object.assign(s, { t, org });
    },
  ],
  [
    CONNECT,
    async (s) => {
      const t = needs(s.t, SETUP);
      const c = await t.dash(201, 'POST', `/organizations/${s.org}/connections`, {
        name: 'Contoso IdP',
        type: 'saml',
        saml: { metadata_url: s.idp.metadataUrl, allow_idp_initiated: true, idp_initiated_redirect_uri: BACK },
        group_roles: [{ group: 'admins', role: 'admin' }],
      });
      assert.equal(c.type, 'saml');
      assert.equal(c.saml.idp_entity_id, s.idp.entityId);
      assert.match(c.saml.sp.certificate, /BEGIN CERTIFICATE/);
      const md = await fetch(c.saml.sp.metadata_url);
      assert.equal(md.status, 200);
      const xml = await md.text();
      assert.ok(xml.includes(c.saml.sp.acs_url), xml);
      await s.idp.registerSp(xml);
      Object.assign(s, { connection: c.id, start: c.start_url, entityId: c.saml.sp.entity_id });
    },
  ],
  [
    SIGN_IN,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      const back = await signIn(s, { groups: 'admins,staff' });
      const code = back.searchParams.get('code');
      assert.ok(code, `back without a code: ${back}`);
      const login = await srv.expect(200, 'POST', '/v1/auth/sso/session', { apiKey: t.apiKey, json: { code } });
      const claims = payload(login.access_token);
      assert.equal(claims.org_id, s.org);
      assert.equal(claims.org_role, 'admin', 'the group admins gives the role admin');
      assert.deepEqual(claims.amr, ['fed']);
      assert.equal(login.user.email, USER);
      // The next sign-in is the same user (the link), not a new account.
      const again = await signIn(s, { sign: 'response' });
      const second = await srv.expect(200, 'POST', '/v1/auth/sso/session', {
        apiKey: t.apiKey,
        json: { code: again.searchParams.get('code') },
      });
      assert.equal(second.user.id, login.user.id);
    },
  ],
  [
    ENCRYPTED,
    async (s) => {
      needs(s.start, CONNECT);
      const back = await signIn(s, { encrypt: '1', sign: 'both' });
      assert.ok(back.searchParams.get('code'), `refused: ${back}`);
    },
  ],
  [
    REFUSED,
    async (s) => {
      needs(s.start, CONNECT);
      const variants = [
        'unsigned',
        'other_key',
        'sha1',
        'xsw1',
        'xsw2',
        'xsw3',
        'xsw4',
        'xsw5',
        'xsw6',
        'xsw7',
        'xsw8',
        'two_assertions',
        'wrong_audience',
        'wrong_recipient',
        'wrong_destination',
        'expired',
        'not_yet_valid',
        'comment_nameid',
      ];
      const accepted = [];
      for (const variant of variants) {
        const back = await signIn(s, { variant });
        if (back.searchParams.get('code') || back.searchParams.get('error') !== 'invalid_assertion') {
          accepted.push(`${variant}: ${back.search}`);
        }
      }
      assert.deepEqual(accepted, [], 'bad responses that were not refused');
    },
  ],
  [
    REPLAY,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      const idp = new URL('/idp-initiated', s.idp.base);
      idp.searchParams.set('sp', s.entityId);
      idp.searchParams.set('user', USER);
      const page = (await new Browser().get(idp.href)).body;
      const first = await post(new Browser(), page);
      assert.ok(first.searchParams.get('code'), `the unsolicited response was refused: ${first}`);
      const second = await post(new Browser(), page);
      assert.equal(second.searchParams.get('error'), 'assertion_replayed', `${second}`);
      await srv.stop();
      srv = await startTessera(env, srv);
      const third = await post(new Browser(), page);
      assert.equal(third.searchParams.get('error'), 'assertion_replayed', `after a restart: ${third}`);
      // The server still signs in.
      const fresh = await post(new Browser(), (await new Browser().get(idp.href)).body);
      const code = fresh.searchParams.get('code');
      assert.ok(code, `${fresh}`);
      await srv.expect(200, 'POST', '/v1/auth/sso/session', { apiKey: t.apiKey, json: { code } });
    },
  ],
  [
    // Last: the restart above gives it a fresh count of sign-ins begun from this address.
    OTHER,
    async (s) => {
      const t = needs(s.t, SETUP);
      needs(s.start, CONNECT);
      // A second connection of the organization to the same IdP: the same issuer, the same
      // signing key; only the service provider (entity id, ACS) is another.
      const b = await t.dash(201, 'POST', `/organizations/${s.org}/connections`, {
        name: 'Contoso IdP, again',
        type: 'saml',
        saml: { metadata_url: s.idp.metadataUrl, allow_idp_initiated: true, idp_initiated_redirect_uri: BACK },
      });
      assert.equal(b.saml.idp_entity_id, s.idp.entityId);
      await s.idp.registerSp(await (await fetch(b.saml.sp.metadata_url)).text());
      // B signs in with its own responses: what is refused below is not B being broken.
      const own = await signIn({ start: b.start_url });
      assert.ok(own.searchParams.get('code'), `B refused its own response: ${own}`);
      const refused = `${BACK}?error=invalid_assertion`;

      // Solicited: one browser begins a sign-in at B and one at A; the IdP answers A's
      // request (A's audience, ACS and InResponseTo), and that response goes to B's ACS with
      // B's RelayState.
      const browser = new Browser();
      const begin = async (start) => {
        const out = await browser.get(`${start}?redirect_uri=${encodeURIComponent(BACK)}`);
        assert.equal(out.status, 302, `start answered ${out.status}: ${out.body}`);
        return new URL(out.location);
      };
      const relayB = (await begin(b.start_url)).searchParams.get('RelayState');
      assert.ok(relayB, 'no RelayState in the request to the IdP');
      const toIdp = await begin(s.start);
      toIdp.searchParams.set('user', USER);
      const page = await browser.get(toIdp.href);
      assert.equal(page.status, 200, `the IdP answered ${page.status}: ${page.body.slice(0, 300)}`);
      const forA = samlPost(page.body);
      assert.notEqual(forA.action, b.saml.sp.acs_url);
      const atB = await browser.post(b.saml.sp.acs_url, { SAMLResponse: forA.SAMLResponse, RelayState: relayB });
      assert.equal(atB.status, 302, `B's ACS answered ${atB.status}: ${atB.body}`);
      assert.equal(atB.location, refused, 'A\'s response was taken at B');
      // The same response at A's own ACS signs in: it was refused for being A's, not for
      // being bad.
      const atA = await post(browser, page.body);
      assert.ok(atA.searchParams.get('code'), `A refused its own response: ${atA}`);

      // Unsolicited (B takes IdP-initiated responses too): no InResponseTo to tell them
      // apart, only the audience, the recipient and the destination.
      const unsolicited = new URL('/idp-initiated', s.idp.base);
      unsolicited.searchParams.set('sp', s.entityId);
      unsolicited.searchParams.set('user', USER);
      const pushed = (await new Browser().get(unsolicited.href)).body;
      const atBAgain = await new Browser().post(b.saml.sp.acs_url, { SAMLResponse: samlPost(pushed).SAMLResponse });
      assert.equal(atBAgain.status, 302, `B's ACS answered ${atBAgain.status}: ${atBAgain.body}`);
      assert.equal(atBAgain.location, refused, 'A\'s unsolicited response was taken at B');
      const atAAgain = await post(new Browser(), pushed);
      assert.ok(atAAgain.searchParams.get('code'), `A refused its own unsolicited response: ${atAAgain}`);
    },
  ],
]);
