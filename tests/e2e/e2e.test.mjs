// The end-to-end suite: the official OpenAI Node client (npm `openai`)
// against a real `omniserve up` on the demo model, as a user runs it. Every
// issue that adds a capability adds its scenarios here. Run with
// `tests/node/run.sh BINARY tests/e2e/e2e.test.mjs` (CTest: e2e_openai_up).
//
// OMNISERVE_BINARY names the binary. The suite starts `omniserve up --port 0`
// with a data directory of its own, reads the client port from up's log line
// "the OpenAI API (model M) is served by the ROLE on http://HOST:PORT", and stops
// it with SIGTERM at the end (exit code 0 expected). Waits are fail-fast
// bounds, never performance assertions.
//
// OmniServe's ten scenarios (../shared/spec/omni-model.md) are named in the
// test titles: 1 and 5 (image understanding; one Omni model serves both
// tracks here), 2, 3, 6 and 7 in this file; 4 and 8 in audio_video.test.mjs;
// 9 and 10 in speech.test.mjs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { joinChatStream } from '../node/chat_stream.mjs';
import { OpenAI, Stack, toFile } from './stack.mjs';

let stack;
let origin;      // http://127.0.0.1:PORT
let client;
const model = 'omni-demo';

// Image fixtures (tests/data/vision, tests/data/media) and a loopback
// server for http image URLs; the stack may fetch from loopback only
// because its config says so.
const IMAGES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'data');
const image = (name) => readFileSync(path.join(IMAGES, name));
const dataUrl = (bytes, type = 'image/jpeg') => `data:${type};base64,${bytes.toString('base64')}`;
let configDir;
let imageServer;
let imageOrigin;

before(async () => {
  configDir = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-config-'));
  const config = path.join(configDir, 'up.yaml');
  // A short fetch deadline and an 8 MiB limit, so the slow and the oversize
  // URLs below fail fast.
  writeFileSync(config, 'orchestrator:\n  media: {fetch_allow_loopback: true, fetch_timeout_ms: 2000, max_bytes: 8388608}\n');
  imageServer = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url, 'http://x').pathname.slice(1));
    if (name === 'slow.png') return;  // never answers
    if (name === 'loop.png') return res.writeHead(302, { location: '/loop.png' }).end();
    if (name === 'big.png') return res.writeHead(200, { 'content-length': String(9 << 20) }).end(Buffer.alloc(9 << 20));
    try {
      const bytes = image(name);
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => imageServer.listen(0, '127.0.0.1', resolve));
  imageOrigin = `http://127.0.0.1:${imageServer.address().port}`;
  stack = await new Stack(process.env.OMNISERVE_BINARY, ['--config', config]).start();
  origin = stack.origin;
  client = stack.client();
});

after(async () => {
  if (stack) await stack.dispose();
  if (imageServer) { imageServer.closeAllConnections(); imageServer.close(); }
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

// A Prometheus sample's value from a /metrics text (0 when absent).
async function metric(url, sample) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

// Long enough for the gateway's approximate prefix index (64-character
// blocks) to match a conversation's earlier turns.
const SYSTEM = 'You are a concise travel assistant. You answer questions about the weather, food and trains ' +
  'in the cities of Korea, and you say when you do not know.';
const NO_THINK = { chat_template_kwargs: { skip_reasoning: true } };

async function postRaw(pathname, body, headers = { 'content-type': 'application/json' }) {
  const r = await fetch(`${origin}${pathname}`, { method: 'POST', headers, body });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // checked by the caller
  }
  return { status: r.status, text, json };
}

// Sends `bytes` on a new connection and returns what comes back until the
// server closes it (or 10 s pass).
function rawExchange(bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(origin).port), '127.0.0.1');
    let got = '';
    socket.setTimeout(10_000, () => socket.destroy());
    socket.on('data', (d) => { got += d.toString('latin1'); });
    socket.on('error', (e) => (got ? resolve(got) : reject(e)));
    socket.on('close', () => resolve(got));
    socket.write(bytes);
  });
}

function checkUsage(usage, maxTokens) {
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, `prompt_tokens ${usage.prompt_tokens}`);
  assert.ok(usage.completion_tokens >= 1 && usage.completion_tokens <= maxTokens, `completion_tokens ${usage.completion_tokens}`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

test('GET /health reports every child of up, and /v1/models lists the demo model', async () => {
  const health = await fetch(`${origin}/health`);
  assert.equal(health.status, 200);
  const report = await health.json();
  assert.equal(report.status, 'ok', JSON.stringify(report));
  assert.deepEqual(report.components.map((c) => [c.name, c.status]),
    [['gateway', 'ok'], ['store', 'ok'], ['llm-0', 'ok'], ['llm-1', 'ok'], ['vision-encoder', 'ok'], ['audio-encoder', 'ok'],
      ['vision-decoder', 'ok'], ['audio-decoder', 'ok']]);
  assert.equal(report.components[0].url, stack.urlOf('gateway'));
  assert.equal(report.components[2].url, stack.urlOf('llm-0'));
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
  assert.equal(models.data[0].object, 'model');
});

test('plain text (scenario 2): an assistant message, a finish reason and usage', async () => {
  const r = await client.chat.completions.create({
    model, max_tokens: 10, temperature: 0, ...NO_THINK,
    messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Is it cold in Seoul in January?' }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  checkUsage(r.usage, 10);
});

test('streaming with include_usage: the same greedy text and token counts as not streamed', async () => {
  const params = {
    model, max_tokens: 12, temperature: 0, ...NO_THINK,
    messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Which train goes from Seoul to Busan?' }],
  };
  const whole = await client.chat.completions.create(params);
  const streamed = await joinChatStream(client, params);
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  checkUsage(streamed.usage, 12);
  assert.equal(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
  assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
});

test('reasoning (scenario 3): the thought is reasoning_content, capped by thinking_token_budget', async () => {
  const r = await client.chat.completions.create({
    model, max_tokens: 24, temperature: 0, thinking_token_budget: 4, logprobs: true,
    messages: [{ role: 'user', content: 'Think, then answer: what is kimchi?' }],
  });
  const m = r.choices[0].message;
  // The demo model's greedy thought is stray <|visionN|> tokens, which the
  // orchestrator keeps from clients (image text never reaches them), so the
  // thought's text may be empty here; its length is checked on the LLM
  // server itself (tests/node/openai.test.mjs).
  assert.equal(typeof m.reasoning_content, 'string', 'no reasoning_content');
  assertNoImageText(JSON.stringify(r));
  const tokens = r.choices[0].logprobs.content.map((e) => e.token);
  const end = tokens.indexOf('</think>');
  assert.ok(end >= 0 && end <= 4, `</think> at ${end} of ${JSON.stringify(tokens)}`);
});

test('tool calls: a named tool_choice returns arguments typed by the schema, streamed and not', async () => {
  const tool = {
    type: 'function',
    function: {
      name: 'book_train',
      description: '기차표 예매 (book train tickets)',
      parameters: {
        type: 'object',
        properties: { seats: { type: 'integer' }, window: { type: 'boolean' }, to: { type: 'string' } },
        required: ['seats', 'window', 'to'],
      },
    },
  };
  const params = {
    model, tools: [tool], tool_choice: { type: 'function', function: { name: 'book_train' } },
    max_tokens: 800, temperature: 0.7, seed: 11, ...NO_THINK,
    messages: [{ role: 'user', content: 'Two seats to Busan, by the window.' }],
  };
  const check = (text) => {
    const args = JSON.parse(text);
    assert.ok(Number.isInteger(args.seats), `seats ${JSON.stringify(args.seats)}`);
    assert.equal(typeof args.window, 'boolean');
    assert.equal(typeof args.to, 'string');
  };
  const r = await client.chat.completions.create(params);
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(r.choices[0].message.tool_calls.length, 1);
  assert.equal(r.choices[0].message.tool_calls[0].function.name, 'book_train');
  check(r.choices[0].message.tool_calls[0].function.arguments);
  const s = await joinChatStream(client, params);
  assert.equal(s.finish, 'tool_calls');
  assert.equal(s.calls.length, 1);
  assert.equal(s.calls[0].arguments, r.choices[0].message.tool_calls[0].function.arguments);
});

test('multi-turn: the second turn reports the first turn\'s prefix as cached tokens', async () => {
  // A system prompt of its own, so that only this conversation holds it.
  const system = 'You plan food trips in Jeollabuk-do. Suggest one dish and one restaurant street per answer, ' +
    'and mention the season when it matters.';
  const messages = [{ role: 'system', content: system }, { role: 'user', content: 'What should I eat in Jeonju?' }];
  const first = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, ...NO_THINK });
  messages.push({ role: 'assistant', content: first.choices[0].message.content });
  messages.push({ role: 'user', content: 'And where should I stay there?' });
  const second = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, ...NO_THINK });
  const cached = second.usage.prompt_tokens_details?.cached_tokens;
  // Whole 16-token blocks of the shared prefix: at least the system prompt's.
  assert.ok(Number.isInteger(cached), `no cached_tokens in ${JSON.stringify(second.usage)}`);
  assert.equal(cached % 16, 0, `cached_tokens ${cached} is not whole blocks`);
  assert.ok(cached >= Math.floor(first.usage.prompt_tokens / 2 / 16) * 16 && cached > 0,
    `cached_tokens ${cached} of a first turn of ${first.usage.prompt_tokens} prompt tokens`);
  assert.ok(cached < second.usage.prompt_tokens);
});

test('errors: precise 4xx OpenAI errors, and the stack keeps serving', async () => {
  const user = [{ role: 'user', content: 'hi' }];
  // Malformed JSON.
  const malformed = await postRaw('/v1/chat/completions', '{"model": "omni-demo", "messages": [');
  assert.equal(malformed.status, 400, malformed.text);
  assert.equal(malformed.json?.error?.code, 'invalid_json', malformed.text);
  // Wrong types, through the client.
  for (const [params, param] of [[{ messages: 'hi' }, 'messages'], [{ messages: user, max_tokens: 'ten' }, 'max_tokens'],
    [{ messages: user, temperature: -1 }, 'temperature']]) {
    await assert.rejects(client.chat.completions.create({ model, ...params }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param,
      `expected a 400 on ${param}`);
  }
  // Unknown model.
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: user }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  // A named tool_choice for a tool the request does not have.
  await assert.rejects(client.chat.completions.create({
    model, messages: user, tools: [{ type: 'function', function: { name: 'known' } }],
    tool_choice: { type: 'function', function: { name: 'unknown' } },
  }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.function.name');
  // An audio part whose WAV holds no samples: the audio encoder's 400, naming the part.
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' },
      { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } }] }],
  }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1]',
  'expected a 400 naming the input_audio part');
  // An oversize body (a Content-Length over the 64 MiB limit): 413 before
  // the body is read, and nothing else breaks.
  const head = await rawExchange(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${65 << 20}\r\n\r\n{"model":"omni-demo"`);
  assert.match(head, /^HTTP\/1\.1 413 /, head.slice(0, 300));
  // Still serving.
  const ok = await client.chat.completions.create({ model, messages: user, max_tokens: 2 });
  assert.equal(ok.choices.length, 1);
});

test('image understanding on the Omni model (scenarios 1 and 5): a question about a data: URL image is answered; the same image under an http URL is not encoded again and hits the prefix cache', async () => {
  const encoder = stack.urlOf('vision-encoder');
  const jpeg = image('vision/wide.jpg');
  const ask = (url) => client.chat.completions.create({
    model, max_tokens: 4, temperature: 0, ...NO_THINK,
    messages: [{ role: 'system', content: SYSTEM },
      { role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'What is in this picture?' }] }],
  });
  const encodedBefore = await metric(encoder, 'omni_encoder_encoded_total');
  const first = await ask(dataUrl(jpeg, 'image/png'));  // the claimed type does not matter: the bytes are sniffed
  assert.equal(first.object, 'chat.completion');
  checkUsage(first.usage, 4);
  // 729 TA-Tok ids + 72 continuous rows (a 500x123 image -> 504x112 -> 36x8 patches -> 72 rows) + the text.
  assert.ok(first.usage.prompt_tokens > 729 + 72, `prompt_tokens ${first.usage.prompt_tokens}`);
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), encodedBefore + 1);
  const second = await ask(`${imageOrigin}/vision/wide.jpg?signature=abc`);
  assert.equal(second.usage.prompt_tokens, first.usage.prompt_tokens);
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), encodedBefore + 1, 'no second encoder call');
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 729,
    `cached_tokens ${second.usage.prompt_tokens_details.cached_tokens}`);
  assert.equal(second.choices[0].message.content, first.choices[0].message.content);  // greedy, same prompt
});

test('images: two images of one request are encoded concurrently', async () => {
  const encoder = stack.urlOf('vision-encoder');
  const encodedBefore = await metric(encoder, 'omni_encoder_encoded_total');
  const id = `e2e-two-images-${process.pid}-${Date.now()}`;
  const r = await client.chat.completions.create({
    model, max_tokens: 2, ...NO_THINK,
    messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUrl(image('vision/tall.jpg')) } },
      { type: 'image_url', image_url: { url: `${imageOrigin}/vision/capped.jpg` } },
      { type: 'text', text: 'Compare the two pictures.' }] }],
  }, { headers: { 'x-request-id': id } });
  assert.equal(r.choices.length, 1);
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), encodedBefore + 2);
  // Both encode requests reached the encoder before either was answered.
  const lines = stack.log.split('\n').filter((l) => l.includes(id) && l.includes('role=encoder'));
  const queued = lines.map((l, i) => (l.includes('queued') ? i : -1)).filter((i) => i >= 0);
  const done = lines.findIndex((l) => l.includes(' encoded '));
  assert.equal(queued.length, 2, lines.join('\n'));
  assert.ok(done > queued[1], `the second request was queued after the first was done:\n${lines.join('\n')}`);
});

test('images: bad media get precise 4xx errors naming the part, and the stack keeps serving', async () => {
  const ask = (url) => client.chat.completions.create({
    model, max_tokens: 2,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url } }] }],
  });
  const cases = [
    [dataUrl(image('media/truncated.jpg')), 400, /truncated/],
    [dataUrl(image('media/corrupt.png')), 400, /PNG image is corrupt/],
    [dataUrl(image('media/truncated.webp')), 400, /WebP image is corrupt/],
    [dataUrl(image('media/truncated.gif')), 400, /GIF image is corrupt/],
    [dataUrl(image('media/bomb.png')), 413, /100000x100000 pixels/],
    ['data:image/jpeg;base64,', 400, /empty/],
    [dataUrl(image('media/text.jpg')), 415, /not an image or a video \(text\)/],
    [dataUrl(image('media/image.bmp')), 415, /BMP images are not supported/],
    ['file:///etc/passwd', 400, /not allowed|file/],
    ['http://169.254.169.254/latest/meta-data', 400, /not allowed/],
    [`${imageOrigin}/no-such-image.png`, 404, /404/],
    ['http://127.0.0.1:1/closed-port.png', 400, /could not download the image/],
    [`${imageOrigin}/slow.png`, 400, /could not download the image/],
    [`${imageOrigin}/loop.png`, 400, /more than 3 redirects/],
    [`${imageOrigin}/big.png`, 413, /over the limit of 8388608 bytes/],
    ['http://10.0.0.1/cat.png', 400, /is private/],
  ];
  for (const [url, status, message] of cases) {
    await assert.rejects(ask(url), (e) => e.status === status && e.param === 'messages[0].content[1]' &&
      message.test(e.message), `expected ${status} ${message} for ${url.slice(0, 60)}`);
  }
  const ok = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(ok.choices.length, 1);
});

test('OmniServe\'s path /b/v1/chat/completions answers as /v1 does', async () => {
  const b = stack.client({ baseURL: `${origin}/b/v1` });
  const params = { model, max_tokens: 6, temperature: 0, ...NO_THINK, messages: [{ role: 'user', content: 'Hello' }] };
  const [viaB, viaV1] = await Promise.all([b.chat.completions.create(params), client.chat.completions.create(params)]);
  assert.equal(viaB.object, 'chat.completion');
  assert.equal(viaB.choices[0].message.content, viaV1.choices[0].message.content);
});

test('x-request-id: the client\'s id reaches the LLM replica and is in every role\'s log lines for it', async () => {
  const id = `e2e-${process.pid}-${Date.now()}`;
  const r = await client.chat.completions.create(
    { model, max_tokens: 3, ...NO_THINK, messages: [{ role: 'user', content: 'Hi there' }] },
    { headers: { 'x-request-id': id } });
  assert.equal(r.choices.length, 1);
  await new Promise((resolve) => setTimeout(resolve, 200));  // the access lines are written after the reply
  const lines = stack.log.split('\n').filter((l) => l.includes(id));
  const roles = new Set(lines.map((l) => l.match(/role=(\S+)/)?.[1]));
  assert.ok(roles.has('orchestrator') && roles.has('llm'), `lines with ${id}:\n${lines.join('\n')}`);
});

// Image output (issue 18). The decoder's sizes per ratio, from
// spec/omni-model.md ("Vision-decoder output sizes"); transposed ratios
// transpose them.
const RATIO_SIZES = { '1:1': [768, 768], '1:2': [528, 1072], '3:4': [656, 880], '3:5': [592, 976],
  '4:5': [672, 848], '6:9': [624, 928], '9:16': [576, 1024] };
const IMAGE_SIZES = new Set(Object.values(RATIO_SIZES).flatMap(([w, h]) => [`${w}x${h}`, `${h}x${w}`]));
const T2I = {
  type: 'function',
  function: {
    name: 't2i_model_generation', description: 'Draws a picture.',
    parameters: { type: 'object', properties: { discrete_image_token: { type: 'string' } }, required: ['discrete_image_token'] },
  },
};
const DRAW = { tools: [T2I], tool_choice: { type: 'function', function: { name: 't2i_model_generation' } }, max_tokens: 1024, temperature: 0, ...NO_THINK };

// Width and height from a PNG's IHDR (after checking the signature).
function pngSize(bytes) {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
  assert.equal(bytes.toString('latin1', 12, 16), 'IHDR');
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
}

async function fetchImage(url) {
  const r = await fetch(url);
  assert.equal(r.status, 200, `${url}: ${r.status}`);
  return { type: r.headers.get('content-type'), bytes: Buffer.from(await r.arrayBuffer()) };
}

function assertNoImageText(text) {
  assert.ok(!text.includes('<|vision'), 'image tokens reached the client');
  assert.ok(!text.includes('<|discrete_image'), 'image markers reached the client');
}

// A chat answer's one image: the call's argument and the image_url part
// agree, and the URL is a signed one on the client port.
function imageOfAnswer(message) {
  assert.equal(message.tool_calls.length, 1);
  assert.equal(message.tool_calls[0].function.name, 't2i_model_generation');
  const url = JSON.parse(message.tool_calls[0].function.arguments).discrete_image_token;
  assert.ok(url.startsWith(`${origin}/v1/objects/gen/`), url);
  assert.match(url, /[?&]expires=\d+&signature=[0-9a-f]{64}$/);
  const part = message.content_parts.find((p) => p.type === 'image_url');
  assert.equal(part.image_url.url, url);
  return url;
}

test('text-to-image (scenario 6): the tool call becomes a signed URL of a PNG of its ratio\'s size; streamed, the same picture', async () => {
  const request = { model, messages: [{ role: 'user', content: 'Draw a lighthouse at dusk.' }], ...DRAW,
    image_generation: { seed: 11, num_inference_steps: 2 } };
  const r = await client.chat.completions.create(request);
  assertNoImageText(JSON.stringify(r));
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const url = imageOfAnswer(r.choices[0].message);
  const image = await fetchImage(url);
  assert.equal(image.type, 'image/png');
  const [w, h] = pngSize(image.bytes);
  assert.ok(IMAGE_SIZES.has(`${w}x${h}`), `${w}x${h} is no ratio's size`);

  // Streamed: text and the image as deltas, no image text, the same bytes.
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let raw = '';
  let streamedUrl = null;
  let finish = null;
  for await (const chunk of stream) {
    raw += JSON.stringify(chunk);
    const choice = chunk.choices[0];
    if (!choice) continue;
    assert.equal(finish, null, 'a delta after the finish');
    for (const part of choice.delta.content_parts ?? []) streamedUrl = part.image_url.url;
    for (const call of choice.delta.tool_calls ?? []) {
      assert.equal(JSON.parse(call.function.arguments).discrete_image_token, streamedUrl);
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assertNoImageText(raw);
  assert.equal(finish, 'tool_calls');
  assert.ok(streamedUrl, 'no image delta');
  assert.ok((await fetchImage(streamedUrl)).bytes.equals(image.bytes), 'streamed and whole answers drew different pictures');

  // A tampered signature, or another key under it, is refused.
  assert.equal((await fetch(url.replace(/signature=(.)/, (m, c) => `signature=${c === '0' ? '1' : '0'}`))).status, 403);
  assert.equal((await fetch(url.replace('/gen/', '/media/'))).status, 403);
});

test('text-to-image: image_generation.ratio 3:4 draws 656x880, b64_json answers a data URL, bad options are 400 naming the field', async () => {
  const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'A portrait of a cat.' }], ...DRAW,
    image_generation: { seed: 3, num_inference_steps: 1, ratio: '3:4', response_format: 'b64_json' } });
  const part = r.choices[0].message.content_parts.find((p) => p.type === 'image_url');
  assert.match(part.image_url.url, /^data:image\/png;base64,/);
  assert.deepEqual(pngSize(Buffer.from(part.image_url.url.split(',')[1], 'base64')), [656, 880]);
  for (const [options, param] of [[{ num_inference_steps: 0 }, 'image_generation.num_inference_steps'],
    [{ ratio: '7:3' }, 'image_generation.ratio'], [{ output_format: 'bmp' }, 'image_generation.output_format'],
    [{ colour: 'red' }, 'image_generation']]) {
    const bad = await postRaw('/v1/chat/completions', JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }], ...DRAW, image_generation: options }));
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.param, param);
  }
});

test('image-to-image (scenario 7): an image in and the tool forced give a picture back', async () => {
  const r = await client.chat.completions.create({ model, ...DRAW, image_generation: { seed: 5, num_inference_steps: 1 },
    messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUrl(image('vision/square448.jpg')) } },
      { type: 'text', text: 'Redraw this in watercolour.' }] }] });
  assertNoImageText(JSON.stringify(r));
  const [w, h] = pngSize((await fetchImage(imageOfAnswer(r.choices[0].message))).bytes);
  assert.ok(IMAGE_SIZES.has(`${w}x${h}`), `${w}x${h}`);
});

test('Images API: generations (n, size to the nearest ratio, url and b64_json) and edits (multipart)', async () => {
  const gen = await client.images.generate({ model, prompt: 'Two red apples on a table.', n: 2, size: '768x1024',
    seed: 9, num_inference_steps: 1 });
  assert.equal(gen.data.length, 2);
  for (const d of gen.data) {
    assert.ok(d.url.startsWith(`${origin}/v1/objects/gen/`), d.url);
    assert.deepEqual(pngSize((await fetchImage(d.url)).bytes), [656, 880]);  // 768x1024 is 3:4
  }
  const wide = await client.images.generate({ prompt: 'A wide valley.', size: '1792x1024', response_format: 'b64_json',
    num_inference_steps: 1 });
  assert.deepEqual(pngSize(Buffer.from(wide.data[0].b64_json, 'base64')), [1024, 576]);  // 16:9
  const edit = await client.images.edit({ model, prompt: 'Make it night.', size: '1024x1024', num_inference_steps: 1,
    image: await toFile(image('vision/tiny.png'), 'tiny.png', { type: 'image/png' }) });
  assert.deepEqual(pngSize((await fetchImage(edit.data[0].url)).bytes), [768, 768]);
  await assert.rejects(client.images.generate({ prompt: 'x', size: 'big' }), (e) => e.status === 400 && e.param === 'size');
  await assert.rejects(client.images.generate({ prompt: 'x', n: 11 }), (e) => e.status === 400 && e.param === 'n');
  await assert.rejects(client.images.edit({ prompt: 'x', image: await toFile(Buffer.from('not an image'), 'a.png') }),
    (e) => e.status === 415);
  await assert.rejects(client.images.edit({ prompt: 'x', image: await toFile(image('vision/tiny.png'), 'a.png'),
    mask: await toFile(image('vision/tiny.png'), 'm.png') }), (e) => e.status === 400 && e.param === 'mask');
});

test('SIGTERM stops the stack with exit code 0', async () => {
  const { code, signal } = await stack.stop();
  assert.equal(signal, null, stack.log);
  assert.equal(code, 0, stack.log);
  assert.match(stack.log, /up: stopped/);
});
