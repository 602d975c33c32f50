// The soak's store: the test ClickHouse HTTP endpoint (chDB) in a process of its own, as a server would be, so the
// instances and the soak reach it over HTTP only. Driven over IPC: {cmd: 'stop' | 'start' | 'close'}; answers
// {ok: cmd} when done. Started with the data directory and port as arguments; says {ready: url} once it listens.
import { startClickHouseHttp } from '../support/clickhouse-http.js';

const [dataDir, port] = process.argv.slice(2);
if (!dataDir || !port || !process.send) {
  console.error('usage: node --import tsx test/soak/store-process.ts <data dir> <port> (with an IPC channel)');
  process.exit(2);
}
const send = (m: unknown) => process.send!(m);

const store = await startClickHouseHttp({ dataDir, port: Number(port) });
process.on('message', (m: { cmd: 'stop' | 'start' | 'close' }) => {
  const done = m.cmd === 'stop' ? store.stop() : m.cmd === 'start' ? store.start() : store.close();
  done.then(
    () => {
      send({ ok: m.cmd });
      if (m.cmd === 'close') process.exit(0);
    },
    (err: Error) => send({ error: `${m.cmd}: ${err.message}` }),
  );
});
// The soak ended without closing (it was killed): nothing is left running.
process.on('disconnect', () => process.exit(0));
send({ ready: store.url });
