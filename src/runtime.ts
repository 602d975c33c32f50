/**
 * The types every part of the running service shares, in one leaf module: it imports types only, and no
 * subsystem, so any part can depend on it without closing an import circle (ARCHITECTURE.md, "Layers").
 */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Store } from './store/client.js';
import type { BatchWriter } from './store/writer.js';

/** What every component of the running service gets: configuration, logging, metrics, the store. */
export interface Runtime {
  config: Config;
  logger: Logger;
  registry: Registry;
  store: Store;
  writer: BatchWriter;
  /**
   * The clock answers are given at ("this month", "today", the default range): the machine's, unless the caller set
   * one (tests, CONTRIBUTING.md "Tests own their clock"). Jobs see the platform's clock (src/jobs/platform-source.ts).
   */
  now: () => Date;
}

/** Something started with the service and stopped before the writer is flushed (a scheduler, a pusher). */
export interface Component {
  name: string;
  stop(): Promise<void>;
}

/** Registers routes and starts background work once the store is ready; the composition root lists them. */
export type Extension = (rt: Runtime & { app: FastifyInstance }) => Promise<Component | void>;
