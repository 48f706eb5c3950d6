export { PipelineConfig } from './config.js';
export { pipelineService } from './service.js';
