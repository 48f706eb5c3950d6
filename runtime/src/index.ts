export {
  type RunningStack,
  type ServiceProcessSpec,
  type StackConfig,
  serviceProcessSpecs,
  startServiceProcess,
  startStack,
} from './distributed.js';
export { RuntimeSettings, readSettings, type Settings } from './settings.js';
