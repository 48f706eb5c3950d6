import { describe, expect, it } from 'vitest';
import { BOT_SECRET_HEADER, botAdapter } from './bot.js';
import { InboundRejected } from './channel-adapter.js';

// Updates as the Bot API reference describes them (core.telegram.org/bots/api#update, #message, #user,
// #chat) and as its webhook page's samples show them (core.telegram.org/bots/webhooks, "Testing your
// bot with updates"), with the fields today's Bot API always sends (`chat.type`, `from.is_bot`).
const config = {
  bot_token: '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
  secret_token: 'S3cr3t_t0ken-x',
  base_url: 'https://api.telegram.org',
};

const textUpdate = {
  update_id: 10000,
  message: {
    date: 1441645532,
    chat: { last_name: 'Test Lastname', id: 1111111, type: 'private', first_name: 'Test', username: 'Test' },
    message_id: 1365,
    from: {
      last_name: 'Test Lastname',
      id: 1111111,
      is_bot: false,
      first_name: 'Test',
      username: 'Test',
      language_code: 'pt-br',
    },
    text: '/start',
  },
};

const groupUpdate = {
  update_id: 10001,
  message: {
    date: 1441645532,
    chat: { id: -1001234567890, type: 'supergroup', title: 'Clientes' },
    message_id: 12,
    from: { id: 1111111, is_bot: false, first_name: 'Test' },
    text: 'olá grupo',
  },
};

const photoUpdate = {
  update_id: 10002,
  message: {
    date: 1441645550,
    chat: { id: 2222222, type: 'private', first_name: 'Ana' },
    message_id: 7,
    from: { id: 2222222, is_bot: false, first_name: 'Ana' },
    photo: [
      { file_id: 'AgADBAADbqcxG', file_unique_id: 'AQADbqcxGw', width: 90, height: 67, file_size: 1200 },
    ],
    caption: 'meu pedido',
  },
};

const stickerUpdate = {
  update_id: 10003,
  message: {
    date: 1441645560,
    chat: { id: 2222222, type: 'private', username: 'ana_s' },
    message_id: 8,
    from: { id: 2222222, is_bot: false, first_name: '', username: 'ana_s' },
    sticker: {
      file_id: 'CAACAgIAAxk',
      file_unique_id: 'AgADPgAD',
      type: 'regular',
      width: 512,
      height: 512,
      is_animated: false,
      is_video: false,
    },
  },
};

const editedUpdate = {
  update_id: 10004,
  edited_message: { ...textUpdate.message, edit_date: 1441645600, text: '/start again' },
};

const read = (body: unknown, secret: string | null = config.secret_token) =>
  botAdapter.readInbound(config, {
    headers: secret === null ? {} : { [BOT_SECRET_HEADER]: secret },
    rawBody: Buffer.from(JSON.stringify(body)),
  });

describe('bot adapter: Telegram updates', () => {
  it('reads a private text message: the user id as the contact key, the name as Telegram gives it', () => {
    const batch = read(textUpdate);
    expect(batch.messages).toEqual([
      {
        providerMessageId: '1111111:1365',
        from: '1111111',
        keyedBy: 'user_id',
        name: 'Test Test Lastname',
        text: '/start',
        type: 'text',
        sentAt: new Date(1441645532 * 1000),
      },
    ]);
  });

  it('refuses an update without the secret token header, or with another one', () => {
    expect(() => read(textUpdate, null)).toThrow(InboundRejected);
    expect(() => read(textUpdate, 'S3cr3t_t0ken-y')).toThrow(InboundRejected);
  });

  it('ignores groups, supergroups and channels', () => {
    expect(read(groupUpdate)).toEqual({ messages: [], statuses: [] });
    const channelPost = {
      update_id: 10005,
      channel_post: { ...groupUpdate.message, chat: { id: -100987, type: 'channel', title: 'News' } },
    };
    expect(read(channelPost)).toEqual({ messages: [], statuses: [] });
  });

  it('takes a photo with its caption as an image, and names a user without a name by username', () => {
    expect(read(photoUpdate).messages[0]).toMatchObject({ type: 'image', text: 'meu pedido', name: 'Ana' });
  });

  it('takes what a person sent that is no text: a sticker by its emoji, a contact, a poll, a GIF, a place', () => {
    const withMessage = (fields: Record<string, unknown>) => ({
      ...stickerUpdate,
      message: { ...stickerUpdate.message, sticker: undefined, ...fields },
    });
    expect(read(stickerUpdate).messages[0]).toMatchObject({ type: 'others', text: '' });
    const said = (fields: Record<string, unknown>) => {
      const { type, text } = read(withMessage(fields)).messages[0]!;
      return [type, text];
    };
    expect(said({ sticker: { ...stickerUpdate.message.sticker, emoji: '👍' } })).toEqual(['others', '👍']);
    expect(said({ contact: { phone_number: '+5511999990000', first_name: 'Bia', user_id: 3 } })).toEqual([
      'others',
      'Bia +5511999990000',
    ]);
    expect(said({ poll: { id: '1', question: 'Qual sabor?', options: [] } })).toEqual([
      'others',
      'Qual sabor?',
    ]);
    expect(said({ dice: { emoji: '🎲', value: 4 } })).toEqual(['others', '🎲']);
    expect(
      said({ animation: { file_id: 'CgAC' }, document: { file_name: 'gif.mp4' }, caption: 'olha' }),
    ).toEqual(['video', 'olha']);
    expect(said({ video_note: { file_id: 'DQAC', length: 240, duration: 5 } })).toEqual(['video', '']);
    const location = { latitude: -23.5, longitude: -46.6 };
    expect(said({ location, venue: { location, title: 'Loja Centro', address: 'Rua A' } })).toEqual([
      'location',
      'Loja Centro, Rua A (-23.5, -46.6)',
    ]);
    expect(said({ location: { ...location, horizontal_accuracy: 20 } })).toEqual([
      'location',
      '-23.5, -46.6',
    ]);
    // A service message is nothing anyone wrote.
    const pinned = read(withMessage({ pinned_message: { message_id: 7 } }));
    expect(pinned.messages).toEqual([]);
    expect(pinned.unreadable).toEqual([
      { providerMessageId: '2222222:8', reason: expect.stringContaining('service message') },
    ]);
  });

  it('acknowledges and drops updates of other kinds (an edit)', () => {
    expect(read(editedUpdate)).toEqual({ messages: [], statuses: [] });
  });

  it('ignores messages from other bots', () => {
    const fromBot = {
      ...textUpdate,
      message: { ...textUpdate.message, from: { ...textUpdate.message.from, is_bot: true } },
    };
    expect(read(fromBot).messages).toEqual([]);
  });

  it('uses the bot id, the part of the token before the colon, as the account', async () => {
    const { descriptorOf } = await import('@inbox/contracts');
    const parsed = descriptorOf('bot').config.parse({ bot_token: config.bot_token, secret_token: 'x' });
    expect(parsed.base_url).toBe('https://api.telegram.org');
    expect(descriptorOf('bot').accountId(parsed, 'ignored')).toBe('123456789');
    // Tokens the Bot API server refuses as invalid before asking Telegram are refused at the door.
    for (const bot_token of ['0123456789:AAH', `123456789:${'A'.repeat(80)}`, '18014398509481984:AAH'])
      expect(descriptorOf('bot').config.safeParse({ bot_token, secret_token: 'x' }).success).toBe(false);
    expect(
      descriptorOf('bot').config.safeParse({ bot_token: '18014398509481983:AAH', secret_token: 'x' }).success,
    ).toBe(true);
    const refused = descriptorOf('bot').config.safeParse({ bot_token: 'not a token', secret_token: 'a b' });
    expect(refused.error?.issues.map((issue) => issue.message)).toEqual([
      'config.bot_token deve ser o token do BotFather, como 123456789:AAH…',
      'config.secret_token deve ter de 1 a 256 caracteres A-Z, a-z, 0-9, _ ou -',
    ]);
  });
});
