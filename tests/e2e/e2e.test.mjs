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
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { joinChatStream } from '../node/chat_stream.mjs';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  throw new Error(`the npm package "openai" is missing (run \`npm ci\` in the repository root): ${e.message}`);
}

const BINARY = process.env.OMNISERVE_BINARY;
const STARTUP_WAIT_MS = 300_000;
const EXIT_WAIT_MS = 90_000;

let workDir;
let up;          // the ChildProcess of `omniserve up`
let upLog = '';
let upExit;      // Promise<{code, signal}>
let origin;      // http://127.0.0.1:PORT
let client;
const model = 'omni-demo';

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms\n--- up's log ---\n${upLog}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function startUp(dataDir) {
  up = spawn(BINARY, ['up', '--port', '0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  upExit = new Promise((resolve) => up.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const onData = (buf) => {
      upLog += buf.toString();
      const m = upLog.match(/the OpenAI API \(model [^)]*\) is served by [^\n]*? on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    };
    up.stdout.on('data', onData);
    up.stderr.on('data', onData);
    up.on('error', reject);
    upExit.then(({ code, signal }) => reject(new Error(`omniserve up exited early (code ${code}, signal ${signal})\n${upLog}`)));
  });
}

before(async () => {
  assert.ok(BINARY, 'set OMNISERVE_BINARY to the omniserve binary');
  assert.ok(existsSync(BINARY), `no binary at ${BINARY}`);
  workDir = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-'));
  const port = await withTimeout(startUp(workDir), STARTUP_WAIT_MS, 'waiting for up to serve');
  origin = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
});

after(async () => {
  if (up && up.exitCode === null && up.signalCode === null) {
    up.kill('SIGKILL');
    await upExit;
  }
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

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

test('GET /health and /v1/models: the demo model is listed', async () => {
  const health = await fetch(`${origin}/health`);
  assert.equal(health.status, 200);
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
  assert.equal(models.data[0].object, 'model');
});

test('plain chat: an assistant message, a finish reason and usage', async () => {
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

test('reasoning: the thought is reasoning_content, capped by thinking_token_budget', async () => {
  const r = await client.chat.completions.create({
    model, max_tokens: 24, temperature: 0, thinking_token_budget: 4, logprobs: true,
    messages: [{ role: 'user', content: 'Think, then answer: what is kimchi?' }],
  });
  const m = r.choices[0].message;
  assert.ok(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, 'no reasoning_content');
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
  // A media part: no encoder pool serves it yet; the error names the part.
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }],
  }), (e) => e instanceof OpenAI.BadRequestError && e.param?.startsWith('messages[0].content[1]'));
  // An oversize body (a Content-Length over the 64 MiB limit): 413 before
  // the body is read, and nothing else breaks.
  const head = await rawExchange(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${65 << 20}\r\n\r\n{"model":"omni-demo"`);
  assert.match(head, /^HTTP\/1\.1 413 /, head.slice(0, 300));
  // Still serving.
  const ok = await client.chat.completions.create({ model, messages: user, max_tokens: 2 });
  assert.equal(ok.choices.length, 1);
});

test('SIGTERM stops the stack with exit code 0', async () => {
  up.kill('SIGTERM');
  const { code, signal } = await withTimeout(upExit, EXIT_WAIT_MS, 'waiting for up to exit');
  assert.equal(signal, null, upLog);
  assert.equal(code, 0, upLog);
  assert.match(upLog, /up: stopped/);
});
