/** The public API's error texts, byte for byte as the spec writes them. */
export const errorTexts = {
  sendMessageRequired: 'Parâmetros obrigatórios: phone, message, channel',
  sendMessageChannel: 'channel inválido. Use "chat-official", "alt-a" ou "alt-b"',
  phoneInvalid: 'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).',
  messageLength: 'message deve ser string de 1–4096 caracteres',
  integrationNotConnected: 'Integração não está conectada',
  apiKeyInvalid: 'API Key inválida',
  workspaceInactive: 'Workspace inativo',
  rateLimited: (perMinute: number) => `Muitas requisições. Limite: ${perMinute}/min por workspace.`,
  sendTemplateRequired: 'Parâmetros obrigatórios: phone, templateName, channel',
  variablesNotArray: 'variables deve ser array',
  externalSendRequired: 'Parâmetros obrigatórios: conversation_id, text',
  senderTypeInvalid: 'sender_type deve ser "agent" ou "system"',
  authorizationMissing: 'Authorization header ausente',
  apiKeyNotFound: 'API Key inválida ou não encontrada',
  conversationNotFound: 'Conversa não encontrada ou não pertence a este workspace',
  pipelineNotFound: 'pipeline_id não encontrado neste workspace',
  stageNotFound: (stage: string, pipelineName: string) =>
    `stage "${stage}" não existe no pipeline "${pipelineName}"`,
  conversationNotOfContact: 'conversation_id não pertence a este contato/workspace',
  contactNotFound: 'Contato não encontrado',
  internal: 'Erro interno',
} as const;

/** Texts the spec leaves to us; kept here so every service answers the same words. */
export const platformTexts = {
  malformedJson: 'Corpo da requisição não é JSON válido',
  bodyTooLarge: 'Corpo da requisição excede o tamanho máximo',
  routeNotFound: 'Rota não encontrada',
  noConnectedIntegration: (channel: string) =>
    `Nenhuma integração conectada do canal "${channel}" neste workspace`,
  integrationNotFound: 'Integração não encontrada neste workspace',
  adminTokenInvalid: 'Token de administração inválido',
  workspaceNotFound: 'Workspace não encontrado',
  serviceUnavailable: 'Serviço temporariamente indisponível',
  serviceTimeout: (service: string) => `Tempo esgotado aguardando o serviço ${service}`,
  channelNotSupported: (channel: string) => `O canal "${channel}" ainda não é suportado por este conector`,
  providerFailed: (channel: string) => `Falha ao enviar pelo provedor do canal "${channel}"`,
  mustBeUuid: (field: string) => `${field} deve ser um UUID`,
  mustBeString: (field: string, max: number) => `${field} deve ser string de até ${max} caracteres`,
} as const;
