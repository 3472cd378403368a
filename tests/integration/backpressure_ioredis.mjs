// ioredis through Corral (run by test_backpressure.py): 600 pipelined GETs of a 1 MB value through
// a 64 MB client.max_output_buffer, read as fast as ioredis reads; every reply must arrive (issue
// 22 saw `AbortError: Command aborted due to connection close` here). Exits non-zero on failure.
import { createRequire } from 'node:module';

const require = createRequire(process.env.IOREDIS_DIR + '/');
const Redis = require('ioredis');

// No retries: a command aborted by a closed connection must fail the run, not be sent again.
const client = new Redis({ port: Number(process.env.CORRAL_PORT), host: '127.0.0.1',
                           maxRetriesPerRequest: 0, lazyConnect: true });
try {
  await client.connect();
  const expected = Number(process.env.VALUE_BYTES);
  const pipeline = client.pipeline();
  for (let i = 0; i < 600; i++) pipeline.getBuffer('bp:big');
  const results = await pipeline.exec();
  if (results.length !== 600) throw new Error(`got ${results.length} replies`);
  results.forEach(([err, value], i) => {
    if (err) throw new Error(`reply ${i}: ${err}`);
    if (value.length !== expected) throw new Error(`reply ${i}: ${value.length} bytes`);
  });
  if ((await client.ping()) !== 'PONG') throw new Error('PING after the pipeline');
  console.log('600 replies of', expected, 'bytes');
} finally {
  client.disconnect();
}
