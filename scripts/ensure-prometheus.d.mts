// Types of scripts/ensure-prometheus.mjs, for its tests.
export declare const NEEDED: string[];
export declare const REQUIRE_TOOLS_ENV: string;
export declare function toolsRequired(env?: Record<string, string | undefined>): boolean;
export declare function skipLine(missing: string[], why: string): string;
export declare function onPath(command: string, path?: string): boolean;
export interface EnsureFacts {
  missing: string[];
  root: boolean;
  sudo: boolean;
  aptGet: boolean;
  packageInstalled: boolean;
  systemd: boolean;
  service: boolean;
}
export type EnsurePlan =
  | { action: 'none' }
  | { action: 'fail'; why: string; message: string }
  | { action: 'install'; steps: string[][]; stop: string[] | null };
export declare function decide(facts: EnsureFacts): EnsurePlan;
export declare function main(): number;
