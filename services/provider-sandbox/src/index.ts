export { SandboxConfig } from './config.js';
export { createEvolutionInstance } from './operator.js';
export type { Sandbox, SandboxOptions } from './sandbox.js';
export { createSandbox } from './sandbox.js';
