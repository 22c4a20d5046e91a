// The vision decoder's faults through a real `omniserve up` and the official
// OpenAI Node client (issue 18): the decoder runs `--sp 2` (a second rank
// process) with no waiting room (`--max-queue 0`). A client that hangs up
// stops its picture's diffusion steps; a request that finds the decoder busy
// is a 429 `decoder_busy`; a rank killed mid-request fails that request with
// a clear 503, and the next request is drawn. Run with
// `tests/node/run.sh BINARY tests/e2e/image_faults.test.mjs` (CTest:
// e2e_image_faults_up). Waits are fail-fast bounds, never performance
// assertions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { OpenAI, Stack } from './stack.mjs';

const model = 'omni-demo';
const WAIT_MS = 120_000;
const T2I = {
  type: 'function',
  function: {
    name: 't2i_model_generation', description: 'Draws a picture.',
    parameters: { type: 'object', properties: { discrete_image_token: { type: 'string' } }, required: ['discrete_image_token'] },
  },
};

let stack;
let client;
let configDir;
let decoderUrl;

before(async () => {
  configDir = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-image-faults-'));
  const config = path.join(configDir, 'up.yaml');
  writeFileSync(config, 'llm: {replicas: 1}\nvision_decoder:\n  threads: 1\n  args: ["--sp", "2", "--max-queue", "0"]\n');
  stack = await new Stack(process.env.OMNISERVE_BINARY, ['--config', config]).start();
  client = stack.client();
  decoderUrl = stack.urlOf('vision-decoder');
});

after(async () => {
  if (stack) await stack.dispose();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A Prometheus sample of the decoder's /metrics (0 when absent).
async function decoderMetric(sample) {
  const text = await (await fetch(`${decoderUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

async function waitFor(what, check) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await check()) return;
    assert.ok(Date.now() < deadline, `${what}: not within ${WAIT_MS} ms\n--- up's log ---\n${stack.log}`);
    await sleep(50);
  }
}

// Waits until the decoder runs more steps than `since`.
const stepsPast = (since) => waitFor('the decoder stepping', async () => (await decoderMetric('omni_decoder_steps_total')) > since);

// A chat request that draws, with `steps` diffusion steps.
function draw(steps, seed, options = {}) {
  return client.chat.completions.create({
    model, max_tokens: 1024, temperature: 0, chat_template_kwargs: { skip_reasoning: true },
    tools: [T2I], tool_choice: { type: 'function', function: { name: 't2i_model_generation' } },
    messages: [{ role: 'user', content: `Draw picture number ${seed}.` }],
    image_generation: { seed, num_inference_steps: steps, ratio: '1:1' },
  }, options);
}

// The decoder's rank processes: the children of the decoder process up started.
function rankPids() {
  const decoder = stack.pidOf('vision-decoder');
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === decoder) pids.push(Number(entry));
    } catch {
      // the process ended while listed
    }
  }
  return pids;
}

test('a client that hangs up stops its picture; meanwhile a second request finds the decoder busy (429)', async () => {
  const before = await decoderMetric('omni_decoder_steps_total');
  const abort = new AbortController();
  const gone = draw(200, 1, { signal: abort.signal });
  await stepsPast(before);
  // One generation runs and none may wait: the next is refused at once.
  await assert.rejects(draw(1, 2), (e) => {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, 429);
    assert.equal(e.code, 'decoder_busy');
    return true;
  });
  abort.abort();
  await assert.rejects(gone, (e) => e instanceof OpenAI.APIUserAbortError);
  // The orchestrator dropped its decoder call, the gateway its own, and the
  // decoder stopped between steps: the count stops, far short of 200.
  await waitFor('the cancelled generation', async () => (await decoderMetric('omni_decoder_requests_total{result="cancelled"}')) >= 1);
  const stopped = await decoderMetric('omni_decoder_steps_total');
  assert.ok(stopped - before < 150, `${stopped - before} steps ran`);
  await sleep(1000);
  assert.equal(await decoderMetric('omni_decoder_steps_total'), stopped);
  assert.equal(await decoderMetric('omni_decoder_steps_per_second'), 0);
});

test('a rank killed mid-request fails that request with a clear 503; the next request is drawn', async () => {
  const before = await decoderMetric('omni_decoder_steps_total');
  const doomed = draw(200, 3);
  await stepsPast(before);
  const ranks = rankPids();
  assert.equal(ranks.length, 1, `rank processes: ${ranks}`);
  process.kill(ranks[0], 'SIGKILL');
  await assert.rejects(doomed, (e) => {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, 503);
    assert.equal(e.code, 'decoder_unavailable');
    assert.match(e.message, /rank 1/);
    return true;
  });
  const r = await draw(1, 4);
  const message = r.choices[0].message;
  const url = message.content_parts.find((p) => p.type === 'image_url').image_url.url;
  const image = await fetch(url);
  assert.equal(image.status, 200);
  const bytes = Buffer.from(await image.arrayBuffer());
  assert.deepEqual([bytes.readUInt32BE(16), bytes.readUInt32BE(20)], [768, 768]);  // 1:1
  const rebuilt = rankPids();
  assert.equal(rebuilt.length, 1);
  assert.notEqual(rebuilt[0], ranks[0]);
});

test('SIGTERM stops the stack with exit code 0', async () => {
  const { code } = await stack.stop();
  assert.equal(code, 0);
});
