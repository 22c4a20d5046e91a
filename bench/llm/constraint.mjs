// The cost of structured output (docs/PERFORMANCE.md, "Structured output"):
// decode tokens/s of requests whose every token is constrained (a forced
// t2i_model_generation call: 729 codes in a media block; a forced tool
// call with a string argument) against free text of the same length on the
// same server, back to back, at 1 and 8 requests in flight.
//   node bench/llm/constraint.mjs BASE_URL MODEL
// Plain fetch, no client library: the numbers are the server's.
const [base, model] = process.argv.slice(2);
const REPEATS = 3;

const IMAGE_TOOL = {
  type: 'function',
  function: { name: 't2i_model_generation', parameters: { type: 'object',
    properties: { discrete_image_token: { type: 'string' } }, required: ['discrete_image_token'] } },
};
const NOTE_TOOL = {
  type: 'function',
  function: { name: 'save_note', parameters: { type: 'object',
    properties: { text: { type: 'string' } }, required: ['text'] } },
};

// `like`: the free run gets the same tools in its prompt (tool_choice auto,
// nothing constrained), so both prefill the same prompt.
function body(kind, maxTokens, seed, like = kind) {
  const b = {
    model, messages: [{ role: 'user', content: 'Draw a cat sitting on a red chair, then describe it.' }],
    max_tokens: maxTokens, temperature: 1.0, seed, chat_template_kwargs: { skip_reasoning: true },
  };
  b.tools = [like === 'image' ? IMAGE_TOOL : NOTE_TOOL];
  if (kind === 'image') b.tool_choice = { type: 'function', function: { name: 't2i_model_generation' } };
  if (kind === 'tool') b.tool_choice = { type: 'function', function: { name: 'save_note' } };
  if (kind === 'free') b.ignore_eos = true;
  return b;
}

// One request, streamed (so no response waits on its headers), read to the end.
async function one(kind, maxTokens, seed, like) {
  const b = { ...body(kind, maxTokens, seed, like), stream: true, stream_options: { include_usage: true } };
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b),
  });
  if (!r.ok) throw new Error(`${r.status}: ${await r.text()}`);
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of r.body) text += decoder.decode(chunk, { stream: true });
  const seconds = (performance.now() - t0) / 1000;
  const events = text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
  const usage = events.find((e) => e.usage)?.usage;
  const finish = events.flatMap((e) => e.choices ?? []).map((c) => c.finish_reason).find((f) => f);
  if (!usage) throw new Error(`no usage in ${text.slice(-300)}`);
  if (kind !== 'free' && finish !== 'tool_calls') throw new Error(`${kind}: finish ${finish}`);
  return { tokens: usage.completion_tokens, seconds };
}

// Tokens/s over `inflight` concurrent requests of one kind.
async function rate(kind, maxTokens, inflight, seed, like) {
  const t0 = performance.now();
  const runs = await Promise.all(Array.from({ length: inflight }, (_, i) => one(kind, maxTokens, seed + i, like)));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = runs.reduce((a, r) => a + r.tokens, 0);
  return { tokens: tokens / inflight, rate: tokens / seconds };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const rows = [];
for (const inflight of [1, 8]) {
  for (const kind of ['image', 'tool']) {
    // The constrained run's length sets the free run's, so both decode as many tokens.
    const probe = await one(kind, 1000, 1);
    const len = probe.tokens;
    const c = [], f = [];
    for (let i = 0; i < REPEATS; ++i) {
      c.push((await rate(kind, 1000, inflight, 100 * i)).rate);
      f.push((await rate('free', len, inflight, 100 * i, kind)).rate);
    }
    rows.push({ inflight, kind, tokens: len, constrained: median(c), free: median(f) });
  }
}
console.log('| in flight | constrained output | tokens/request | constrained tok/s | free text tok/s | ratio |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const what = r.kind === 'image' ? 'forced t2i call (729-code image block)' : 'forced tool call (string argument)';
  console.log(`| ${r.inflight} | ${what} | ${r.tokens} | ${r.constrained.toFixed(1)} | ${r.free.toFixed(1)} | ${(r.constrained / r.free).toFixed(3)} |`);
}
