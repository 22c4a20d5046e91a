// A streamed chat completion joined as a client would: content, reasoning,
// tool calls by index, the finish reason and the one usage chunk (which must
// come last, with no choices). Shared by tests/node and tests/e2e.
import assert from 'node:assert/strict';

export async function joinChatStream(client, params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let reasoning = '';
  const calls = [];
  let usage = null;
  let finish = null;
  let usageChunks = 0;
  let afterUsage = 0;
  for await (const chunk of stream) {
    if (usage) afterUsage += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) {
      usage = chunk.usage;
      usageChunks += 1;
      assert.equal(chunk.choices.length, 0, 'the usage chunk carries no choices');
    }
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      reasoning += c.delta?.reasoning_content ?? '';
      for (const t of c.delta?.tool_calls ?? []) {
        if (t.id) {
          assert.equal(calls[t.index], undefined, `tool call ${t.index} announced twice`);
          assert.equal(t.type, 'function');
          calls[t.index] = { id: t.id, name: t.function.name, arguments: '' };
        }
        assert.ok(calls[t.index], `tool call delta for unannounced index ${t.index}`);
        calls[t.index].arguments += t.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(usageChunks, 1, 'exactly one usage chunk');
  assert.equal(afterUsage, 0, 'usage comes last');
  return { text, reasoning, calls, usage, finish };
}
