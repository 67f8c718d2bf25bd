// The pysaml2 test IdP (interop/saml/idp.py) for the SAML tests: started on a free port with
// the suite's pinned Python packages (INTEROP_PYTHONPATH, set by interop/run), killed when the
// test process ends. `samlPost` reads the auto-posting form it (or any IdP) answers with.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { ROOT, atExit } from './tessera.mjs';

const IDP = path.join(ROOT, 'interop', 'saml', 'idp.py');

/**
 * Starts the IdP; answers `{ base, entityId, metadataUrl, registerSp(xml), close() }`.
 * `registerSp` posts an SP's metadata XML (its ACS and encryption certificate) to the IdP.
 * Bad responses for negative tests: append `&variant=…` (and `sign=`, `encrypt=`, `user=`,
 * `groups=`) to the IdP URL the server redirects to; see idp.py.
 */
export async function startSamlIdp() {
  const pythonPath = process.env.INTEROP_PYTHONPATH;
  if (!pythonPath) throw new Error('INTEROP_PYTHONPATH is not set: run the suite with interop/run, which installs pysaml2');
  const child = spawn('python3', [IDP, '--port', '0'], {
    env: { ...process.env, PYTHONPATH: pythonPath, PYTHONWARNINGS: 'ignore' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  atExit(() => child.kill('SIGKILL'));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the SAML IdP did not start within 30 s: ${stderr}`)), 30_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`the SAML IdP could not be started: ${e.message}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the SAML IdP exited (${code ?? signal}) before serving: ${stderr}`));
    });
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`no JSON in the SAML IdP's first line: ${line}`));
      }
    });
  });
  return {
    base: info.base,
    entityId: info.entity_id,
    metadataUrl: info.metadata_url,
    async registerSp(xml) {
      const res = await fetch(`${info.base}/sp`, {
        method: 'POST',
        headers: { 'content-type': 'application/samlmetadata+xml' },
        body: xml,
      });
      if (res.status !== 204) throw new Error(`the SAML IdP refused the SP metadata (${res.status}): ${await res.text()}`);
    },
    close() {
      child.kill('SIGKILL');
      return exited;
    },
  };
}

function unescapeHtml(s) {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&#x27;|&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attribute(tag, name) {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, 'i').exec(tag);
  return m ? unescapeHtml(m[1] ?? m[2]) : undefined;
}

/**
 * Reads an HTTP-POST binding page (an auto-submitting form): answers
 * `{ action, SAMLResponse, RelayState }` (RelayState undefined when the form has none).
 */
export function samlPost(page) {
  const form = /<form\b[^>]*>/i.exec(page);
  if (!form) throw new Error(`no form in the page: ${page.slice(0, 500)}`);
  const out = { action: attribute(form[0], 'action'), SAMLResponse: undefined, RelayState: undefined };
  for (const input of page.match(/<input\b[^>]*>/gi) ?? []) {
    const name = attribute(input, 'name');
    if (name === 'SAMLResponse' || name === 'RelayState') out[name] = attribute(input, 'value');
  }
  if (!out.action || !out.SAMLResponse) throw new Error(`not a SAML POST form: ${page.slice(0, 500)}`);
  return out;
}
