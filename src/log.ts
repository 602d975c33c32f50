import { createRequire } from 'node:module';
import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger };

// Never log a key, a secret or a password, wherever it sits in a log object.
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-svc-signature"]',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'password',
  '*.password',
  'apiKey',
  '*.apiKey',
  'adminKey',
  '*.adminKey',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'CLICKHOUSE_PASSWORD',
  'SVC_API_KEY',
  'SVC_ADMIN_KEY',
  'LOG_DRAIN_SECRET',
  'LOG_DRAIN_TOKEN',
  'API_TOKENS',
  // The demo drain's generated signing key: nobody needs it (the in-process simulator signs with it), and a log
  // is no place for a key (issue 30.13).
  'demoDrainSigningKey',
  '*.demoDrainSigningKey',
];

/**
 * pino-pretty's resolved path, or null where it is not installed. It is a devDependency: a production install
 * (`npm ci --omit=dev`) has none, and pino then threw "unable to determine transport target" on a terminal, so
 * `serve`, `sim` and `report` exited 1. Without it a terminal gets the JSON lines a pipe gets.
 */
export function prettyTarget(resolve: (specifier: string) => string = createRequire(import.meta.url).resolve): string | null {
  try {
    return resolve('pino-pretty');
  } catch {
    return null;
  }
}

/** The pretty transport's target when `stream` is a terminal outside production and pino-pretty is installed. */
function prettyOn(stream: { isTTY?: boolean }): string | null {
  return stream.isTTY && process.env.NODE_ENV !== 'production' ? prettyTarget() : null;
}

export function createLogger(level = 'info', options: LoggerOptions = {}): Logger {
  const pretty = prettyOn(process.stdout);
  return pino({
    level,
    base: { service: 'tallyhouse' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // One line a record on a terminal: with a line per field the "listening ... try: curl" line came after about
    // 75 lines (issue 30.13). JSON (not a terminal) is unchanged.
    ...(pretty ? { transport: { target: pretty, options: { colorize: true, singleLine: true, ignore: 'service' } } } : {}),
    ...options,
  });
}

/**
 * The logger of a one-shot CLI command (collect, report, migrate, scrape): to stderr (stdout may carry the
 * command's data, a CSV), at CLI_LOG_LEVEL (warn by default: the command prints its own progress and summary).
 */
export function createCommandLogger(level: string): Logger {
  const pretty = prettyOn(process.stderr);
  return pino(
    {
      level,
      base: { service: 'tallyhouse' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      ...(pretty ? { transport: { target: pretty, options: { colorize: true, destination: 2 } } } : {}),
    },
    ...(pretty ? [] : [pino.destination(2)]),
  );
}
