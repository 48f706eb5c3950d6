/** `"a", "b" ou "c"`: the alternatives a text offers, quoted. */
const quotedAlternatives = (values: readonly string[]) => {
  const quoted = values.map((value) => `"${value}"`);
  return quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} ou ${quoted.at(-1)}` : quoted.join('');
};

/** The public API's error texts, byte for byte as the spec writes them. */
export const errorTexts = {
  sendMessageRequired: 'Parâmetros obrigatórios: phone, message, channel',
  /** Given the channels send-message takes. */
  sendMessageChannel: (channels: readonly string[]) =>
    `channel inválido. Use ${quotedAlternatives(channels)}`,
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
  bodyEncodingUnsupported: 'Corpo da requisição com Content-Encoding não suportado; envie-o sem compressão',
  bodyTooDeep: (levels: number) => `Corpo da requisição aninha objetos ou listas em mais de ${levels} níveis`,
  routeNotFound: 'Rota não encontrada',
  noConnectedIntegration: (channel: string) =>
    `Nenhuma integração conectada do canal "${channel}" neste workspace`,
  integrationNotFound: 'Integração não encontrada neste workspace',
  adminTokenInvalid: 'Token de administração inválido',
  authFailuresTooMany:
    'Muitas tentativas de autenticação inválidas deste endereço. Tente novamente mais tarde.',
  workspaceNotFound: 'Workspace não encontrado',
  serviceUnavailable: 'Serviço temporariamente indisponível',
  serviceTimeout: (service: string) => `Tempo esgotado aguardando o serviço ${service}`,
  windowClosed:
    'Fora da janela de 24 horas: este número não interagiu nas últimas 24 horas. Use send-template para iniciar a conversa.',
  agentNotFound: 'agentId não é um agente deste workspace',
  inboundRegistrationFailed: (channel: string) =>
    `Falha ao registrar o webhook de entrada no provedor do canal "${channel}"`,
  /** The provider refused the integration's credentials, or knows no such account, when asked to register. */
  inboundRegistrationCredentialsRejected: (channel: string) =>
    `O provedor do canal "${channel}" recusou as credenciais da integração ou não conhece a conta: verifique a configuração`,
  /** Given what the provider requires of a callback URL that ours does not meet. */
  inboundRegistrationRefused: (channel: string, problems: readonly string[]) =>
    `Falha ao registrar o webhook de entrada no provedor do canal "${channel}": ${problems.join('; ')}; ajuste PUBLIC_CONNECTOR_URL`,
  callbackUrlNotHttps: (url: string) => `a URL de callback ${url} usa http, e o provedor só aceita https`,
  callbackUrlPort: (port: number, ports: readonly number[]) =>
    `a URL de callback usa a porta ${port}, e o provedor só chama as portas ${ports.join(', ')}`,
  callbackUrlTooLong: (length: number, max: number) =>
    `a URL de callback tem ${length} caracteres, e o provedor aceita no máximo ${max}`,
  /** When a provider (a local test one) took a callback URL the real provider would refuse. */
  callbackUrlWarning: (channel: string, problems: readonly string[]) =>
    `O provedor aceitou o webhook de entrada, mas o provedor real do canal "${channel}" o recusaria: ${problems.join('; ')}; ajuste PUBLIC_CONNECTOR_URL`,
  /** A provider whose callback URL only a person sets, in its developer console (Mercado Livre's). */
  callbackUrlManual: (channel: string, url: string, topics: readonly string[]) =>
    `O provedor do canal "${channel}" não registra a URL de notificações por API: configure ${url} como URL de notificações do aplicativo no painel de desenvolvedor do provedor, com os tópicos ${topics.join(', ')}`,
  templateNotFound: (name: string, language: string) =>
    `Template "${name}" (idioma ${language}) não encontrado ou não aprovado: verifique o nome e o idioma`,
  templateVariables: (name: string, expected: number, given: number) =>
    `Número de variáveis incorreto: o template "${name}" tem ${expected} placeholder(s) no corpo e foram enviadas ${given} variável(is)`,
  templateHeaderMissing: (name: string, format: string) =>
    `headerMedia é obrigatório: o template "${name}" tem cabeçalho do tipo ${format}`,
  templateHeaderMismatch: (name: string, format: string, given: string) =>
    `headerMedia.type deve ser "${format}": é o tipo de cabeçalho aprovado no template "${name}" (enviado: ${given})`,
  templateHeaderUnexpected: (name: string) =>
    `O template "${name}" não tem cabeçalho de mídia: não envie headerMedia`,
  /** A body that, with its variables in, is longer than a message the platform keeps. */
  templateRenderedTooLong: (name: string, length: number, max: number) =>
    `O corpo do template "${name}" com as variáveis tem ${length} caracteres, e uma mensagem tem no máximo ${max}: envie variáveis mais curtas`,
  /** A provider's template list with more templates than one integration's catalogue holds. */
  templateCatalogueTooLarge: (max: number) =>
    `O provedor listou mais de ${max} templates para a integração: o catálogo não foi atualizado`,
  /** A provider's template list with more text than one integration's catalogue holds. */
  templateCatalogueTooMuchText: (maxChars: number) =>
    `O provedor listou templates com mais de ${maxChars} caracteres ao todo para a integração: o catálogo não foi atualizado`,
  templateRefusedByProvider:
    'Template não encontrado ou não aprovado no provedor: verifique o nome, o idioma e o status de aprovação',
  templateVariablesRefused:
    'Número de variáveis recusado pelo provedor: o template aprovado no provedor tem outro número de placeholders',
  templateMediaRejected:
    'Mídia do cabeçalho inválida ou inacessível: o link deve ser público e o tipo deve corresponder ao template',
  channelNotSupported: (channel: string) => `O canal "${channel}" ainda não é suportado por este conector`,
  /** Given the channels external send reaches; the panel's replies may reach others. */
  externalSendChannel: (channel: string, channels: readonly string[]) =>
    `O envio externo não é suportado em conversas do canal "${channel}": ele só é suportado nos canais ${quotedAlternatives(channels)}`,
  /** A reply on a channel whose provider takes none once its window closes, and that has no templates. */
  replyWindowClosed: (channel: string) =>
    `Fora da janela de 24 horas do canal "${channel}": o contato não escreveu nas últimas 24 horas, e o provedor só aceita respostas dentro dela. Aguarde uma nova mensagem do contato`,
  /** A text longer than the channel's provider takes. */
  textTooLongForChannel: (channel: string, limit: string) =>
    `text excede o limite do canal "${channel}": no máximo ${limit}`,
  // Why a configured URL (webhook, provider base_url) is refused; never the address a name resolved to.
  destinationUnresolvable: (host: string) => `não foi possível resolver ${host}`,
  destinationForbidden: (host: string) => `o destino ${host} aponta para um endereço não permitido`,
  baseUrlRefused: (reason: string) => `config.base_url recusada: ${reason}`,
  providerFailed: (channel: string) => `Falha ao enviar pelo provedor do canal "${channel}"`,
  providerCredentialsRejected: (channel: string) =>
    `O provedor do canal "${channel}" recusou as credenciais da integração (token expirado ou revogado, chave errada ou conta removida): a integração foi desconectada até que sejam corrigidas`,
  /** A send the provider refused after WhatsApp's check found no account for the number. */
  providerRecipientUnknown: (channel: string) =>
    `O provedor do canal "${channel}" recusou o envio: o número não está no WhatsApp`,
  /**
   * A send the provider refused because the recipient cannot get the account's messages: on Telegram, a
   * user who blocked the bot, deleted their account or never started a chat with it.
   */
  providerRecipientUnreachable: (channel: string) =>
    `O provedor do canal "${channel}" recusou o envio: o destinatário não pode receber mensagens desta conta (bloqueou-a, removeu a própria conta ou nunca iniciou uma conversa com ela)`,
  providerRateLimited: (channel: string) =>
    `O provedor do canal "${channel}" limitou os envios (muitas mensagens em pouco tempo): tente novamente em alguns segundos`,
  providerTimedOut: (channel: string) =>
    `O provedor do canal "${channel}" não respondeu a tempo: o envio pode ter sido aceito e não será repetido automaticamente`,
  /** A workspace with as many requests to a route under way at one gateway replica as it may have. */
  workspaceRequestsInFlight: (max: number) =>
    `O workspace já tem ${max} requisições em andamento para este endpoint neste servidor: nada foi feito; tente novamente em instantes`,
  /** A workspace with as many sends waiting on providers in one connector process as it may have. */
  providerSendsBusy: (channel: string, max: number) =>
    `O workspace já tem ${max} envios aguardando a resposta dos provedores: nada foi enviado pelo canal "${channel}"; tente novamente em instantes`,
  /** A second send of a message whose first provider call ended without a known outcome. */
  sendOutcomeUnknown: (messageId: string) =>
    `O envio da mensagem ${messageId} ao provedor foi iniciado e o resultado é desconhecido: ela não será enviada de novo, para não duplicar o envio`,
  /** Why reconciliation failed a message left pending: the connector never recorded the provider's acceptance. */
  pendingUnresolved: (minutes: number) =>
    `Envio não iniciado após ${minutes} minuto(s): nada foi enviado ao provedor, e a mensagem foi marcada como falha`,
  mustBeUuid: (field: string) => `${field} deve ser um UUID`,
  mustBeString: (field: string, max: number) => `${field} deve ser string de até ${max} caracteres`,
  textLength: 'text deve ser string de 1–4096 caracteres',
  leadsRequired: 'Parâmetros obrigatórios: pipeline_id, stage',
  stageInvalid: 'stage deve ser string de 1 a 200 caracteres',
  /** Given the channels that have templates. */
  templateChannel: (channels: readonly string[]) =>
    `channel inválido. Templates (HSM) só são suportados ${channels.length > 1 ? 'pelos canais' : 'pelo canal'} ${quotedAlternatives(channels)}`,
  templateName: 'templateName deve ser string de 1 a 512 caracteres',
  templateLanguage: 'language deve ser um código de idioma como "pt_BR" ou "en"',
  variablesItems: 'variables deve conter apenas strings ou números',
  variablesTooMany: (items: number, length: number) =>
    `variables deve ter no máximo ${items} itens, cada um com até ${length} caracteres`,
  headerMediaObject: 'headerMedia deve ser objeto com type e link',
  headerMediaType: 'headerMedia.type deve ser "image", "video" ou "document"',
  headerMediaLink: 'headerMedia.link é obrigatório e deve ser uma URL http(s)',
  headerMediaFilename: 'headerMedia.filename só é permitido quando headerMedia.type é "document"',
  buttonsNotArray: 'buttons deve ser array',
  buttonEntry: (i: number) => `buttons[${i}] deve ser objeto com index e type`,
  buttonIndex: (i: number) => `buttons[${i}].index deve ser inteiro maior ou igual a 0`,
  buttonType: (i: number) => `buttons[${i}].type deve ser "url" ou "quick_reply"`,
  buttonText: (i: number) => `buttons[${i}].text é obrigatório (string não vazia) para botões do tipo "url"`,
  buttonPayload: (i: number) =>
    `buttons[${i}].payload é obrigatório (string não vazia) para botões do tipo "quick_reply"`,
  buttonIndexRepeated: (index: number) => `buttons não pode repetir o index ${index}`,
  idempotencyKeyInvalid: 'Idempotency-Key deve ter de 1 a 255 caracteres visíveis',
  idempotencyKeyReused: 'Idempotency-Key já usada com outra requisição',
  idempotencyKeyInFlight: 'Uma requisição com esta Idempotency-Key ainda está em andamento',
  methodNotAllowed: 'Método não permitido para esta rota',
  mustBeBoolean: (field: string) => `${field} deve ser booleano`,
  mustBeIsoDate: (field: string) => `${field} deve ser data ISO 8601`,

  // The admin API: workspaces, members, agents and assignment.
  nameRequired: 'name é obrigatório',
  nameNul: 'name não pode conter o caractere NUL',
  nameTooLong: 'name deve ter até 200 caracteres',
  countryCodeInvalid: 'default_country_code deve ter de 1 a 3 dígitos',
  workspaceStatusInvalid: 'status deve ser "active", "inactive" ou "suspended"',
  emailInvalid: 'email inválido',
  memberEmailTaken: 'Já existe um membro com este email neste workspace',
  assigneeTypeInvalid: 'type deve ser "human", "agent" ou null',
  assigneeIdInvalid: 'id deve ser um UUID ou null',
  assigneeHalfGiven: 'type e id devem ser ambos null (remover atribuição) ou ambos preenchidos',
  assigneeNotMember: 'id não é um membro deste workspace',
  assigneeNotAgent: 'id não é um agente deste workspace',
  pageLimitInvalid: 'limit deve ser inteiro de 0 a 200',
  conversationStatusInvalid: 'status deve ser "open", "assigned" ou "resolved"',

  // The admin API: integrations and their provider config.
  /** Given every channel an integration may have. */
  integrationChannelInvalid: (channels: readonly string[]) =>
    `channel deve ser um de: ${channels.join(', ')}`,
  integrationStatusInvalid: 'status deve ser "connected" ou "disconnected"',
  /** A workspace that already has as many integrations as one may. */
  integrationLimitReached: (max: number) => `limite de ${max} integrações por workspace atingido`,
  /**
   * Another connected integration of the workspace is the same provider account: the provider calls one
   * of them only (or both, twice), so a second one connected would be deaf or a copy.
   */
  integrationAccountConnected: (channel: string, integrationId: string) =>
    `A conta do provedor do canal "${channel}" já está conectada neste workspace pela integração ${integrationId}: desconecte-a ou remova-a antes de conectar outra à mesma conta`,
  configNotStrings: 'config deve ser um objeto de strings',
  configTooLarge: (keys: number, chars: number) =>
    `config aceita até ${keys} chaves, cada valor com até ${chars} caracteres`,
  configAllowedOriginsTooMany: (max: number) => `config.allowed_origins lista no máximo ${max} origens`,
  configInvalid: 'config inválido',
  configRequired: (key: string) => `config.${key} é obrigatório`,
  configBaseUrlInvalid: 'config.base_url deve ser uma URL http(s)',
  configAllowedOriginsInvalid:
    'config.allowed_origins deve listar origens http(s) (esquema://host[:porta]) separadas por vírgula ou espaço',
  configApiVersionInvalid: 'config.api_version deve ser como v21.0',
  configBotTokenInvalid: 'config.bot_token deve ser o token do BotFather, como 123456789:AAH…',
  configSecretTokenInvalid: 'config.secret_token deve ter de 1 a 256 caracteres A-Z, a-z, 0-9, _ ou -',
  altBCredentialsIncomplete: 'Integração alt-b sem credenciais completas (instance_id e token)',
  /** The config names the account by an id its provider's notifications do not carry (and says which they do). */
  configAccountNotAsNotified: (channel: string, key: string, field: string, id: string) =>
    `config.${key} deve ser o id da conta nas notificações do provedor do canal "${channel}" (${field}): ${id}`,

  // The admin API: webhooks and their deliveries.
  webhookNotFound: 'Webhook não encontrado neste workspace',
  webhookUrlInvalid: 'url deve ser uma URL http(s)',
  webhookUrlRefused: (reason: string) => `url recusada: ${reason}`,
  /** A workspace that already has as many webhooks as one may. */
  webhookLimitReached: (max: number) => `limite de ${max} webhooks por workspace atingido`,
  webhookEventsInvalid: (eventTypes: readonly string[]) =>
    `events deve ser uma lista de: *, ${eventTypes.join(', ')}`,
  webhookEventsEmpty: 'events não pode ser vazio',
  webhookSecretInvalid: 'secret deve ser string de 1 a 500 caracteres',
  maxPerSecondInvalid: 'max_per_second deve ser inteiro de 1 a 10000',
  graceHoursInvalid: 'grace_hours deve ser número de 0 a 720',
  deliveryStatusInvalid: 'status deve ser pending, delivered ou failed',
  deliveryLimitInvalid: 'limit deve ser inteiro de 1 a 500',
  deliveryNotFound: 'Entrega não encontrada para este webhook',
  deliveryNotResendable: 'Entrega não encontrada para este webhook, ou em tentativa agora',
  webhookDisabledForTest: 'Webhook desativado: ative-o para enviar um evento de teste',

  // The admin API: pipelines and their stages.
  pipelineNotInWorkspace: 'Pipeline não encontrado neste workspace',
  /** A lead history's `after` that names no move of that contact in that pipeline. */
  leadMoveAfterUnknown: 'after não é um movimento deste contato neste pipeline',
  stageKeyInvalid: 'key deve ser string de 1 a 100 caracteres',
  stageNameInvalid: 'name do estágio deve ser string de 1 a 200 caracteres',
  stagesNotList: 'stages deve ser uma lista de { key, name }',
  stagesEmpty: 'stages deve ter ao menos um estágio',
  stagesTooMany: 'stages pode ter no máximo 100 estágios',
  stagePositionInvalid: 'position deve ser inteiro >= 0',
  stageKeysNotList: 'keys deve ser a lista de todas as chaves na nova ordem',
  stageKeysNotPermutation: 'keys deve conter cada chave de estágio do pipeline exatamente uma vez',
  stageKeyRepeated: (key: string) => `A chave de estágio "${key}" se repete no pipeline`,
  stageNotInPipeline: (key: string) => `Estágio "${key}" não encontrado neste pipeline`,
  lastStage: 'Um pipeline precisa de ao menos um estágio',
  moveToInvalid: 'move_to deve ser outro estágio deste pipeline',
  stageHoldsContacts: (key: string, held: number) =>
    `O estágio "${key}" tem ${held} contato(s): informe move_to com o estágio para onde eles vão`,
  // Shown as `moved_by` in the lead history of the contacts a stage removal moved.
  movedByStageRemoval: (key: string) => `admin: estágio "${key}" removido`,
  // Shown as `moved_by` in the lead history of a card moved on the panel's board.
  movedByPanel: 'admin: painel',
  // How a lead move reads in the conversation's history.
  leadMoved: (fromStage: string | null, toStage: string, pipeline: string) =>
    `Lead movido${fromStage ? ` de "${fromStage}"` : ''} para "${toStage}" no pipeline "${pipeline}"`,

  // Providers read these, not API callers: they only need to tell "not ours" from "slow down".
  callbackIntegrationUnknown: 'integração desconhecida',
  callbackHandshakeRefused: 'verificação recusada',
  callbackRefused: 'callback recusado',
  callbacksTooMany: 'callbacks demais; tente novamente mais tarde',
  /** A callback carrying more messages and statuses than any provider batches in one. */
  callbackTooManyItems: (max: number) => `callback com itens demais (no máximo ${max} por callback)`,
  /** A notification that names a resource the provider would not give us now: the provider retries it. */
  callbackResourceUnavailable:
    'o recurso da notificação não pôde ser lido no provedor; tente novamente mais tarde',

  // The live chat widget's API: visitors' browsers read these.
  livechatOriginRefused: 'origem não permitida para este chat',
  livechatUnknown: 'chat desconhecido',
  livechatSessionInvalid: 'sessão de chat inválida ou expirada',
  livechatNameInvalid: 'name deve ter de 1 a 80 caracteres',
  livechatTextInvalid: 'text deve ter de 1 a 4096 caracteres',
  livechatTooMany: 'mensagens demais; tente novamente mais tarde',
} as const;
