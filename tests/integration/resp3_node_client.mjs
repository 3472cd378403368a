// node-redis v5 with RESP 3 against Corral (run by test_resp3_clients.py): commands, pub/sub on
// the same connection while running commands, and the client-side cache invalidated by another
// client's write. Exits non-zero with a message on the first failure.
import { createRequire } from 'node:module';

const require = createRequire(process.env.NODE_REDIS_DIR + '/');
const { createClient, BasicClientSideCache } = require('redis');
const url = `redis://127.0.0.1:${process.env.CORRAL_PORT}`;

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

async function until(fn, what, ms = 5000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function connect(options = {}) {
  const client = createClient({ url, RESP: 3, ...options });
  client.on('error', (err) => console.error('client error:', err.message));
  await client.connect();
  return client;
}

const client = await connect();
const other = await connect();
try {
  await client.set('n:k', 'v1');
  check((await client.get('n:k')) === 'v1', 'GET');
  check((await client.get('n:missing')) === null, 'GET of a missing key');
  await client.hSet('n:h', { a: '1', b: '2' });
  const hash = await client.hGetAll('n:h');
  check(hash.a === '1' && hash.b === '2', `HGETALL ${JSON.stringify(hash)}`);

  const messages = [];
  await client.subscribe('n:ch', (message) => messages.push(message));
  check((await client.get('n:k')) === 'v1', 'GET while subscribed');
  check((await other.publish('n:ch', 'hello')) === 1, 'one receiver');
  await client.set('n:k', 'v2');
  await until(() => messages.length === 1, 'the message');
  check(messages[0] === 'hello', `message ${messages[0]}`);
  check((await client.get('n:k')) === 'v2', 'GET after the message');
  await client.unsubscribe('n:ch');
  check((await other.publish('n:ch', 'late')) === 0, 'no receivers after UNSUBSCRIBE');

  const cache = new BasicClientSideCache({ ttl: 0, maxEntries: 0 });
  const cached = await connect({ clientSideCache: cache });
  try {
    await other.set('n:csc', 'one');
    check((await cached.get('n:csc')) === 'one', 'first read');
    check((await cached.get('n:csc')) === 'one', 'second read');
    check(cache.stats().hitCount >= 1, `a local hit (stats ${JSON.stringify(cache.stats())})`);
    await other.set('n:csc', 'two');
    await until(async () => (await cached.get('n:csc')) === 'two', 'the invalidated read');
  } finally {
    await cached.quit();
  }
  console.log('node-redis RESP3: ok');
} finally {
  await client.quit();
  await other.quit();
}
