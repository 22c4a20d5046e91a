// Faults under load, through a real `omniserve up` and the official OpenAI
// Node client: an LLM replica, the gateway and the orchestrator are each
// killed (SIGKILL, by the PID up reports for the child it started) while
// streamed and unary requests run. What must hold each time: every request
// ends (no hang); a request either completes whole or ends with an OpenAI
// error (a 5xx body, or an error event in its stream), never a truncated
// 200; up restarts the child, /health says so, and later requests succeed.
// Run with `tests/node/run.sh BINARY tests/e2e/faults.test.mjs` (CTest:
// e2e_faults_up).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { OpenAI, Stack } from './stack.mjs';

const model = 'omni-demo';
const TOKENS = 300;        // each request generates exactly this many (min_tokens = max_tokens)
const WORKERS = 6;         // concurrent clients
const PHASE_WAIT_MS = 180_000;

let stack;
let client;

before(async () => {
  stack = await new Stack(process.env.OMNISERVE_BINARY).start();
  client = stack.client();
});

after(async () => {
  if (stack) await stack.dispose();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One request, streamed or not, classified:
//   ok         complete: TOKENS tokens, finish_reason "length", usage;
//   api_error  an OpenAI error: an error body with a 5xx status, or an error
//              event in the stream (the client throws APIError for both);
//   dropped    the connection failed, or closed before the end of the body
//              (only acceptable when the server the client talks to is the
//              one killed);
//   bad        anything else: a truncated or malformed answer.
async function one(i, stream) {
  const params = {
    model, max_tokens: TOKENS, min_tokens: TOKENS, temperature: 0.8, seed: i,
    chat_template_kwargs: { skip_reasoning: true },
    messages: [{ role: 'user', content: `Request ${i}: tell me a long story about the sea near Busan.` }],
  };
  try {
    if (!stream) {
      const r = await client.chat.completions.create(params);
      const good = r.choices[0].finish_reason === 'length' && r.usage.completion_tokens === TOKENS;
      return good ? { kind: 'ok' } : { kind: 'bad', detail: JSON.stringify(r).slice(0, 300) };
    }
    const s = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let finish = null;
    let usage = null;
    for await (const chunk of s) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) finish = c.finish_reason ?? finish;
    }
    const good = finish === 'length' && usage?.completion_tokens === TOKENS;
    return good ? { kind: 'ok' } : { kind: 'bad', detail: `stream ended: finish ${finish}, usage ${JSON.stringify(usage)}` };
  } catch (e) {
    if (e instanceof OpenAI.APIConnectionError) return { kind: 'dropped', detail: e.message };
    // undici's error for a body whose connection closed before its end (no
    // terminating chunk): the client knows the answer is incomplete.
    if (e instanceof TypeError && e.message === 'terminated') return { kind: 'dropped', detail: `${e.message}: ${e.cause?.code}` };
    if (e instanceof OpenAI.APIError) {
      // A streamed error event has no HTTP status of its own (the stream
      // started with 200); a unary one must be a 5xx with a message.
      const fine = typeof e.message === 'string' && e.message.length > 0 && (e.status === undefined || e.status >= 500);
      return { kind: fine ? 'api_error' : 'bad', detail: `${e.status} ${e.code} ${e.message}` };
    }
    return { kind: 'bad', detail: `${e.constructor.name}: ${e.message}` };
  }
}

// WORKERS clients send requests back to back until `stop` resolves; each
// outcome is recorded with when it ended.
async function load(stop) {
  const outcomes = [];
  let stopped = false;
  stop.then(() => { stopped = true; });
  let n = 0;
  await Promise.all(Array.from({ length: WORKERS }, async (_, w) => {
    while (!stopped) {
      const i = n++;
      const o = await one(i, (w + i) % 2 === 0);
      outcomes.push({ ...o, at: Date.now() });
      if (o.kind !== 'ok') await sleep(50);  // the server is down: no busy loop
    }
  }));
  return outcomes;
}

async function prometheus(url) {
  return (await fetch(`${url}/metrics`)).text();
}

function metric(text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels)
    .every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line ? Number(line.split(' ').pop()) : 0;
}

// Kills `child` while the load runs (once `busy` holds, if given), keeps
// the load on while up restarts it, and returns the outcomes.
async function killUnderLoad(child, busy = async () => true) {
  const pid = stack.pidOf(child);
  let release;
  const stop = new Promise((resolve) => { release = resolve; });
  const running = load(stop);
  await sleep(1500);  // every worker has a request in flight
  await stack.withTimeout((async () => { while (!(await busy())) await sleep(50); })(), 60_000,
    `waiting for ${child} to be busy`);
  process.kill(pid, 'SIGKILL');
  // up restarts it with a new PID and /health reports it again.
  const report = await stack.waitForHealth((r) => r.http === 200 && r.status === 'ok'
    && stack.pidOf(child) !== pid, `waiting for ${child} to be restarted and healthy`);
  await sleep(1000);  // and the load runs on against the recovered stack
  release();
  const outcomes = await stack.withTimeout(running, PHASE_WAIT_MS, `the load after killing ${child}`);
  assert.match(stack.log, new RegExp(`${child} \\(pid ${pid}\\) killed by signal 9; restarting in \\d+ ms`));
  return { outcomes, report };
}

function summary(outcomes) {
  const counts = {};
  for (const o of outcomes) counts[o.kind] = (counts[o.kind] ?? 0) + 1;
  return JSON.stringify(counts) + '\n' + outcomes.filter((o) => o.kind !== 'ok').map((o) => `${o.kind}: ${o.detail}`).join('\n');
}

// After a fault: a round of requests, every one complete.
async function allSucceed(what) {
  const after = await Promise.all(Array.from({ length: 4 }, (_, i) => one(10_000 + i, i % 2 === 0)));
  assert.deepEqual(after.map((o) => o.kind), ['ok', 'ok', 'ok', 'ok'], `${what}: ${summary(after)}`);
}

test('killing an LLM replica fails only the requests it held, each with an OpenAI error; up restarts it', async () => {
  const gateway = stack.urlOf('gateway');
  const llm0 = stack.urlOf('llm-0').replace('http://', '');
  const llm1 = stack.urlOf('llm-1').replace('http://', '');
  // Killed while it runs at least two requests.
  const running = async () => metric(await prometheus(stack.urlOf('llm-0')), 'vllm:num_requests_running', {}) >= 2;
  const { outcomes } = await killUnderLoad('llm-0', running);
  const why = summary(outcomes);
  assert.ok(outcomes.every((o) => o.kind === 'ok' || o.kind === 'api_error'), why);
  assert.ok(outcomes.filter((o) => o.kind === 'ok').length >= WORKERS, why);
  // The gateway's own account: every failure was a request on llm-0, and
  // llm-1 failed none.
  const m = await prometheus(gateway);
  const failedOn0 = metric(m, 'gateway_requests_total', { endpoint: llm0, outcome: 'error' });
  const failedOn1 = metric(m, 'gateway_requests_total', { endpoint: llm1, outcome: 'error' });
  assert.equal(failedOn1, 0, m);
  assert.equal(failedOn0, outcomes.filter((o) => o.kind === 'api_error').length, `${why}\n${m}`);
  await allSucceed('after llm-0 came back');
});

test('killing the gateway fails the requests in flight with OpenAI errors; up restarts it', async () => {
  const { outcomes } = await killUnderLoad('gateway');
  const why = summary(outcomes);
  assert.ok(outcomes.every((o) => o.kind === 'ok' || o.kind === 'api_error'), why);
  assert.ok(outcomes.some((o) => o.kind === 'api_error'), `no request was in flight at the kill?\n${why}`);
  await allSucceed('after the gateway came back');
});

test('killing the orchestrator drops only its connections; the replicas abort their generations; up restarts it', async () => {
  const replicas = [stack.urlOf('llm-0'), stack.urlOf('llm-1')];
  const disconnects = async () => (await Promise.all(replicas.map(async (u) =>
    metric(await prometheus(u), 'omni_llm_client_disconnects_total', {})))).reduce((a, b) => a + b, 0);
  const before = await disconnects();
  const { outcomes } = await killUnderLoad('orchestrator');
  const why = summary(outcomes);
  // The clients' connections were to the killed process: they drop; nothing
  // comes back half-answered as if complete.
  assert.ok(outcomes.every((o) => o.kind !== 'bad'), why);
  assert.ok(outcomes.some((o) => o.kind === 'dropped'), why);
  // The generations of the dropped requests were cancelled down the chain
  // (the gateway saw its client go and closed its upstream connection; the
  // replica aborted), not run to their end for nobody.
  assert.ok(await disconnects() > before, `no replica saw its client go\n${why}`);
  await allSucceed('after the orchestrator came back');
});

test('the stack still stops cleanly with SIGTERM', async () => {
  const { code, signal } = await stack.stop();
  assert.equal(signal, null, stack.log);
  assert.equal(code, 0, stack.log);
});
