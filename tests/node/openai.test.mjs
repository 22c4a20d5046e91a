// `omniserve llm` through the official OpenAI Node client (npm `openai`), as
// issue 4 asks: chat and completions, streaming and not, usage, stop strings,
// reproducible seeds, logprobs, and the error classes the client raises for
// our error bodies. Run with tests/node/run.sh (CTest: node_openai_client).
//
// OMNISERVE_BINARY names the omniserve binary under test. The test writes a
// demo model with `omniserve make-demo-model`, starts `omniserve llm` on
// 127.0.0.1 port 0, reads the port from its "listening on HOST:PORT" log line
// and stops it with SIGTERM at the end. Waits are fail-fast bounds, never
// performance assertions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { joinChatStream } from './chat_stream.mjs';

// A missing client is a failure, not a skip: `npm ci` in the repository root.
let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  throw new Error(`the npm package "openai" is missing (run \`npm ci\` in the repository root): ${e.message}`);
}

const BINARY = process.env.OMNISERVE_BINARY;
const STARTUP_WAIT_MS = 120_000;
const EXIT_WAIT_MS = 60_000;

let workDir;
let server;        // the ChildProcess of `omniserve llm`
let serverLog = '';
let serverExit;    // Promise<{code, signal}>
let baseURL;
let client;
let model;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms\n--- server log ---\n${serverLog}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function startServer(modelDir) {
  server = spawn(BINARY, ['llm', '--model', modelDir, '--host', '127.0.0.1', '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  serverExit = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const onData = (buf) => {
      serverLog += buf.toString();
      const m = serverLog.match(/listening on (?:\[[^\]]*\]|[0-9.]+|[A-Za-z0-9.-]+):(\d+)/);
      if (m) resolve(Number(m[1]));
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    server.on('error', reject);
    serverExit.then(({ code, signal }) =>
      reject(new Error(`omniserve llm exited early (code ${code}, signal ${signal})\n${serverLog}`)));
  });
}

async function waitHealthy(port) {
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      if (r.status === 200) return;
    } catch {
      // not accepting yet
    }
    await sleep(100);
  }
}

before(async () => {
  assert.ok(BINARY, 'set OMNISERVE_BINARY to the omniserve binary');
  assert.ok(existsSync(BINARY), `no binary at ${BINARY}`);
  workDir = mkdtempSync(path.join(tmpdir(), 'omniserve-node-'));
  const modelDir = path.join(workDir, 'omni-demo');
  const made = spawnSync(BINARY, ['make-demo-model', '--component', 'llm', '--out', modelDir], { encoding: 'utf8' });
  assert.equal(made.status, 0, `make-demo-model failed:\n${made.stdout}${made.stderr}`);
  const port = await withTimeout(startServer(modelDir), STARTUP_WAIT_MS, 'waiting for "listening on"');
  await withTimeout(waitHealthy(port), STARTUP_WAIT_MS, 'waiting for /health 200');
  baseURL = `http://127.0.0.1:${port}/v1`;
  client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
  const models = await client.models.list();
  assert.ok(models.data.length >= 1, 'GET /v1/models lists no model');
  model = models.data[0].id;
});

after(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    server.kill('SIGKILL');
    await serverExit;
  }
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const PROMPT = 'The quick brown fox jumps over the lazy dog. Tell me a story about it.';
const MESSAGES = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: PROMPT },
];
// The generation prompt opens a thought (<think>), so the demo model's
// random text would all be reasoning_content; the tests of `content` skip
// the thought, as OmniServe's clients do.
const NO_THINK = { chat_template_kwargs: { skip_reasoning: true } };

function checkUsage(usage, maxTokens) {
  assert.ok(usage, 'usage missing');
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, `prompt_tokens ${usage.prompt_tokens}`);
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens >= 1, 'completion_tokens');
  assert.ok(usage.completion_tokens <= maxTokens, `completion_tokens ${usage.completion_tokens} > max_tokens`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

// Streams a chat completion and joins what it says (tests/node/chat_stream.mjs).
const chatStream = (params) => joinChatStream(client, params);

async function completionStream(params) {
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, usage, finish };
}

test('chat completion, not streamed: message, finish reason, usage', async () => {
  const r = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 12, temperature: 0, ...NO_THINK });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
  checkUsage(r.usage, 12);
  if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 12);
});

test('chat completion, streamed: same greedy text and usage as not streamed', async () => {
  const params = { model, messages: MESSAGES, max_tokens: 12, temperature: 0, ...NO_THINK };
  const whole = await client.chat.completions.create(params);
  const streamed = await chatStream(params);
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  checkUsage(streamed.usage, 12);
  assert.deepEqual(
    [streamed.usage.prompt_tokens, streamed.usage.completion_tokens],
    [whole.usage.prompt_tokens, whole.usage.completion_tokens]);
});

test('completion, not streamed and streamed agree', async () => {
  const params = { model, prompt: PROMPT, max_tokens: 10, temperature: 0 };
  const whole = await client.completions.create(params);
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.choices.length, 1);
  assert.equal(typeof whole.choices[0].text, 'string');
  checkUsage(whole.usage, 10);
  const streamed = await completionStream(params);
  assert.equal(streamed.text, whole.choices[0].text);
  checkUsage(streamed.usage, 10);
  assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('stop strings cut the output before the first match, streamed or not', async () => {
  const base = { model, prompt: PROMPT, max_tokens: 32, temperature: 0 };
  const full = (await client.completions.create(base)).choices[0].text;
  // A stop string taken from the middle of the greedy output: the stopped
  // run must end right before its first occurrence.
  const visible = full.trimEnd();
  assert.ok(visible.length >= 6, `greedy output too short to pick a stop string from: ${JSON.stringify(full)}`);
  const start = Math.floor(visible.length / 2);
  const stop = visible.slice(start, start + 2);
  const expected = full.slice(0, full.indexOf(stop));
  const stopped = await client.completions.create({ ...base, stop: [stop] });
  assert.equal(stopped.choices[0].text, expected, `stop ${JSON.stringify(stop)} in ${JSON.stringify(full)}`);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  const streamed = await completionStream({ ...base, stop: [stop] });
  assert.equal(streamed.text, expected);
  assert.equal(streamed.finish, 'stop');
  const chatFull = (await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 32, temperature: 0, ...NO_THINK }))
    .choices[0].message.content;
  if (chatFull.trimEnd().length >= 6) {
    const s = chatFull.slice(Math.floor(chatFull.trimEnd().length / 2)).slice(0, 2);
    const chatStopped = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 32, temperature: 0, stop: s, ...NO_THINK });
    assert.equal(chatStopped.choices[0].message.content, chatFull.slice(0, chatFull.indexOf(s)));
    assert.equal(chatStopped.choices[0].finish_reason, 'stop');
  }
});

test('the same seed at temperature 0.8 gives the same text', async () => {
  const chat = { model, messages: MESSAGES, max_tokens: 16, temperature: 0.8, seed: 1234, ...NO_THINK };
  const a = await client.chat.completions.create(chat);
  const b = await client.chat.completions.create(chat);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const streamed = await chatStream(chat);
  assert.equal(streamed.text, a.choices[0].message.content);
  const completion = { model, prompt: PROMPT, max_tokens: 16, temperature: 0.8, seed: 99 };
  const c = await client.completions.create(completion);
  const d = await client.completions.create(completion);
  assert.equal(c.choices[0].text, d.choices[0].text);
});

test('chat logprobs: one entry per token, top_logprobs sorted, greedy picks the top', async () => {
  const r = await client.chat.completions.create({
    model, messages: MESSAGES, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3, ...NO_THINK,
  });
  const content = r.choices[0].logprobs?.content;
  assert.ok(Array.isArray(content), 'choices[0].logprobs.content missing');
  assert.equal(content.length, r.usage.completion_tokens);
  for (const entry of content) {
    assert.equal(typeof entry.token, 'string');
    assert.ok(Number.isFinite(entry.logprob) && entry.logprob <= 0, `logprob ${entry.logprob}`);
    assert.ok(entry.bytes === null || Array.isArray(entry.bytes));
    assert.equal(entry.top_logprobs.length, 3);
    for (let i = 1; i < 3; ++i) assert.ok(entry.top_logprobs[i - 1].logprob >= entry.top_logprobs[i].logprob);
    for (const top of entry.top_logprobs) {
      assert.equal(typeof top.token, 'string');
      assert.ok(top.logprob <= 0);
    }
    assert.ok(entry.logprob >= entry.top_logprobs[0].logprob - 1e-3, 'greedy token is not the most likely');
  }
});

test('completion logprobs: parallel arrays of the completion length', async () => {
  const r = await client.completions.create({ model, prompt: PROMPT, max_tokens: 5, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.ok(lp, 'choices[0].logprobs missing');
  const n = r.usage.completion_tokens;
  assert.equal(lp.tokens.length, n);
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.text_offset.length, n);
  assert.equal(lp.tokens.join(''), r.choices[0].text);
  for (let i = 0; i < n; ++i) {
    assert.ok(lp.token_logprobs[i] <= 0);
    const tops = Object.values(lp.top_logprobs[i]);
    assert.ok(tops.length >= 2 && tops.length <= 3, `top_logprobs[${i}] has ${tops.length} entries`);
    assert.ok(lp.token_logprobs[i] >= Math.max(...tops) - 1e-3);
  }
});

test('an unknown model raises NotFoundError (404)', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: MESSAGES, max_tokens: 2 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && typeof e.message === 'string');
  await assert.rejects(
    client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 2 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

test('bad sampling parameters raise BadRequestError (400) and the server keeps serving', async () => {
  const bad = [
    { temperature: -1 },
    { top_p: 2 },
    { max_tokens: -5 },
  ];
  for (const params of bad) {
    await assert.rejects(
      client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 2, ...params }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400,
      `expected 400 for ${JSON.stringify(params)}`);
  }
  await assert.rejects(
    client.chat.completions.create({ model, messages: 'not a list', max_tokens: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  const ok = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 2 });
  assert.equal(ok.choices.length, 1);
});

// ---- Structured output (issue 14). The demo model's weights are random:
// structure comes only from what any user can ask for (thinking_token_budget,
// a named tool_choice, seeds), never from special-casing the demo model.

const BOOKING_TOOL = {
  type: 'function',
  function: {
    name: 'book_table',
    description: '식당 예약 (book a table)',
    parameters: {
      type: 'object',
      properties: {
        guests: { type: 'integer', description: 'how many people' },
        outdoor: { type: 'boolean' },
        name: { type: 'string' },
      },
      required: ['guests', 'outdoor', 'name'],
    },
  },
};
const IMAGE_TOOL = {
  type: 'function',
  function: {
    name: 't2i_model_generation',
    description: 'Generates an image from discrete image tokens.',
    parameters: {
      type: 'object',
      properties: { discrete_image_token: { type: 'string' } },
      required: ['discrete_image_token'],
    },
  },
};

function checkBookingArguments(text) {
  const args = JSON.parse(text);
  assert.ok(Number.isInteger(args.guests), `guests ${JSON.stringify(args.guests)} is not an integer`);
  assert.equal(typeof args.outdoor, 'boolean');
  assert.equal(typeof args.name, 'string');
  assert.deepEqual(Object.keys(args), ['guests', 'outdoor', 'name']);
  return args;
}

test('reasoning: the thought is reasoning_content, closed by thinking_token_budget, same streamed', async () => {
  const budget = 5;
  const params = {
    model, messages: MESSAGES, max_tokens: 24, temperature: 0, thinking_token_budget: budget, logprobs: true,
  };
  const r = await client.chat.completions.create(params);
  const m = r.choices[0].message;
  assert.equal(typeof m.reasoning_content, 'string');
  assert.ok(m.reasoning_content.length > 0, 'empty reasoning_content');
  // The tokens: at most `budget` thought tokens, then </think>.
  const tokens = r.choices[0].logprobs.content.map((e) => e.token);
  const end = tokens.indexOf('</think>');
  assert.ok(end >= 0 && end <= budget, `</think> at ${end} in ${JSON.stringify(tokens)}`);
  const bytes = r.choices[0].logprobs.content.slice(0, end).flatMap((e) => e.bytes);
  assert.equal(m.reasoning_content, Buffer.from(bytes).toString('utf8'));
  const streamed = await chatStream(params);
  assert.equal(streamed.reasoning, m.reasoning_content);
  assert.equal(streamed.text, m.content);
  // Without a budget the random thought runs to max_tokens: all reasoning.
  const open = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 8, temperature: 0 });
  assert.equal(open.choices[0].finish_reason, 'length');
  assert.ok(open.choices[0].message.reasoning_content.length > 0);
  assert.equal(open.choices[0].message.content, '');
  // skip_reasoning: no thought at all.
  const skipped = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 8, temperature: 0, ...NO_THINK });
  assert.equal(skipped.choices[0].message.reasoning_content, null);
});

test('a named tool_choice returns typed JSON arguments, streamed and not', async () => {
  for (const extra of [NO_THINK, { thinking_token_budget: 3 }]) {
    const params = {
      model, messages: [{ role: 'user', content: '4명 예약해 줘 (book for four)' }], tools: [BOOKING_TOOL],
      tool_choice: { type: 'function', function: { name: 'book_table' } }, max_tokens: 400, temperature: 0.7, seed: 7,
      ...extra,
    };
    const r = await client.chat.completions.create(params);
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'book_table');
    assert.match(call.id, /^chatcmpl-tool-/);
    checkBookingArguments(call.function.arguments);
    const s = await chatStream(params);
    assert.equal(s.finish, 'tool_calls');
    assert.equal(s.calls.length, 1);
    assert.equal(s.calls[0].name, 'book_table');
    // The same seed: the streamed fragments join to the same arguments.
    assert.equal(s.calls[0].arguments, call.function.arguments);
    checkBookingArguments(s.calls[0].arguments);
  }
});

test('tool_choice required calls one of the tools; none calls none', async () => {
  const base = { model, messages: MESSAGES, tools: [BOOKING_TOOL, IMAGE_TOOL], max_tokens: 900, temperature: 0.7, ...NO_THINK };
  const r = await client.chat.completions.create({ ...base, tool_choice: 'required', seed: 3 });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(r.choices[0].message.tool_calls.length, 1);
  assert.ok(['book_table', 't2i_model_generation'].includes(r.choices[0].message.tool_calls[0].function.name));
  const none = await client.chat.completions.create({ ...base, tool_choice: 'none', max_tokens: 32, seed: 3 });
  assert.deepEqual(none.choices[0].message.tool_calls, []);
  assert.notEqual(none.choices[0].finish_reason, 'tool_calls');
  await assert.rejects(
    client.chat.completions.create({ ...base, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.function.name');
});

test('a named t2i_model_generation call carries a complete image block', async () => {
  const params = {
    model, messages: [{ role: 'user', content: 'Draw a cat.' }], tools: [IMAGE_TOOL],
    tool_choice: { type: 'function', function: { name: 't2i_model_generation' } }, max_tokens: 1000, temperature: 1.0,
    seed: 11, ...NO_THINK,
  };
  for (const streamed of [false, true]) {
    let args;
    if (streamed) {
      const s = await chatStream(params);
      assert.equal(s.finish, 'tool_calls');
      args = JSON.parse(s.calls[0].arguments);
    } else {
      const r = await client.chat.completions.create(params);
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      args = JSON.parse(r.choices[0].message.tool_calls[0].function.arguments);
    }
    const block = args.discrete_image_token;
    assert.match(block, /^<\|discrete_image_start\|><\|vision_ratio_\d+:\d+\|><\|vision_token\|>/);
    assert.match(block, /<\|vision_eof\|><\|discrete_image_end\|>$/);
    assert.equal((block.match(/<\|vision\d+\|>/g) ?? []).length, 729);
    assert.equal((block.match(/<\|vision_eol\|>/g) ?? []).length, 27);
    // Each row: 27 codes then the end of the row.
    const rows = block.split('<|vision_eol|>').slice(0, 27);
    for (const row of rows) assert.equal((row.match(/<\|vision\d+\|>/g) ?? []).length, 27);
  }
});

test('logit_bias steers the choice, cache_salt keeps caches apart, min_tokens is checked', async () => {
  // A +100 bias makes one token the greedy choice every time.
  const tok = await (await fetch(`${baseURL.replace(/\/v1$/, '')}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: ' fox' }),
  })).json();
  const id = tok.tokens[tok.tokens.length - 1];
  const biased = await client.completions.create({
    model, prompt: PROMPT, max_tokens: 4, temperature: 0, logit_bias: { [id]: 100 }, logprobs: 0,
  });
  const one = (await fetch(`${baseURL.replace(/\/v1$/, '')}/detokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, tokens: [id] }),
  }).then((r) => r.json())).prompt;
  assert.deepEqual(biased.choices[0].logprobs.tokens, [one, one, one, one]);
  // Same prompt, new salt: no cached prefix; the same salt again: cached.
  const long = [{ role: 'user', content: `${PROMPT} ${PROMPT} ${PROMPT} ${PROMPT}` }];
  const first = await client.chat.completions.create({ model, messages: long, max_tokens: 1, cache_salt: 'tenant-a' });
  const other = await client.chat.completions.create({ model, messages: long, max_tokens: 1, cache_salt: 'tenant-b' });
  const again = await client.chat.completions.create({ model, messages: long, max_tokens: 1, cache_salt: 'tenant-a' });
  assert.equal(other.usage.prompt_tokens_details.cached_tokens, 0);
  assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(again.usage));
  assert.ok(first.usage.prompt_tokens > 16);
  await assert.rejects(
    client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 2, min_tokens: 3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'min_tokens');
  const min = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 6, min_tokens: 6, ...NO_THINK });
  assert.equal(min.usage.completion_tokens, 6);
});

test('SIGTERM stops the server with exit code 0', async () => {
  assert.ok(server.kill('SIGTERM'));
  const { code, signal } = await withTimeout(serverExit, EXIT_WAIT_MS, 'waiting for exit after SIGTERM');
  assert.equal(signal, null, `killed by ${signal}`);
  assert.equal(code, 0, `exit code ${code}\n${serverLog}`);
});
