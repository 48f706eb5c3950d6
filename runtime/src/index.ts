export {
  type RunningStack,
  type ServiceProcessSpec,
  type StackConfig,
  serviceProcessSpecs,
  startServiceProcess,
  startStack,
} from './distributed.js';
export { ensurePanelBuilt, panelDist, panelSourceDigest } from './panel-build.js';
export { RuntimeSettings, readSettings, type Settings } from './settings.js';
