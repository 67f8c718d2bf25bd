// The official MCP TypeScript SDK against a tenant, by the walk "Protect an MCP server with
// Tessera" in docs/oauth-oidc-mcp.md: its `sh` blocks are read from that file and run in order,
// as written, so the walk cannot drift from what works. What differs from a person's run is
// only where things live: free ports stand in for 127.0.0.1:8080 and 127.0.0.1:3000, the data
// directory is a temporary one (TESSERA__STORAGE__DATA_DIR, which `tessera serve` and `tessera
// admin` both read), `tessera` on PATH is the binary under test, and a browser without script
// (HTTP, cookies, forms) signs the user in on the hosted pages and approves the consent where a
// person uses a browser. The blocks that start a server or the client run in the background;
// the others run one after the other in one shell, so a variable set in one is there in the
// next, as in a person's terminal. Then the MCP server's side is checked directly: its
// protected resource metadata (RFC 9728) names the tenant, and a request without a token gets
// the challenge that leads a client there.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm, symlink, mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after } from 'node:test';

import { BIN, ROOT, atExit, serverEnv, show } from '../lib/tessera.mjs';
import { walk, needs, anyFailed, NotReached } from '../lib/steps.mjs';
import { Browser } from '../lib/user-agent.mjs';

const WALK_FILE = 'docs/oauth-oidc-mcp.md';
const SECTION = '## Protect an MCP server with Tessera';
const TESSERA_ADDR = '127.0.0.1:8080';
const MCP_ADDR = '127.0.0.1:3000';

/** The section's `sh` blocks, in order, and the user the walk signs in as. */
function readWalk() {
  const doc = readFileSync(path.join(ROOT, WALK_FILE), 'utf8');
  const start = doc.indexOf(`\n${SECTION}\n`);
  if (start < 0) return { error: `${WALK_FILE} has no section "${SECTION}"`, blocks: [] };
  const end = doc.indexOf('\n## ', start + SECTION.length + 2);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  const user = /\/users\b[\s\S]*?"email": "([^"]+)", "password": "([^"]+)"/.exec(section);
  if (!user) return { error: `the walk makes no user with an e-mail and a password (${SECTION})`, blocks };
  return { blocks, email: user[1], password: user[2] };
}

/** What a block does, by its first command. */
function kindOf(block) {
  const first = block.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? '';
  if (/^tessera serve\b/.test(first)) return 'tessera';
  if (/^node interop\/mcp\/server\.mjs\b/.test(first)) return 'mcp-server';
  if (/^node interop\/mcp\/client\.mjs\b/.test(first)) return 'mcp-client';
  return 'shell';
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A process the walk started in the background, its output kept. */
class Background {
  constructor(name, command, env) {
    this.name = name;
    this.output = [];
    this.child = spawn('bash', ['-c', command], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(code ?? signal)));
    atExit(() => process.kill(-this.child.pid, 'SIGKILL'));
    this.waiters = [];
    for (const stream of [this.child.stdout, this.child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.output.push(line);
        for (const w of this.waiters.splice(0)) w();
      });
    }
  }

  /** Waits (up to `ms`) for a line matching `re`; answers it. */
  async waitFor(re, ms = 30_000) {
    const deadline = Date.now() + ms;
    let exited = false;
    this.exited.then(() => {
      exited = true;
      for (const w of this.waiters.splice(0)) w();
    });
    for (;;) {
      const line = this.output.find((l) => re.test(l));
      if (line) return line;
      if (exited || Date.now() > deadline) {
        const what = exited ? 'ended' : `printed nothing in ${ms / 1000} s`;
        throw new Error(`${this.name} ${what} before a line matching ${re}; its output:\n${this.output.join('\n')}`);
      }
      await new Promise((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 250);
      });
    }
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-this.child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 10_000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}

/** One bash for the walk's plain blocks, so variables carry over as in a terminal. */
class Shell {
  constructor(env) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.output = [];
    this.waiters = [];
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    for (const stream of [this.child.stdout, this.child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.output.push(line);
        for (const w of this.waiters.splice(0)) w();
      });
    }
    this.child.stdin.write(`set -eo pipefail\ntrap 'echo "::failed:: $BASH_COMMAND" >&2' ERR\n`);
    this.n = 0;
  }

  /** Runs one block; answers its output, or throws with it and the command that failed. */
  async run(block) {
    const marker = `::block-${++this.n}-done::`;
    const from = this.output.length;
    // A block's last output may not end its line: the marker goes on a line of its own.
    this.child.stdin.write(`${block}\nprintf '\\n%s\\n' '${marker}'\n`);
    let exited = false;
    this.exited.then(() => {
      exited = true;
      for (const w of this.waiters.splice(0)) w();
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const out = this.output.slice(from);
      if (out.includes(marker)) return out.filter((l) => l !== marker).join('\n');
      if (exited || Date.now() > deadline) {
        throw new Error(`${exited ? 'a command failed' : 'no end within 60 s'}; the output:\n${out.join('\n')}`);
      }
      await new Promise((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 250);
      });
    }
  }

  close() {
    this.child.stdin.end();
    return this.exited;
  }
}

const background = [];
let shell;
let work;
after(async () => {
  await shell?.close();
  for (const b of background.reverse()) await b.stop();
  if (anyFailed()) {
    for (const b of background) console.error(`--- the output of ${b.name} ---\n${b.output.slice(-40).join('\n')}`);
  }
  if (work) await rm(work, { recursive: true, force: true });
});

const SETUP = "setup: the walk of docs/oauth-oidc-mcp.md, free ports, a temporary data directory";

/** A block's first command, to name its step. */
function firstCommand(block) {
  return block.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? '';
}

const w = readWalk();
walk('MCP TypeScript SDK', [
  [
    SETUP,
    async (s) => {
      if (w.error) throw new Error(w.error);
      const kinds = w.blocks.map(kindOf);
      for (const k of ['tessera', 'mcp-server', 'mcp-client']) {
        assert.equal(kinds.filter((x) => x === k).length, 1, `the walk has one ${k} block: ${kinds.join(', ')}`);
      }
      assert.ok(
        kinds.indexOf('tessera') < kinds.indexOf('mcp-server') && kinds.indexOf('mcp-server') < kinds.indexOf('mcp-client'),
        `the walk starts the server, then the MCP server, then the client: ${kinds.join(', ')}`,
      );
      work = await mkdtemp(path.join(tmpdir(), 'tessera-interop-mcp-'));
      const dir = work;
      atExit(() => rmSync(dir, { recursive: true, force: true }));
      const bin = path.join(work, 'bin');
      await mkdir(bin);
      await symlink(path.resolve(BIN), path.join(bin, 'tessera'));
      const tesseraPort = await freePort();
      let mcpPort = await freePort();
      while (mcpPort === tesseraPort) mcpPort = await freePort();
      s.tessera = `127.0.0.1:${tesseraPort}`;
      s.mcp = `127.0.0.1:${mcpPort}`;
      s.env = serverEnv({
        PATH: `${bin}:${process.env.PATH}`,
        TESSERA__STORAGE__DATA_DIR: path.join(work, 'data'),
        TESSERA__SERVER__LISTEN: s.tessera,
      });
      s.steps = w.blocks.map((block) => ({
        kind: kindOf(block),
        command: block.replaceAll(TESSERA_ADDR, s.tessera).replaceAll(MCP_ADDR, s.mcp),
      }));
      Object.assign(s, { email: w.email, password: w.password });
    },
  ],
  ...w.blocks.map((block, i) => [
    `MCP walk, block ${i + 1}: ${firstCommand(block)}`,
    async (s) => {
      needs(s.steps, SETUP);
      const step = s.steps[i];
      const name = `block ${i + 1}`;
      // A person stops at the first block that fails; so does the walk.
      if (s.failedBlock) throw new NotReached(`not reached: the walk stopped at ${s.failedBlock}, which failed`);
      s.failedBlock = name;
      if (step.kind === 'tessera') {
        const b = new Background(`tessera serve (walk ${name})`, step.command, s.env);
        background.push(b);
        await b.waitFor(/tessera listening on http:\/\//);
      } else if (step.kind === 'shell') {
        shell ??= new Shell(s.env);
        try {
          await shell.run(step.command);
        } catch (e) {
          throw new Error(`${name}: ${e.message}`);
        }
      } else if (step.kind === 'mcp-server') {
        const b = new Background(`the MCP server (walk ${name})`, step.command, s.env);
        background.push(b);
        await b.waitFor(/^MCP server listening on /);
        s.mcpServer = b;
      } else if (step.kind === 'mcp-client') {
        const b = new Background(`the MCP client (walk ${name})`, step.command, s.env);
        background.push(b);
        const url = await b.waitFor(/^https?:\/\/\S+\/oauth\/authorize\?/);
        // A person opens the URL, signs in and approves; the browser lands on the client's callback.
        const callback = await new Browser().signInAndApprove(url, s.email, s.password);
        const back = await fetch(callback);
        assert.equal(back.status, 200, `the client's callback ${callback} answered ${back.status}: ${await back.text()}`);
        let timer;
        const code = await Promise.race([b.exited, new Promise((r) => (timer = setTimeout(() => r('no end within 30 s'), 30_000)))]);
        clearTimeout(timer);
        assert.equal(code, 0, `the client ended with ${code}; its output:\n${b.output.join('\n')}`);
        s.clientOutput = b.output;
      }
      s.failedBlock = undefined;
    },
  ]),
  [
    'the client called the tool as the signed-in user',
    async (s) => {
      const out = needs(s.clientOutput, 'the walk block that runs the client').join('\n');
      assert.match(out, /^Tools: .*\blist_notes\b/m, out);
      const m = /^list_notes: 2 notes for user (\S+) \(client (tc_\S+), scopes notes:read\)/m.exec(out);
      assert.ok(m, `no tool result in the client's output:\n${out}`);
      const users = await adminJson(s.env, ['user', 'list', '--tenant', 'acme', '--email', s.email]);
      const user = (users.data ?? users.users ?? []).find((u) => u.email === s.email);
      assert.ok(user, `no user ${s.email}: ${show(users)}`);
      assert.equal(m[1], user.id, 'the token is the user it signed in');
    },
  ],
  [
    "the MCP server's protected resource metadata (RFC 9728) names the tenant's issuer",
    async (s) => {
      needs(s.mcpServer, 'the walk block that runs the MCP server');
      const mcpUrl = `http://${s.mcp}/mcp`;
      const r = await fetch(`http://${s.mcp}/.well-known/oauth-protected-resource/mcp`);
      assert.equal(r.status, 200);
      const prm = await r.json();
      assert.equal(prm.resource, mcpUrl);
      assert.deepEqual(prm.authorization_servers, [`http://${s.tessera}/v1/tenants/acme`]);
      assert.deepEqual(prm.scopes_supported, ['notes:read']);
      const challenge = await fetch(mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(challenge.status, 401);
      const www = challenge.headers.get('www-authenticate') ?? '';
      assert.match(www, new RegExp(`resource_metadata="http://${s.mcp}/\\.well-known/oauth-protected-resource/mcp"`), www);
      assert.match(www, /scope="notes:read"/, www);
    },
  ],
]);

/** `tessera admin ARGS` as the walk runs it (the socket found from the environment's data directory). */
function adminJson(env, args) {
  return new Promise((resolve, reject) => {
    const p = spawn('tessera', ['admin', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`tessera admin ${args.join(' ')}: ${err}`));
      else resolve(JSON.parse(out));
    });
  });
}
