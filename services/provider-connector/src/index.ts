export { ConnectorConfig } from './config.js';
export { type ConnectorOptions, connectorService } from './service.js';
