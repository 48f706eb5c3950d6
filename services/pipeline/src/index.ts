export { PipelineConfig } from './config.js';
export { type PipelineOptions, pipelineService } from './service.js';
