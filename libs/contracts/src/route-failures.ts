import { AppError } from './app-error.js';
import { channelDescriptors, externalSendChannels, templateChannels } from './channels.js';
import type { ErrorResponse } from './error-response.js';
import { errorTexts, platformTexts } from './error-texts.js';
import { maxRenderedTemplateChars } from './public-api.js';
import { schemaTexts } from './schema-texts.js';
import {
  endpointsPerWorkspace,
  integrationsPerWorkspace,
  sendsInFlightPerWorkspace,
} from './workspace-limits.js';

/**
 * A failure a route may answer that its entry in the route table does not show: when it happens, and
 * its exact answer (with sample values where the text names something).
 */
export interface RouteFailure {
  status: number;
  when: string;
  body: ErrorResponse;
}

const answers = (when: string, { status, body }: AppError): RouteFailure => ({ status, when, body });

/**
 * The failures each route's owner answers, and the texts a field writes from inside its own check, by
 * operationId. What the table itself shows (the key, the rate limit, the path, query and body schemas,
 * Idempotency-Key, an owner that does not answer) the OpenAPI document derives from it.
 */
export const routeFailures: Readonly<Record<string, readonly RouteFailure[]>> = (() => {
  const integration = (channel: string) => [
    answers('the integration is not connected', AppError.badRequest(errorTexts.integrationNotConnected)),
    answers(
      'integrationId is not an integration of this workspace and channel',
      AppError.notFound(platformTexts.integrationNotFound),
    ),
    answers(
      'no integration of the channel is connected (the text names the channel)',
      AppError.notFound(platformTexts.noConnectedIntegration(channel)),
    ),
  ];
  const provider = (channel: string) => [
    answers(
      "the channel's provider refused or failed the send (the text names the channel)",
      new AppError(502, { error: platformTexts.providerFailed(channel) }),
    ),
    answers(
      'the provider did not answer in time: it may have accepted the message, which is not sent again',
      new AppError(504, { error: platformTexts.providerTimedOut(channel) }),
    ),
    answers(
      `${sendsInFlightPerWorkspace} of the workspace's sends already wait on providers in the connector that took this one: nothing was sent, try again in a moment`,
      new AppError(503, { error: platformTexts.providerSendsBusy(channel, sendsInFlightPerWorkspace) }),
    ),
    answers(
      'a retry (same Idempotency-Key) of a request whose provider call began and never reported back: the message, named by its id, is not sent again and stays pending (the conversation read shows why)',
      new AppError(409, { error: platformTexts.sendOutcomeUnknown('0b6f3c8e-2f4a-4c1e-9a57-5d2e8c7b1a90') }),
    ),
  ];
  // What the connector answers to the official provider's refusals it acts on; with its code.
  const officialRefusals = [
    answers(
      "the provider refused the integration's credentials (an expired or revoked token, an app secret not the app's): the integration is disconnected, status_reason credentials_rejected",
      new AppError(502, {
        error: platformTexts.providerCredentialsRejected('chat-official'),
        meta_error_code: 190,
      }),
    ),
    answers(
      "the provider's rate limit refused the send (130429 after two more tries, or 131056 for one number): try again in a few seconds",
      new AppError(502, {
        error: platformTexts.providerRateLimited('chat-official'),
        meta_error_code: 131056,
      }),
    ),
  ];
  const altACredentials = answers(
    'Evolution says the instance does not exist (it was deleted): the integration is disconnected, status_reason credentials_rejected',
    new AppError(502, { error: platformTexts.providerCredentialsRejected('alt-a') }),
  );
  const recipientUnknown = answers(
    'WhatsApp has no account for the number (Evolution checks it before sending): nothing was sent, and sending it again will not change that',
    new AppError(502, { error: platformTexts.providerRecipientUnknown('alt-a') }),
  );
  const botRecipientUnreachable = answers(
    'Telegram: the user blocked the bot, deleted their account or never started a chat with it: nothing was sent, and sending it again will not change that until they write to the bot',
    new AppError(502, { error: platformTexts.providerRecipientUnreachable('bot') }),
  );
  const accountConnected = answers(
    'another connected integration of the workspace is the same provider account (channel, account and base_url; the text names it): the provider would call only one of them, or both with every message; nothing was changed, and the provider was not called',
    new AppError(409, {
      error: platformTexts.integrationAccountConnected('bot', '3f1d2c4b-8a6e-4f0d-9b7a-2c5e1d8f4a63'),
    }),
  );
  // Registering an integration's inbound URL with its provider: on creation, and on connecting it again
  // (a refusal then leaves it disconnected).
  const registration = [
    answers(
      "the provider refused to register the integration's inbound URL",
      new AppError(502, { error: platformTexts.inboundRegistrationFailed('alt-a') }),
    ),
    answers(
      "config names the account by an id the provider's notifications do not carry (an Instagram account's app-scoped id; the text names the right one)",
      AppError.badRequest(
        platformTexts.configAccountNotAsNotified('photo', 'ig_user_id', 'user_id', '17841400000000001'),
      ),
    ),
    answers(
      "the provider refused the integration's credentials, or knows no such account (a mistyped instance)",
      AppError.badRequest(platformTexts.inboundRegistrationCredentialsRejected('alt-a')),
    ),
    answers(
      'the provider refused the callback URL that PUBLIC_CONNECTOR_URL makes (the text says why: not https, too long, a port the provider does not call)',
      new AppError(502, {
        error: platformTexts.inboundRegistrationRefused('chat-official', [
          platformTexts.callbackUrlNotHttps('http://connector.example/inbound/chat-official/…'),
        ]),
      }),
    ),
  ];
  const agentNotFound = answers(
    'agentId is not an AI agent of this workspace',
    AppError.badRequest(platformTexts.agentNotFound),
  );
  const windowClosed = answers(
    'official channel: the number has not written in the last 24 hours (use send-template)',
    AppError.windowClosed(),
  );
  const altBIncomplete = answers(
    'the alt-b integration lacks instance_id or token',
    new AppError(500, { error: platformTexts.altBCredentialsIncomplete }),
  );
  // Each channel's config is checked against its descriptor's schema, whose texts name the field.
  const configTexts = [
    ...new Set(
      Object.values(channelDescriptors).flatMap(({ config }) =>
        schemaTexts(config, 'config').map(({ text }) => text),
      ),
    ),
  ];
  const template = { name: 'boas_vindas', language: 'pt_BR' };
  const templateAnswer = (when: string, code: 132000 | 132001 | 131053, text: string) =>
    answers(`${when} (meta_error_code ${code})`, AppError.template(code, text));
  // Buttons are checked entry by entry; the texts name the entry at fault (here the first).
  const button = (when: string, text: string) => answers(when, AppError.badRequest(text));

  const conversationNotFound = answers(
    'the conversation is not one of this workspace',
    AppError.notFound(errorTexts.conversationNotFound),
  );
  const integrationNotFound = answers(
    'the integration is not one of this workspace',
    AppError.notFound(platformTexts.integrationNotFound),
  );
  const notOfficial = answers(
    'the integration is not of the official channel, the only one with templates',
    AppError.badRequest(platformTexts.templateChannel(templateChannels)),
  );
  const pipelineNotFound = answers(
    'the pipeline is not one of this workspace',
    AppError.notFound(platformTexts.pipelineNotInWorkspace),
  );
  const stageNotFound = answers(
    'the pipeline has no stage with this key (the text names it)',
    AppError.notFound(platformTexts.stageNotInPipeline('negociacao')),
  );
  const repeatedKey = answers(
    'a stage key would appear twice in the pipeline (the text names it)',
    AppError.badRequest(platformTexts.stageKeyRepeated('negociacao')),
  );
  const webhookNotFound = answers(
    'the webhook is not one of this workspace',
    AppError.notFound(platformTexts.webhookNotFound),
  );
  const urlRefused = answers(
    'url leads to an address the dispatcher may not call, or to a name that does not resolve',
    AppError.badRequest(platformTexts.webhookUrlRefused(platformTexts.destinationForbidden('localhost'))),
  );

  const externalSend = [
    conversationNotFound,
    answers(
      "the conversation's integration is not connected",
      AppError.badRequest(errorTexts.integrationNotConnected),
    ),
    windowClosed,
    answers(
      'Messenger or Instagram: the contact has not written in the last 24 hours, and nothing reopens the window',
      AppError.badRequest(platformTexts.replyWindowClosed('social')),
    ),
    altBIncomplete,
    ...provider('bot'),
    botRecipientUnreachable,
    recipientUnknown,
    altACredentials,
    ...officialRefusals,
  ];
  const moveLead = [
    answers('the contact is not one of this workspace', AppError.notFound(errorTexts.contactNotFound)),
    answers('the pipeline is not one of this workspace', AppError.badRequest(errorTexts.pipelineNotFound)),
    answers(
      'the pipeline has no stage with this key (the text names both)',
      AppError.badRequest(errorTexts.stageNotFound('negociacao', 'Vendas')),
    ),
    answers(
      'conversation_id is not a conversation of this contact',
      AppError.badRequest(errorTexts.conversationNotOfContact),
    ),
  ];
  // Answered by the gateway from two owners; either may be out of reach.
  const twoOwners = (owner: string) => [
    answers(`${owner} is not reachable`, AppError.unavailable()),
    answers(
      `${owner} did not answer in time (the text names it)`,
      new AppError(504, { error: platformTexts.serviceTimeout('messaging') }),
    ),
  ];

  return {
    sendMessage: [
      ...integration('alt-a'),
      agentNotFound,
      windowClosed,
      altBIncomplete,
      ...provider('alt-b'),
      recipientUnknown,
      altACredentials,
      ...officialRefusals,
    ],
    sendTemplate: [
      button('buttons is not an array', platformTexts.buttonsNotArray),
      button('an entry of buttons is not an object', platformTexts.buttonEntry(0)),
      button("an entry's index is not an integer of 0 or more", platformTexts.buttonIndex(0)),
      button("an entry's type is neither url nor quick_reply", platformTexts.buttonType(0)),
      button('a url button has no text', platformTexts.buttonText(0)),
      button('a quick_reply button has no payload', platformTexts.buttonPayload(0)),
      button('two entries have the same index', platformTexts.buttonIndexRepeated(0)),
      ...integration('chat-official'),
      notOfficial,
      agentNotFound,
      templateAnswer(
        'no approved template of this name and language',
        132001,
        platformTexts.templateNotFound(template.name, template.language),
      ),
      templateAnswer(
        'as many variables as the body has placeholders are needed',
        132000,
        platformTexts.templateVariables(template.name, 2, 1),
      ),
      templateAnswer(
        'the template has a media header and headerMedia is absent',
        131053,
        platformTexts.templateHeaderMissing(template.name, 'image'),
      ),
      templateAnswer(
        "headerMedia.type is not the template's header type",
        131053,
        platformTexts.templateHeaderMismatch(template.name, 'image', 'video'),
      ),
      templateAnswer(
        'the template has no media header and headerMedia is given',
        131053,
        platformTexts.templateHeaderUnexpected(template.name),
      ),
      answers(
        `the body with its variables in is longer than ${maxRenderedTemplateChars} characters`,
        AppError.badRequest(
          platformTexts.templateRenderedTooLong(
            template.name,
            maxRenderedTemplateChars + 1,
            maxRenderedTemplateChars,
          ),
        ),
      ),
      templateAnswer(
        'the provider does not know the template or has not approved it',
        132001,
        platformTexts.templateRefusedByProvider,
      ),
      templateAnswer(
        'the provider counts another number of placeholders',
        132000,
        platformTexts.templateVariablesRefused,
      ),
      templateAnswer(
        "the provider cannot fetch the header's media, or its type does not match",
        131053,
        platformTexts.templateMediaRejected,
      ),
      ...provider('chat-official'),
      ...officialRefusals,
    ],
    externalSend: [
      ...externalSend,
      answers(
        "external send does not reach the conversation's channel (the text names it and those it reaches)",
        AppError.badRequest(platformTexts.externalSendChannel('social', externalSendChannels)),
      ),
    ],
    moveLead,

    createIntegration: [
      accountConnected,
      ...configTexts.map((text) =>
        answers(
          "config does not fit the channel's provider (the text names the field)",
          AppError.badRequest(text),
        ),
      ),
      answers(
        'config.base_url leads to an address the connector may not call, or does not resolve',
        AppError.badRequest(platformTexts.baseUrlRefused(platformTexts.destinationForbidden('localhost'))),
      ),
      answers(
        'the workspace has as many integrations as one may',
        AppError.badRequest(platformTexts.integrationLimitReached(integrationsPerWorkspace)),
      ),
      ...registration,
    ],
    getIntegration: [integrationNotFound],
    updateIntegration: [integrationNotFound, accountConnected, ...registration],
    listTemplates: [integrationNotFound, notOfficial],
    refreshTemplates: [
      integrationNotFound,
      notOfficial,
      answers(
        'the provider failed to list the templates',
        new AppError(502, { error: platformTexts.providerFailed('chat-official') }),
      ),
      officialRefusals[0]!,
    ],

    createMember: [
      answers(
        'a member of the workspace already has this email',
        new AppError(409, { error: platformTexts.memberEmailTaken }),
      ),
    ],

    getConversation: [conversationNotFound],
    listFailedMessages: [],
    assignConversation: [
      conversationNotFound,
      answers(
        'type human: id is not a member of the workspace',
        AppError.badRequest(platformTexts.assigneeNotMember),
      ),
      answers(
        'type agent: id is not an AI agent of the workspace',
        AppError.badRequest(platformTexts.assigneeNotAgent),
      ),
    ],
    resolveConversation: [conversationNotFound],
    // Answered by the gateway from two owners: messaging has the contact, pipeline its stages.
    getContact: [
      answers('the contact is not one of this workspace', AppError.notFound(errorTexts.contactNotFound)),
      ...twoOwners('messaging or pipeline'),
    ],
    replyToConversation: externalSend,

    createPipeline: [repeatedKey],
    getPipeline: [pipelineNotFound],
    renamePipeline: [pipelineNotFound],
    addStage: [pipelineNotFound, repeatedKey],
    reorderStages: [
      pipelineNotFound,
      answers(
        "keys is not each of the pipeline's stage keys exactly once",
        AppError.badRequest(platformTexts.stageKeysNotPermutation),
      ),
    ],
    renameStage: [pipelineNotFound, stageNotFound],
    removeStage: [
      pipelineNotFound,
      stageNotFound,
      answers("it is the pipeline's only stage", AppError.badRequest(platformTexts.lastStage)),
      answers(
        'move_to is not another stage of the pipeline',
        AppError.badRequest(platformTexts.moveToInvalid),
      ),
      answers(
        'the stage holds contacts and move_to does not say where they go (the text names both)',
        new AppError(409, { error: platformTexts.stageHoldsContacts('negociacao', 3) }),
      ),
    ],
    leadHistory: [
      pipelineNotFound,
      answers(
        'after names no move of this contact in this pipeline',
        AppError.badRequest(platformTexts.leadMoveAfterUnknown),
      ),
    ],
    listPipelineContacts: [pipelineNotFound, ...twoOwners('pipeline or messaging')],
    moveContact: moveLead,

    createWebhook: [
      urlRefused,
      answers(
        'the workspace has as many webhooks as one may',
        AppError.badRequest(platformTexts.webhookLimitReached(endpointsPerWorkspace)),
      ),
    ],
    getWebhook: [webhookNotFound],
    updateWebhook: [webhookNotFound, urlRefused],
    deleteWebhook: [webhookNotFound],
    rotateWebhookSecret: [webhookNotFound],
    listDeliveries: [webhookNotFound],
    getDelivery: [
      webhookNotFound,
      answers('the delivery is not one of this webhook', AppError.notFound(platformTexts.deliveryNotFound)),
    ],
    resendDelivery: [
      webhookNotFound,
      answers(
        'the delivery is not one of this webhook, or is being attempted right now',
        AppError.notFound(platformTexts.deliveryNotResendable),
      ),
    ],
    replayFailed: [webhookNotFound],
    sendTestEvent: [
      webhookNotFound,
      answers(
        'the endpoint is disabled: enable it first',
        new AppError(409, { error: platformTexts.webhookDisabledForTest }),
      ),
    ],
  };
})();
