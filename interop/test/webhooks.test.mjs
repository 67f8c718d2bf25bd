// standardwebhooks (npm), as its README uses it: `new Webhook(secret).verify(body, headers)` on
// every delivery a receiver of the suite gets, for a test event and a real one, and across a
// secret rotation, when each of the two secrets verifies on its own.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { startTessera } from '../lib/tessera.mjs';
import { walk, needs, anyFailed } from '../lib/steps.mjs';

const SETUP = 'setup: the server (private targets allowed), a tenant, a receiver, an endpoint';
const ROTATE = 'rotate-secret';

/** An HTTP receiver on 127.0.0.1 that keeps every request and answers 204. */
async function startReceiver() {
  const got = [];
  const waiters = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks/tessera`,
    /** The first delivery not yet taken whose event is `type`; waits up to 20 s. */
    async next(type, taken) {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const found = got.find((d) => !taken.has(d) && JSON.parse(d.body).type === type);
        if (found) {
          taken.add(found);
          return found;
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new Error(`no ${type} delivery within 20 s; received: ${got.map((d) => d.body).join(' | ') || 'nothing'}`);
        }
        await new Promise((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, Math.min(left, 500));
        });
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Whether the standardwebhooks library accepts the delivery under `secret`. */
function verifies(secret, delivery) {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch {
    return false;
  }
}

let srv;
let receiver;
after(async () => {
  await receiver?.close();
  if (!srv) return;
  await srv.stop();
  if (anyFailed()) console.error(`--- the end of the server's log ---\n${await srv.logTail()}`);
  await srv.remove();
});

walk('standardwebhooks', [
  [
    SETUP,
    async (s) => {
      srv = await startTessera({ TESSERA__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true' });
      receiver = await startReceiver();
      const t = await srv.tenant('Acme');
      const ep = await t.dash(201, 'POST', '/webhooks', {
        url: receiver.url,
        event_types: ['user.created', 'user.deleted'],
        description: 'the interop receiver',
      });
      assert.match(ep.secret, /^whsec_/);
      Object.assign(s, { t, ep, taken: new Set() });
    },
  ],
  [
    'Webhook.verify: the test event',
    async (s) => {
      needs(s.ep, SETUP);
      const { t, ep } = s;
      await t.dash(202, 'POST', `/webhooks/${ep.id}/test`);
      const d = await receiver.next('webhook.test', s.taken);
      const payload = new Webhook(ep.secret).verify(d.body, d.headers);
      assert.equal(payload.type, 'webhook.test');
      assert.equal(payload.data.endpoint_id, ep.id);
      assert.equal(d.headers['content-type'], 'application/json');
    },
  ],
  [
    'Webhook.verify: a real event (user.created)',
    async (s) => {
      needs(s.ep, SETUP);
      const { t, ep } = s;
      const user = await t.createUser('hooked@example.com');
      const d = await receiver.next('user.created', s.taken);
      const payload = new Webhook(ep.secret).verify(d.body, d.headers);
      assert.equal(payload.data.user_id, user.id);
      assert.ok(!d.body.includes('hooked@example.com'), 'no address in the event');
    },
  ],
  [
    'Webhook.verify: a forged body, a wrong secret and an old timestamp are refused',
    async (s) => {
      needs(s.ep, SETUP);
      const { t, ep } = s;
      await t.dash(202, 'POST', `/webhooks/${ep.id}/test`);
      const d = await receiver.next('webhook.test', s.taken);
      assert.ok(verifies(ep.secret, d));
      assert.ok(!verifies(ep.secret, { ...d, body: d.body.replace('webhook.test', 'user.deleted') }), 'forged body');
      assert.ok(!verifies('whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD', d), 'another secret');
      const stale = String(Number(d.headers['webhook-timestamp']) - 600);
      assert.ok(!verifies(ep.secret, { ...d, headers: { ...d.headers, 'webhook-timestamp': stale } }), 'a replay');
    },
  ],
  [
    ROTATE,
    async (s) => {
      needs(s.ep, SETUP);
      const { t, ep } = s;
      await t.reauth();
      const rotated = await t.dash(200, 'POST', `/webhooks/${ep.id}/rotate-secret`);
      assert.match(rotated.secret, /^whsec_/);
      assert.notEqual(rotated.secret, ep.secret);
      assert.ok(Date.parse(rotated.previous_secret_expires_at) > Date.now(), 'an overlap');
      s.newSecret = rotated.secret;
    },
  ],
  [
    'Webhook.verify during the overlap: the old and the new secret each verify',
    async (s) => {
      const newSecret = needs(s.newSecret, ROTATE);
      await s.t.dash(202, 'POST', `/webhooks/${s.ep.id}/test`);
      const d = await receiver.next('webhook.test', s.taken);
      assert.equal(d.headers['webhook-signature'].split(' ').length, 2, 'two signatures');
      assert.ok(verifies(s.ep.secret, d), 'the old secret verifies');
      assert.ok(verifies(newSecret, d), 'the new secret verifies');
      const user = await s.t.createUser('rotated@example.com');
      const created = await receiver.next('user.created', s.taken);
      assert.equal(new Webhook(newSecret).verify(created.body, created.headers).data.user_id, user.id);
      assert.ok(verifies(s.ep.secret, created));
    },
  ],
]);
