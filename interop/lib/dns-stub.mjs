// A nameserver for the tests that prove an organization's domain: answers TXT queries over
// UDP from a table the test fills (`publish`), NXDOMAIN for any other name. Enough of RFC 1035
// for one question per query.

import dgram from 'node:dgram';
import { atExit } from './tessera.mjs';

/** Starts the stub on 127.0.0.1; answers `{ address, publish(name, value), close() }`. */
export async function startDnsStub() {
  const table = new Map();
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, peer) => {
    const answer = respond(msg, table);
    if (answer) sock.send(answer, peer.port, peer.address);
  });
  await new Promise((resolve) => sock.bind(0, '127.0.0.1', resolve));
  // It must not keep the test process alive once the tests are done.
  sock.unref();
  let open = true;
  const close = () => {
    if (open) sock.close();
    open = false;
  };
  atExit(close);
  return {
    address: `127.0.0.1:${sock.address().port}`,
    publish(name, value) {
      const key = name.toLowerCase();
      table.set(key, [...(table.get(key) ?? []), value]);
    },
    close,
  };
}

/** The answer to one query, or null for a packet that is none. */
function respond(msg, table) {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return null;
  let at = 12;
  const labels = [];
  while (at < msg.length && msg[at] !== 0) {
    const len = msg[at];
    labels.push(msg.subarray(at + 1, at + 1 + len).toString('ascii'));
    at += 1 + len;
  }
  const questionEnd = at + 5;
  if (questionEnd > msg.length) return null;
  const qtype = msg.readUInt16BE(at + 1);
  const values = table.get(labels.join('.').toLowerCase());
  const answers = qtype === 16 && values ? values : [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(msg.readUInt16BE(0), 0);
  // QR, AA, RD copied, RA; NXDOMAIN when the name is unknown.
  const rd = msg.readUInt16BE(2) & 0x0100;
  header.writeUInt16BE(0x8480 | rd | (values ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  const records = answers.map((v) => {
    const text = Buffer.from(v, 'utf8');
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0);
    rr.writeUInt16BE(16, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(30, 6);
    rr.writeUInt16BE(text.length + 1, 10);
    return Buffer.concat([rr, Buffer.from([text.length]), text]);
  });
  return Buffer.concat([header, msg.subarray(12, questionEnd), ...records]);
}
