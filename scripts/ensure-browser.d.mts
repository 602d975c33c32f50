// Types of scripts/ensure-browser.mjs, for the tests.
export declare const BROWSER: string;
export declare const PACKAGES: string[];
export declare const FONTS_DIR: string;
export declare const INSTALL_HINT: string;
export declare function missingParts(found?: { browser?: boolean; fonts?: boolean }): string[];
export interface BrowserFacts {
  missing: string[];
  root: boolean;
  sudo: boolean;
  aptGet: boolean;
  ci: boolean;
}
export type BrowserPlan = { action: 'none' } | { action: 'install'; steps: string[][] } | { action: 'fail' | 'skip'; message: string };
export declare function decide(facts: BrowserFacts): BrowserPlan;
export declare function main(env?: Record<string, string | undefined>): number;
export declare function browserRequired(env?: Record<string, string | undefined>): boolean;
