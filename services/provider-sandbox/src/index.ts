export { EVOLUTION_GLOBAL_API_KEY } from './alt-a.js';
export { SandboxConfig } from './config.js';
export { createEvolutionInstance } from './operator.js';
export type { Sandbox, SandboxOptions } from './sandbox.js';
export { createSandbox } from './sandbox.js';
