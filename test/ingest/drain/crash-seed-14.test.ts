// The drain under SIGKILL (crash-scenario.ts): the second hundred kill points of the suite's two hundred, with
// its own seed, data directory and store endpoint, run beside crash.test.ts's.
import { crashScenario } from './crash-scenario.js';

crashScenario({ kills: 100, seed: 14 });
