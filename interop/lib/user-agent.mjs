// The user's side of the authorization code flow, over HTTP: the tenant's own UI in API mode
// (the user's bearer token and `Accept: application/json`, then the consent decision), or a
// browser without script on the hosted pages (cookies, forms, redirects followed by hand).

import { show } from './tessera.mjs';

/**
 * API mode: forwards the relying party's authorize URL with the signed-in user's token and
 * approves what the consent screen shows. Answers the URL the browser is sent back to.
 */
export async function approveInApiMode(authorizeUrl, userAccessToken) {
  const shown = await getJson(authorizeUrl, userAccessToken);
  if (shown.redirect_to) return shown.redirect_to;
  if (shown.consent_required !== true) {
    throw new Error(`authorize (API mode) answered neither a consent screen nor a redirect: ${show(shown)}`);
  }
  const decision = { decision: 'approve', resource_commitment: shown.resource_commitment };
  for (const k of [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'nonce',
    'code_challenge',
    'code_challenge_method',
    'resource',
    'organization',
  ]) {
    if (shown[k] !== undefined && shown[k] !== null) decision[k] = shown[k];
  }
  const consentUrl = new URL(authorizeUrl);
  consentUrl.pathname = consentUrl.pathname.replace(/\/authorize$/, '/consent');
  consentUrl.search = '';
  const r = await fetch(consentUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${userAccessToken}`,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify(decision),
  });
  const body = await r.json().catch(() => null);
  if (r.status !== 200 || !body?.redirect_to) {
    throw new Error(`POST ${consentUrl} answered ${r.status}: ${show(body)}`);
  }
  return body.redirect_to;
}

async function getJson(url, bearer) {
  const r = await fetch(url, {
    headers: { accept: 'application/json', authorization: `Bearer ${bearer}`, 'accept-language': 'en' },
    redirect: 'manual',
  });
  const text = await r.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`GET ${url} (API mode) answered ${r.status} without JSON: ${show(text)}`);
  }
  if (r.status !== 200) throw new Error(`GET ${url} (API mode) answered ${r.status}: ${show(body)}`);
  return body;
}

/** A browser without script: a cookie jar, redirects followed by hand. */
export class Browser {
  constructor() {
    this.jar = new Map();
  }

  async send(url, init = {}) {
    const headers = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'accept-language': 'en', ...init.headers };
    if (this.jar.size) headers.cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      if (/max-age=0/i.test(c)) this.jar.delete(name);
      else this.jar.set(name, pair.slice(at + 1).trim());
    }
    const location = r.headers.get('location');
    return {
      url,
      status: r.status,
      location: location ? new URL(location, url).href : null,
      body: await r.text(),
    };
  }

  get(url) {
    return this.send(url);
  }

  /** Posts `fields`: an object, or `[name, value]` pairs. */
  post(url, fields) {
    return this.send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /**
   * Opens `authorizeUrl` as a person would, signs in on the hosted page with `email` and
   * `password` when it asks, approves the consent page, and follows the redirects until one
   * leaves the server (`origin`). Answers that last URL, the client's callback.
   */
  async signInAndApprove(authorizeUrl, email, password) {
    const origin = new URL(authorizeUrl).origin;
    let page = await this.get(authorizeUrl);
    for (let hops = 0; hops < 12; hops++) {
      if (page.location) {
        if (new URL(page.location).origin !== origin) return page.location;
        page = await this.get(page.location);
        continue;
      }
      if (page.status !== 200 && page.status !== 401) {
        throw new Error(`the hosted page ${page.url} answered ${page.status}: ${show(text(page.body))}`);
      }
      const signIn = form(page, 'name="password"');
      if (signIn) {
        if (page.status === 401) throw new Error(`the hosted sign-in refused ${email}: ${show(text(page.body))}`);
        // The password's button is the form's first: what a browser sends on Enter or a click.
        const submit = signIn.button('password');
        page = await this.post(signIn.action, [...signIn.fields, submit, ['email', email], ['password', password]]);
        continue;
      }
      const consent = form(page, 'name="commitment"');
      if (consent) {
        // What the browser sends: the hidden fields, the boxes left checked, the button pressed.
        page = await this.post(consent.action, [...consent.fields, consent.button('approve')]);
        continue;
      }
      throw new Error(`the hosted page ${page.url} shows neither a sign-in nor a consent form: ${show(text(page.body))}`);
    }
    throw new Error('too many redirects on the hosted pages');
  }
}

function unescape(v) {
  return v
    .replaceAll('&#38;', '&')
    .replaceAll('&amp;', '&')
    .replaceAll('&#39;', "'")
    .replaceAll('&#34;', '"')
    .replaceAll('&quot;', '"');
}

/**
 * The first form of the page holding `marker`: its action (the page itself when it names
 * none), the fields a browser submits with it (hidden inputs and checked boxes, in order) and
 * `button(value)`, the name and value of the submit button with that value.
 */
export function form(page, marker) {
  for (const m of page.body.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)) {
    if (!m[2].includes(marker)) continue;
    const act = /action="([^"]*)"/.exec(m[1]);
    const attr = (tag, name) => {
      const a = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
      return a ? unescape(a[1]) : null;
    };
    const fields = [];
    for (const [input] of m[2].matchAll(/<input[^>]*>/g)) {
      const type = attr(input, 'type');
      const checked = /\schecked\b/.test(input);
      if (type === 'hidden' || (type === 'checkbox' && checked)) {
        fields.push([attr(input, 'name'), attr(input, 'value') ?? 'on']);
      }
    }
    const buttons = [...m[2].matchAll(/<button[^>]*>/g)].map(([b]) => [attr(b, 'name'), attr(b, 'value')]);
    return {
      action: act ? new URL(unescape(act[1]), page.url).href : page.url,
      fields,
      button(value) {
        const b = buttons.find(([name, v]) => name && v === value);
        if (!b) throw new Error(`no "${value}" button on ${page.url}`);
        return b;
      },
    };
  }
  return null;
}

/** The visible text of a page, for an error message. */
function text(html) {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
