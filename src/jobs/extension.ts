import type { Extension } from '../extensions.js';
import type { JobDefinition } from './job.js';
import { openPlatformSource, type PlatformSource } from './platform-source.js';
import { Scheduler } from './scheduler.js';

/** Jobs a demo start runs at once, so a newcomer sees data within seconds. */
const DEMO_STARTUP_JOBS = ['apps', 'usage', 'requests', 'analytics', 'runners', 'events', 'revisions'];

/** Starts the scheduler (and, in demo mode, the simulator it collects from) with the service. */
export function schedulerExtension(jobs: JobDefinition[], onSource?: (source: PlatformSource) => void): Extension {
  return async (rt) => {
    const source = await openPlatformSource(rt.config, rt.logger);
    onSource?.(source);
    const scheduler = new Scheduler({ runtime: rt, platform: source.platform, jobs, now: source.now });
    if (rt.config.JOBS_ENABLED) scheduler.start();
    if (source.demo) {
      // One after the other: the apps job discovers the endpoints the later ones read.
      void (async () => {
        for (const name of DEMO_STARTUP_JOBS) if (scheduler.get(name)) await scheduler.run(name, 'startup');
      })();
    }
    return {
      name: 'scheduler',
      async stop() {
        await scheduler.stop();
        await source.close();
      },
    };
  };
}
