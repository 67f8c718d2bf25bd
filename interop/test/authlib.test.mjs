// authlib (Python): the tenant's discovery documents loaded into authlib's metadata models,
// whose validate() must pass: OpenID Connect Discovery (OpenIDProviderMetadata) and RFC 8414
// (AuthorizationServerMetadata), with dynamic registration on so the registration endpoint is
// listed too. authlib is installed by interop/run (pip install --target), which passes its
// directory in INTEROP_PYTHONPATH.

import { execFile } from 'node:child_process';
import path from 'node:path';
import { after } from 'node:test';

import { ROOT, startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';

const SETUP = 'setup: the server, a tenant with dynamic registration on';
const SCRIPT = path.join(ROOT, 'interop', 'authlib', 'validate_metadata.py');

/** Runs the validation script; rejects with what authlib said. */
function validate(kind, url) {
  const pythonPath = process.env.INTEROP_PYTHONPATH;
  if (!pythonPath) {
    return Promise.reject(new Error('INTEROP_PYTHONPATH is not set: run the suite with interop/run, which installs authlib'));
  }
  return new Promise((resolve, reject) => {
    execFile(
      process.env.PYTHON || 'python3',
      [SCRIPT, kind, url],
      { env: { ...process.env, PYTHONPATH: pythonPath } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr.trim() || err.message)) : resolve(stdout.trim())),
    );
  });
}

let srv;
after(async () => {
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

walk('authlib', [
  [
    SETUP,
    async (s) => {
      srv = await startTessera();
      s.t = await srv.tenant('Acme');
      await s.t.allowDynamicRegistration();
    },
  ],
  [
    'OpenIDProviderMetadata(.well-known/openid-configuration).validate()',
    async (s) => {
      const t = needs(s.t, SETUP);
      await validate('oidc', `${t.issuer}/.well-known/openid-configuration`);
    },
  ],
  [
    'AuthorizationServerMetadata(RFC 8414 .well-known/oauth-authorization-server).validate()',
    async (s) => {
      const t = needs(s.t, SETUP);
      await validate('oauth2', `${srv.base}/.well-known/oauth-authorization-server/v1/tenants/${t.slug}`);
    },
  ],
]);
