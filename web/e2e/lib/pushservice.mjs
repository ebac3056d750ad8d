// @ts-check
// A loopback Web Push service for the push test: it issues subscriptions
// (an endpoint on itself, a P-256 key pair and a 16-byte auth secret, as a
// browser's push service and user agent would), and for every message POSTed
// to an endpoint it checks the VAPID header (RFC 8292: an ES256 JWT whose
// signature verifies against k=, aud = this origin, exp ahead) and decrypts
// the body (RFC 8291 aes128gcm with RFC 8188 records), then answers 201, or
// what the test asked for (410: the subscription is gone).
import { createECDH, createPublicKey, createDecipheriv, hkdfSync, randomBytes, verify } from 'node:crypto';
import { createServer } from 'node:http';

/** @param {Buffer | Uint8Array} b */
export const b64url = (b) => Buffer.from(b).toString('base64url');

/**
 * Decrypts an aes128gcm body (RFC 8291 § 3.4, RFC 8188 § 2) for the user
 * agent's key pair and auth secret; returns the plaintext.
 * @param {Buffer} body
 * @param {import('node:crypto').ECDH} ua the subscription's key pair
 * @param {Buffer} auth the 16-byte auth secret
 */
export function decryptAes128gcm(body, ua, auth) {
  if (body.length < 21) throw new Error(`body of ${body.length} bytes: no aes128gcm header`);
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  if (idlen !== 65 || asPublic[0] !== 4) throw new Error(`keyid of ${idlen} bytes: not the sender's uncompressed P-256 key`);
  if (rs < 18) throw new Error(`record size ${rs} too small`);
  const ecdhSecret = ua.computeSecret(asPublic);
  const uaPublic = ua.getPublicKey();
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, auth, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const records = body.subarray(21 + idlen);
  /** @type {Buffer[]} */
  const out = [];
  for (let seq = 0, off = 0; off < records.length; seq++, off += rs) {
    const rec = records.subarray(off, Math.min(off + rs, records.length));
    const iv = Buffer.from(nonce);
    iv.writeUInt32BE((iv.readUInt32BE(8) ^ seq) >>> 0, 8); // the record's sequence number (fewer than 2^32 here)
    const d = createDecipheriv('aes-128-gcm', cek, iv);
    d.setAuthTag(rec.subarray(rec.length - 16));
    const plain = Buffer.concat([d.update(rec.subarray(0, rec.length - 16)), d.final()]);
    // Padding: a delimiter (2 in the last record, 1 before) and zeros.
    let end = plain.length - 1;
    while (end >= 0 && plain[end] === 0) end--;
    const last = off + rs >= records.length;
    if (end < 0 || plain[end] !== (last ? 2 : 1)) throw new Error(`record ${seq}: bad padding delimiter`);
    out.push(plain.subarray(0, end));
  }
  return Buffer.concat(out);
}

/**
 * Checks a VAPID Authorization header ("vapid t=<jwt>, k=<key>"); returns
 * the JWT's claims and the key, or throws saying what is wrong.
 * @param {string | undefined} header
 * @param {string} audience the push service's origin
 */
export function verifyVapid(header, audience) {
  const m = /^vapid\s+t=([\w-]+\.[\w-]+\.[\w-]+)\s*,\s*k=([\w-]+)\s*$/.exec(header ?? '');
  if (!m) throw new Error(`Authorization ${JSON.stringify(header)} is not "vapid t=..., k=..."`);
  const [, jwt, k] = m;
  const raw = Buffer.from(k, 'base64url');
  if (raw.length !== 65 || raw[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64url(raw.subarray(1, 33)), y: b64url(raw.subarray(33)) }, format: 'jwk' });
  const [h, p, s] = jwt.split('.');
  const head = JSON.parse(Buffer.from(h, 'base64url').toString());
  if (head.alg !== 'ES256') throw new Error(`JWT alg ${head.alg}, not ES256`);
  const ok = verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('the JWT signature does not verify against k');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  if (claims.aud !== audience) throw new Error(`aud ${claims.aud}, not ${audience}`);
  const now = Date.now() / 1000;
  if (!(claims.exp > now && claims.exp <= now + 24 * 3600 + 60)) throw new Error(`exp ${claims.exp} not within 24 h ahead`);
  if (!/^(mailto:|https:)/.test(claims.sub ?? '')) throw new Error(`sub ${claims.sub} is not mailto: or https:`);
  return { claims, k };
}

/**
 * @typedef {object} Delivery
 * @property {string} sub       the subscription's id (the endpoint's last part)
 * @property {Record<string, string | string[] | undefined>} headers
 * @property {any} payload      the decrypted JSON
 * @property {string} k         the VAPID key it was signed with
 * @property {number} answered  the status the service answered
 */

/**
 * Starts the service on 127.0.0.1 (port: E2E_PUSH_PORT, else any free one).
 * @returns {Promise<{origin: string, subscribe: () => {id: string, endpoint: string, keys: {p256dh: string, auth: string}}, deliveries: Delivery[], errors: string[], answerWith: (status: number) => void, close: () => Promise<void>}>}
 */
export async function startPushService() {
  /** @type {Map<string, {ua: import('node:crypto').ECDH, auth: Buffer}>} */
  const subs = new Map();
  /** @type {Delivery[]} */
  const deliveries = [];
  /** @type {string[]} */
  const errors = [];
  let status = 201;
  let origin = '';
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = /^\/push\/([\w-]+)$/.exec(req.url ?? '')?.[1] ?? '';
      const sub = subs.get(id);
      try {
        if (req.method !== 'POST' || !sub) {
          res.writeHead(404).end();
          return;
        }
        if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`Content-Encoding ${req.headers['content-encoding']}`);
        if (!/^\d+$/.test(String(req.headers.ttl ?? ''))) throw new Error(`TTL ${req.headers.ttl}`);
        const { k } = verifyVapid(req.headers.authorization, origin);
        const payload = JSON.parse(decryptAes128gcm(Buffer.concat(chunks), sub.ua, sub.auth).toString('utf8'));
        deliveries.push({ sub: id, headers: req.headers, payload, k, answered: status });
        res.writeHead(status).end();
      } catch (err) {
        errors.push(String(/** @type {Error} */ (err).message ?? err));
        res.writeHead(400).end(String(err));
      }
    });
  });
  const port = Number(process.env.E2E_PUSH_PORT || 0);
  await new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(undefined)));
  const addr = server.address();
  origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : port}`;
  return {
    origin,
    deliveries,
    errors,
    subscribe() {
      const ua = createECDH('prime256v1');
      ua.generateKeys();
      const auth = randomBytes(16);
      const id = randomBytes(9).toString('base64url');
      subs.set(id, { ua, auth });
      return { id, endpoint: `${origin}/push/${id}`, keys: { p256dh: b64url(ua.getPublicKey()), auth: b64url(auth) } };
    },
    answerWith(s) {
      status = s;
    },
    close: () => new Promise((resolve) => server.close(() => resolve(undefined))),
  };
}
