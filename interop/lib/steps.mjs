// Steps of one library's walk through the server, as node:test tests run in order. A step that
// fails says what the library reported and what the server answered; a later step that needs
// its result says which step it waited for.

import { test } from 'node:test';

import { show } from './tessera.mjs';

/**
 * Runs `steps` of `library` in order: each `[name, fn]` is one test named `library: name`.
 * `fn(state)` reads what earlier steps left in `state` and adds to it.
 */
let failures = 0;

/** Whether a step of this file has failed so far. */
export function anyFailed() {
  return failures > 0;
}

export function walk(library, steps, state = {}) {
  for (const [name, fn] of steps) {
    test(`${library}: ${name}`, async () => {
      try {
        await fn(state);
      } catch (e) {
        failures += 1;
        if (e instanceof NotReached) throw e;
        const err = new Error(`${library}, step "${name}": ${await explain(e)}`);
        const frames = (e?.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
        err.stack = [err.message, ...frames.slice(0, 5)].join('\n');
        throw err;
      }
    });
  }
  return state;
}

export class NotReached extends Error {
  constructor(message) {
    super(message);
    this.stack = message;
  }
}

/** `value`, or the failure that says which earlier step did not produce it. */
export function needs(value, step) {
  if (value === undefined || value === null) {
    throw new NotReached(`not reached: needs the result of the step "${step}", which failed`);
  }
  return value;
}

/** What an error of openid-client, oauth4webapi, the MCP SDK or fetch says, with the server's answer. */
export async function explain(e) {
  if (!(e instanceof Error)) return String(e);
  const parts = [`${e.name}: ${e.message}`];
  if (e.code) parts.push(`code ${e.code}`);
  if (e.status) parts.push(`HTTP ${e.status}`);
  if (e.error) parts.push(`error=${e.error}`);
  if (e.error_description) parts.push(`error_description=${JSON.stringify(e.error_description)}`);
  const www = e.response?.headers?.get?.('www-authenticate');
  if (www) parts.push(`WWW-Authenticate: ${www}`);
  if (e.response instanceof Response && !e.response.bodyUsed) {
    const body = await e.response.text().catch(() => '');
    if (body) parts.push(`body: ${show(body)}`);
  }
  if (e.cause !== undefined) {
    parts.push(`answer: ${e.cause instanceof Error ? `${e.cause.name}: ${e.cause.message}` : show(e.cause)}`);
  }
  return parts.join('; ');
}
