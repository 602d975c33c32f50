// No Docker engine runs here: the production stack is checked by reading docker-compose.yml, the Dockerfile and
// the files they mount, and checking that they agree with each other and with the code.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigSchema, RENAMED_VARIABLES } from '../../src/config.js';
import { DATASOURCE_UID, PLUGIN_ID, PLUGIN_VERSION } from '../../dashboards/lib/datasource.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');

type Service = {
  image?: string;
  profiles?: string[];
  build?: { context: string; dockerfile?: string };
  environment?: Record<string, string | number>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] | string; interval?: string };
  depends_on?: Record<string, { condition: string }>;
  command?: string[];
  secrets?: string[];
};
// Merge keys (<<) as docker compose reads them.
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  secrets: Record<string, { environment?: string }>;
};
const services = compose.services;

/** An image reference pinned to a version: a tag with at least major.minor, never `latest`. */
const PINNED = /^[a-z0-9./-]+:v?\d+\.\d+(\.\d+)*(-[a-z0-9.-]+)?$/;

/** `source:target[:ro]` of a service's volume list. */
function mounts(service: Service): Array<{ source: string; target: string; readOnly: boolean }> {
  return (service.volumes ?? []).map((v) => {
    const [source, target, mode] = v.split(':');
    return { source, target, readOnly: mode === 'ro' };
  });
}

/** The host path mounted at `target` in a service. */
function hostPathAt(service: Service, target: string): string {
  const m = mounts(service).find((x) => x.target === target);
  if (!m) throw new Error(`nothing is mounted at ${target}`);
  expect(m.source.startsWith('./'), `${target} should be a file of this repository`).toBe(true);
  return m.source.slice(2);
}

/** The variable name of a `${NAME:?...}` / `${NAME:-...}` reference. */
const variableOf = (value: string | number | undefined) => /^\$\{(\w+)[:?-]/.exec(String(value))?.[1];

describe('docker-compose.yml', () => {
  it('runs ClickHouse, Tallyhouse, Prometheus and Grafana; every image is pinned to a version', () => {
    expect(Object.keys(services).sort()).toEqual(['clickhouse', 'grafana', 'prometheus', 'tallyhouse', 'tallyhouse-2']);
    // The second instance only with the two-instances profile, on the image the first builds, as shard 1 of 2.
    expect(services['tallyhouse-2'].profiles).toEqual(['two-instances']);
    expect(services['tallyhouse-2'].image).toBe(services.tallyhouse.image);
    expect(services['tallyhouse-2'].environment?.COLLECTOR_SHARD).toBe('1/2');
    expect(services['tallyhouse-2'].environment?.CLICKHOUSE_URL).toBe('http://clickhouse:8123');
    expect(services.clickhouse.image).toMatch(/^clickhouse\/clickhouse-server:/);
    expect(services.grafana.image).toMatch(/^grafana\/grafana:12\./);
    expect(services.prometheus.image).toMatch(/^prom\/prometheus:v3\./);
    for (const [name, s] of Object.entries(services)) {
      if (s.build || s.image === services.tallyhouse.image) continue;
      expect(s.image, name).toMatch(PINNED);
    }
    // Tallyhouse is built here from the multi-stage Dockerfile.
    expect(services.tallyhouse.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
  });

  it('every service has a health check, and data lives in named volumes', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.healthcheck?.test, `${name} health check`).toBeTruthy();
    }
    const dataDirs: Record<string, string> = {
      clickhouse: '/var/lib/clickhouse',
      tallyhouse: String(services.tallyhouse.environment!.DATA_DIR),
      prometheus: '/prometheus',
      grafana: '/var/lib/grafana',
    };
    for (const [name, dir] of Object.entries(dataDirs)) {
      const m = mounts(services[name]).find((x) => x.target === dir);
      expect(m, `${name}: ${dir} mounted`).toBeDefined();
      expect(Object.keys(compose.volumes), `${name}: ${dir} on a named volume`).toContain(m!.source);
    }
    // Every named volume is used, every bind mount exists.
    const used = Object.values(services).flatMap((s) => mounts(s).map((m) => m.source));
    for (const v of Object.keys(compose.volumes)) expect(used).toContain(v);
    for (const source of used.filter((s) => s.startsWith('./'))) expect(existsSync(`${ROOT}${source.slice(2)}`), source).toBe(true);
  });

  it('Tallyhouse writes to the ClickHouse server as the user the server creates, and waits for it to be healthy', () => {
    const env = services.tallyhouse.environment!;
    const ch = services.clickhouse.environment!;
    expect(env.CLICKHOUSE_URL).toBe('http://clickhouse:8123');
    expect(env.CLICKHOUSE_USER).toBe(ch.CLICKHOUSE_USER);
    expect(variableOf(env.CLICKHOUSE_PASSWORD)).toBe(variableOf(ch.CLICKHOUSE_PASSWORD));
    expect(services.tallyhouse.depends_on?.clickhouse).toEqual({ condition: 'service_healthy' });
    // Listening on every interface, so the query API needs tokens (the service refuses to start without).
    // TALLYHOUSE_HOST/TALLYHOUSE_PORT, never the short names shells set for themselves (read only with a deprecation line).
    expect(env.TALLYHOUSE_HOST).toBe('0.0.0.0');
    for (const old of Object.keys(RENAMED_VARIABLES)) expect(env, old).not.toHaveProperty(old);
    expect(String(env.API_TOKENS)).toMatch(/^\$\{API_TOKENS:\?/);
    // Every variable is one the service reads (a typo would be ignored silently).
    const known = [...Object.keys(ConfigSchema.shape).filter((k) => !(k in RENAMED_VARIABLES)), ...Object.values(RENAMED_VARIABLES)];
    for (const name of Object.keys(env)) expect(known, name).toContain(name);
  });

  it('Prometheus scrapes Tallyhouse without honor_labels (no job/instance label of ours) and loads the alert rules', () => {
    const config = parse(read(hostPathAt(services.prometheus, '/etc/prometheus/prometheus.yml')));
    const rules = hostPathAt(services.prometheus, '/etc/prometheus/alerts.yml');
    expect(rules).toBe('dashboards/prometheus/alerts.yml');
    expect(config.rule_files).toEqual(['alerts.yml']); // relative to the config file: /etc/prometheus/alerts.yml
    const job = config.scrape_configs.find((j: { job_name: string }) => j.job_name === 'tallyhouse');
    expect(job.honor_labels).toBeUndefined();
    expect(job.static_configs[0].targets).toEqual([`tallyhouse:${services.tallyhouse.environment!.TALLYHOUSE_PORT}`]);
    expect(services.prometheus.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
    // /metrics carries cost: Tallyhouse requires METRICS_TOKEN, and Prometheus reads the same token as a secret.
    expect(services.tallyhouse.environment!.METRICS_TOKEN).toMatch(/^\$\{METRICS_TOKEN:\?/);
    expect(compose.secrets.metrics_token).toEqual({ environment: 'METRICS_TOKEN' });
    expect(services.prometheus.secrets).toContain('metrics_token');
    expect(job.authorization).toEqual({ type: 'Bearer', credentials_file: '/run/secrets/metrics_token' });
  });

  it('Grafana installs the pinned ClickHouse plugin and provisions the data source the dashboards use', () => {
    const grafana = services.grafana;
    expect(grafana.environment!.GF_PLUGINS_PREINSTALL_SYNC).toBe(`${PLUGIN_ID}@${PLUGIN_VERSION}`);

    const dsDir = hostPathAt(grafana, '/etc/grafana/provisioning/datasources');
    const { datasources } = parse(read(`${dsDir}/tallyhouse.yml`));
    const ch = datasources.find((d: { type: string }) => d.type === PLUGIN_ID);
    expect(ch.uid).toBe(DATASOURCE_UID);
    expect(ch.jsonData).toMatchObject({ host: 'clickhouse', port: 8123, protocol: 'http', defaultDatabase: services.tallyhouse.environment!.CLICKHOUSE_DATABASE });
    // The password is not in jsonData, and Grafana's environment has the variable the file names.
    expect(ch.jsonData.password).toBeUndefined();
    const passwordVariable = /^\$\{(\w+)\}$/.exec(ch.secureJsonData.password)![1];
    expect(variableOf(grafana.environment![passwordVariable])).toBe(passwordVariable);

    // The user Grafana reads as is defined, read-only, on the server, with the password from the same variable.
    const users = read(hostPathAt(services.clickhouse, '/etc/clickhouse-server/users.d/grafana.xml'));
    expect(users).toContain(`<${ch.jsonData.username}>`);
    expect(users).toContain(`<password from_env="${passwordVariable}"/>`);
    expect(users).toMatch(/<readonly>[12]<\/readonly>/);
    expect(variableOf(services.clickhouse.environment![passwordVariable])).toBe(passwordVariable);

    const providerDir = hostPathAt(grafana, '/etc/grafana/provisioning/dashboards');
    const { providers } = parse(read(`${providerDir}/tallyhouse.yml`));
    expect(hostPathAt(grafana, providers[0].options.path)).toBe('dashboards');
    const home = String(grafana.environment!.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH);
    expect(existsSync(`${ROOT}dashboards/${home.slice(providers[0].options.path.length + 1)}`)).toBe(true);
  });

  it('publishes Grafana, the Tallyhouse API and Prometheus (loopback only), and not ClickHouse', () => {
    expect(services.grafana.ports).toEqual(['3000:3000']);
    expect(services.tallyhouse.ports).toEqual(['8080:8080']);
    expect(services.prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(services.clickhouse.ports).toBeUndefined();
  });

  it('every secret is required from the environment, none is written in the file', () => {
    const text = read('docker-compose.yml');
    const required = [...text.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]);
    expect(new Set(required)).toEqual(new Set(['CLICKHOUSE_PASSWORD', 'GRAFANA_CLICKHOUSE_PASSWORD', 'API_TOKENS', 'METRICS_TOKEN', 'GRAFANA_ADMIN_PASSWORD']));
    for (const s of Object.values(services)) {
      for (const [k, v] of Object.entries(s.environment ?? {})) {
        if (/PASSWORD|TOKEN|SECRET|KEY/.test(k)) expect(String(v), k).toMatch(/^\$\{\w+:[?-]/);
      }
    }
  });

  it("the README's production section explains docker compose up, the variables to set, and the URLs", () => {
    const readme = read('README.md');
    const start = readme.indexOf('## Production (docker compose)');
    expect(start, 'README.md has a "## Production (docker compose)" section').toBeGreaterThanOrEqual(0);
    const next = readme.indexOf('\n## ', start + 1);
    const section = readme.slice(start, next === -1 ? undefined : next);
    expect(section).toContain('docker compose up');
    for (const url of ['http://localhost:3000', 'http://localhost:9090', 'http://localhost:8080/api/v1']) expect(section).toContain(url);
    for (const name of ['CLICKHOUSE_PASSWORD', 'GRAFANA_CLICKHOUSE_PASSWORD', 'API_TOKENS', 'GRAFANA_ADMIN_PASSWORD']) expect(section).toContain(name);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\w+))?/gim)].map((m) => ({ image: m[1], name: m[2] }));
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

  it('builds in stages from a pinned Node image', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'deps', 'runtime']);
    const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)![1];
    // The current Node LTS (24); the suite also runs on Node 20 and 24 in CI.
    expect(base).toMatch(/^node:24\.\d+\.\d+-bookworm-slim$/);
    for (const s of stages) expect(s.image).toBe('${NODE_IMAGE}');
    expect(dockerfile).toMatch(/RUN npm run build/);
  });

  it('ships the compiled service with production dependencies only, the migrations where the migrator looks, as a non-root user', () => {
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(runtime).toContain('COPY --from=deps --chown=root:root /app/node_modules ./node_modules');
    expect(runtime).toContain('COPY --from=build --chown=root:root /app/dist ./dist');
    expect(runtime).not.toMatch(/npm (ci|install)/);
    // src/store/migrate.ts reads new URL('../../sql/', import.meta.url): from dist/src/store/ that is dist/sql/.
    expect(read('src/store/migrate.ts')).toContain("new URL('../../sql/', import.meta.url)");
    // npm run build (scripts/build.mjs) copies sql/ into dist/: the build stage has it, the runtime takes dist/ whole.
    expect(read('package.json')).toContain('"build": "node scripts/build.mjs"');
    const build = dockerfile.slice(0, dockerfile.indexOf('\nFROM ', dockerfile.indexOf('AS build')));
    for (const copy of ['COPY sql ./sql', 'COPY scripts/build.mjs ./scripts/', 'COPY bin ./bin']) expect(build).toContain(copy);
    // bin/tallyhouse.js runs dist/src/main.js when it exists.
    expect(read('bin/tallyhouse.js')).toContain("'../dist/src/main.js'");
    const user = /^USER\s+(\S+)$/m.exec(runtime)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect(runtime).toMatch(/^HEALTHCHECK /m);
    expect(runtime).toMatch(/^ENTRYPOINT \["node", "bin\/tallyhouse.js"\]$/m);
    expect(runtime).toMatch(/^CMD \["serve"\]$/m);
    // The runtime environment and health check use the TALLYHOUSE_ names; the short HOST/PORT are not set.
    expect(runtime).toMatch(/TALLYHOUSE_HOST=0\.0\.0\.0/);
    expect(runtime).toMatch(/TALLYHOUSE_PORT=8080/);
    expect(runtime).not.toMatch(/^\s+(HOST|PORT)=/m);
    expect(runtime).toContain('process.env.TALLYHOUSE_PORT');
    // No dev tools in the image: tsx (and with it esbuild) and TypeScript are devDependencies, which --omit=dev leaves out.
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    for (const tool of ['tsx', 'esbuild', 'typescript', '@grafana/faro-core', 'pino-pretty']) expect(Object.keys(pkg.dependencies), tool).not.toContain(tool);
    expect(Object.keys(pkg.devDependencies)).toContain('tsx');
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean }> };
    for (const tool of ['tsx', 'esbuild', 'typescript']) expect(lock.packages[`node_modules/${tool}`]?.dev, tool).toBe(true);
  });

  it('.dockerignore keeps secrets, local data and build output out of the build context', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim());
    for (const entry of ['.env', '.git', 'node_modules', 'dist', 'data']) expect(ignored).toContain(entry);
  });
});

// Issue 30.15: a newcomer's compose start. Appended (not merged into the blocks above) so branches merge cleanly.
describe('compose for a newcomer', () => {
  it('.env.example lists every variable compose requires, empty (so compose refuses until it is filled), and the token minimum', () => {
    const required = [...new Set([...read('docker-compose.yml').matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]))].sort();
    const example = read('.env.example');
    const set = [...example.matchAll(/^([A-Z_]+)=(.*)$/gm)].map((m) => ({ name: m[1], value: m[2] }));
    expect(set.map((v) => v.name).sort()).toEqual(required);
    expect(set.every((v) => v.value === '')).toBe(true);
    // Every optional variable it names is one compose passes on.
    for (const [, name] of example.matchAll(/^#([A-Z_]+)=/gm)) expect(read('docker-compose.yml')).toContain(`\${${name}:-`);
    expect(example).toContain('at least 16 characters');
    expect(example).toContain('at least 32');
    expect(example).toContain('exit code 2');
  });

  it('Prometheus scrapes every Tallyhouse instance, the second when the two-instances profile runs it', () => {
    const config = parse(read('dashboards/prometheus/prometheus.yml'));
    const job = config.scrape_configs.find((j: { job_name: string }) => j.job_name === 'tallyhouse');
    const port = String(services.tallyhouse.environment!.TALLYHOUSE_PORT);
    const instances = Object.entries(services).filter(([, s]) => s.image === 'tallyhouse:local').map(([name]) => name).sort();
    expect(instances).toEqual(['tallyhouse', 'tallyhouse-2']);
    const staticNames = job.static_configs.flatMap((c: { targets: string[] }) => c.targets.map((t) => t.split(':')[0]));
    const dnsNames = (job.dns_sd_configs ?? []).flatMap((c: { names: string[]; port: number }) => {
      expect(String(c.port)).toBe(port);
      return c.names;
    });
    expect([...staticNames, ...dnsNames].sort()).toEqual(instances);
    // The profile's instance is found by name (no target while it does not run), and named as the static one is.
    expect(services['tallyhouse-2'].profiles).toEqual(['two-instances']);
    expect(dnsNames).toEqual(['tallyhouse-2']);
    expect(job.relabel_configs).toContainEqual({ source_labels: ['__meta_dns_name'], regex: '(.+)', target_label: 'instance', replacement: `\${1}:${port}` });
  });
});
