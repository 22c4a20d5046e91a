// Spoken answers end to end (issue 20): the official OpenAI Node client
// against a real `omniserve up` on the demo models, which now runs the audio
// decoder too. Text to speech (scenario 9) and speech to speech (scenario 10)
// as whole answers and streams, the streamed pcm16 against the whole answer's
// audio, formats, and bad audio options. Run with
// `tests/node/run.sh BINARY tests/e2e/speech.test.mjs` (CTest: e2e_speech_up).
// Waits are fail-fast bounds, never performance assertions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Stack } from './stack.mjs';

// A Prometheus sample's value from a /metrics text (0 when absent).
async function metric(url, sample) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

const model = 'omni-demo';
const NO_THINK = { chat_template_kwargs: { skip_reasoning: true } };
const SAMPLES_PER_UNIT = 960;  // 24 kHz, 25 units per second
const RATE = 24000;

let stack;
let client;
let scratch;

before(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-speech-'));
  stack = await new Stack(process.env.OMNISERVE_BINARY).start();
  client = stack.client();
});

after(async () => {
  if (stack) await stack.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// The PCM of a 16-bit mono WAV, checked to be one.
function wavPcm(bytes) {
  assert.equal(bytes.toString('latin1', 0, 4), 'RIFF');
  assert.equal(bytes.toString('latin1', 8, 12), 'WAVE');
  let at = 12;
  let fmt;
  while (at + 8 <= bytes.length) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ') fmt = { channels: bytes.readUInt16LE(at + 10), rate: bytes.readUInt32LE(at + 12), bits: bytes.readUInt16LE(at + 22) };
    if (id === 'data') {
      assert.deepEqual(fmt, { channels: 1, rate: RATE, bits: 16 });
      return bytes.subarray(at + 8, at + 8 + size);
    }
    at += 8 + size;
  }
  assert.fail('no data chunk');
}

// ffprobe's sample rate, channels and duration of `bytes`.
function probe(bytes, name) {
  const file = path.join(scratch, name);
  writeFileSync(file, bytes);
  const out = JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-show_entries',
    'stream=sample_rate,channels:format=duration', '-of', 'json', file]).toString());
  let seconds = Number(out.format.duration);
  if (!Number.isFinite(seconds)) {
    // A streamed FLAC carries no length in its header: decode it and count.
    const pcm = execFileSync('ffmpeg', ['-v', 'error', '-i', file, '-f', 's16le', '-ac', '1', '-ar', String(RATE), '-'],
      { maxBuffer: 1 << 28 });
    seconds = pcm.length / 2 / RATE;
  }
  return { rate: Number(out.streams[0].sample_rate), channels: out.streams[0].channels, seconds };
}

const noUnitText = (value) => {
  const text = JSON.stringify(value);
  assert.ok(!text.includes('<|audio'), 'an audio unit reached the client');
  assert.ok(!text.includes('discrete_audio') && !text.includes('audio_decoder_call') && !text.includes('transcript>'),
    'a speech tag reached the client');
};

const speak = (extra) => ({
  model, max_tokens: 160, temperature: 0, ...NO_THINK,
  modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, ...extra,
});

test('text to speech (scenario 9): message.audio holds a 24 kHz WAV of whole units, its transcript and a URL serving the same bytes', async () => {
  const r = await client.chat.completions.create(speak({ messages: [{ role: 'user', content: 'Say hello to the team.' }] }));
  noUnitText(r);
  const audio = r.choices[0].message.audio;
  assert.ok(audio, JSON.stringify(r.choices[0].message));
  assert.equal(r.choices[0].message.content, null);
  assert.match(audio.id, /^audio_/);
  assert.equal(typeof audio.transcript, 'string');
  assert.ok(audio.expires_at > Date.now() / 1000, `expires_at ${audio.expires_at}`);
  const wav = Buffer.from(audio.data, 'base64');
  const samples = wavPcm(wav).length / 2;
  assert.equal(samples % SAMPLES_PER_UNIT, 0, `${samples} samples is not whole units`);
  const units = samples / SAMPLES_PER_UNIT;
  assert.ok(units >= 3 && units <= 160, `${units} units`);
  assert.equal(audio.duration, samples / RATE);
  const p = probe(wav, 'tts.wav');
  assert.deepEqual([p.rate, p.channels], [RATE, 1]);
  assert.ok(Math.abs(p.seconds - samples / RATE) < 1e-3, `ffprobe says ${p.seconds} s`);
  const fetched = Buffer.from(await (await fetch(audio.url)).arrayBuffer());
  assert.ok(fetched.equals(wav), 'the URL serves the answer\'s audio');
});

test('speech to speech (scenario 10): an input_audio question gets a spoken answer', async () => {
  const question = Buffer.alloc(44 + 2 * 16000);
  question.write('RIFF', 0); question.writeUInt32LE(36 + 32000, 4); question.write('WAVEfmt ', 8);
  question.writeUInt32LE(16, 16); question.writeUInt16LE(1, 20); question.writeUInt16LE(1, 22);
  question.writeUInt32LE(16000, 24); question.writeUInt32LE(32000, 28); question.writeUInt16LE(2, 32);
  question.writeUInt16LE(16, 34); question.write('data', 36); question.writeUInt32LE(32000, 40);
  for (let i = 0; i < 16000; i++) question.writeInt16LE(Math.round(9000 * Math.sin(2 * Math.PI * 330 * i / 16000)), 44 + 2 * i);
  const r = await client.chat.completions.create(speak({
    audio: { voice: 'echo', format: 'mp3' },
    messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: question.toString('base64'), format: 'wav' } }] }],
  }));
  noUnitText(r);
  const mp3 = Buffer.from(r.choices[0].message.audio.data, 'base64');
  const p = probe(mp3, 's2s.mp3');
  assert.deepEqual([p.rate, p.channels], [RATE, 1]);
  const seconds = r.choices[0].message.audio.duration;
  assert.ok(seconds >= 3 * SAMPLES_PER_UNIT / RATE, `${seconds} s`);
  // MP3 adds its encoder delay and a frame of padding: at most ~0.1 s.
  assert.ok(p.seconds >= seconds - 0.01 && p.seconds <= seconds + 0.1, `ffprobe ${p.seconds} s for ${seconds} s`);
});

test('streamed: delta.audio transcript and pcm16 chunks, joined equal to the whole answer\'s audio; the finish comes after the audio', async () => {
  const messages = [{ role: 'user', content: 'Read this line aloud, slowly.' }];
  const whole = await client.chat.completions.create(speak({ messages, seed: 7 }));
  const wholePcm = wavPcm(Buffer.from(whole.choices[0].message.audio.data, 'base64'));
  const stream = await client.chat.completions.create(speak({ messages, seed: 7, stream: true }));
  const pcm = [];
  let transcript = '';
  let finalAudio;
  let finishAfterAudio = false;
  for await (const chunk of stream) {
    noUnitText(chunk);
    const choice = chunk.choices[0];
    if (!choice) continue;
    assert.equal(choice.delta.content ?? null, null, 'no content in a spoken stream');
    const a = choice.delta.audio;
    if (a?.data) pcm.push(Buffer.from(a.data, 'base64'));
    if (a?.transcript) transcript += a.transcript;
    if (a?.url) finalAudio = a;
    if (choice.finish_reason) finishAfterAudio = pcm.length > 0 && finalAudio !== undefined;
  }
  assert.ok(finishAfterAudio, 'the finish came before the audio');
  const joined = Buffer.concat(pcm);
  assert.equal(joined.length, wholePcm.length, 'same number of samples as the whole answer');
  assert.ok(joined.equals(wholePcm), 'the joined chunks are the whole answer\'s samples');
  assert.equal(transcript, whole.choices[0].message.audio.transcript);
  const stored = wavPcm(Buffer.from(await (await fetch(finalAudio.url)).arrayBuffer()));
  assert.ok(stored.equals(joined), 'the stored whole is the streamed audio');
});

test('Speech API: client.audio.speech.create answers in every response_format, and streams as SSE', async () => {
  const input = 'The quick brown fox.';
  for (const response_format of ['wav', 'pcm', 'mp3', 'opus', 'aac', 'flac']) {
    const response = await client.audio.speech.create({ model, input, voice: 'nova', response_format });
    const bytes = Buffer.from(await response.arrayBuffer());
    if (response_format === 'pcm') {
      assert.equal(bytes.length % (2 * SAMPLES_PER_UNIT), 0, `pcm of ${bytes.length} bytes is not whole units`);
      assert.ok(bytes.length >= 3 * 2 * SAMPLES_PER_UNIT);
      continue;
    }
    const p = probe(bytes, `speech.${response_format}`);
    assert.equal(p.channels, 1, response_format);
    // Ogg Opus always reports 48 kHz (RFC 7845); everything else keeps the vocoder's 24 kHz.
    assert.equal(p.rate, response_format === 'opus' ? 48000 : RATE, response_format);
    assert.ok(p.seconds >= 3 * SAMPLES_PER_UNIT / RATE - 0.01, `${response_format}: ${p.seconds} s`);
    if (response_format === 'wav') {
      // A streamed WAV: its sizes are unknown when the header leaves; the samples are whole units.
      assert.equal((bytes.length - 44) % (2 * SAMPLES_PER_UNIT), 0);
    }
  }
  const sse = await client.audio.speech.create({ model, input, voice: 'nova', response_format: 'pcm', stream_format: 'sse' });
  const text = await sse.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
  const pcm = Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio, 'base64')));
  assert.equal(pcm.length % (2 * SAMPLES_PER_UNIT), 0);
  assert.ok(pcm.length > 0);
  const done = events.at(-1);
  assert.equal(done.type, 'speech.audio.done');
  assert.ok(done.usage.output_tokens > 3, JSON.stringify(done.usage));
  await assert.rejects(client.audio.speech.create({ model, input, voice: 'nova', speed: 2 }), (e) => e.status === 400 && /speed/.test(e.message));
});

// A 24 kHz voice-like WAV: a pitch with harmonics under a syllable envelope.
function voiceWav(pitch, seconds = 1) {
  const n = Math.round(RATE * seconds);
  const wav = Buffer.alloc(44 + 2 * n);
  wav.write('RIFF', 0); wav.writeUInt32LE(36 + 2 * n, 4); wav.write('WAVEfmt ', 8);
  wav.writeUInt32LE(16, 16); wav.writeUInt16LE(1, 20); wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(RATE, 24); wav.writeUInt32LE(2 * RATE, 28); wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34); wav.write('data', 36); wav.writeUInt32LE(2 * n, 40);
  for (let i = 0; i < n; i++) {
    const t = i / RATE;
    let v = 0;
    for (let h = 1; h <= 5; h++) v += Math.sin(2 * Math.PI * pitch * h * t) / h;
    wav.writeInt16LE(Math.round(6000 * (0.5 + 0.5 * Math.sin(2 * Math.PI * 3 * t)) * v), 44 + 2 * i);
  }
  return wav;
}

test('zero-shot voices: a reference clip (audio.speaker.ref_audio, or OmniServe\'s is_ref_audio) changes the voice, not the words; each distinct clip is encoded once', async () => {
  const decoder = stack.urlOf('audio-decoder');
  const clips = async (result) => metric(decoder, `omni_audio_decoder_reference_clips_total{result="${result}"}`);
  const messages = [{ role: 'user', content: 'Tell me about the weather.' }];
  const table = await client.chat.completions.create(speak({ messages, seed: 3 }));
  const ref = `data:audio/wav;base64,${voiceWav(150).toString('base64')}`;
  const cloned = await client.chat.completions.create(speak({ messages, seed: 3, audio: { format: 'wav', speaker: { ref_audio: ref } } }));
  noUnitText(cloned);
  const a = wavPcm(Buffer.from(table.choices[0].message.audio.data, 'base64'));
  const b = wavPcm(Buffer.from(cloned.choices[0].message.audio.data, 'base64'));
  // The same units (same prompt and seed), so the same length; another voice, so other samples.
  assert.equal(cloned.choices[0].message.audio.transcript, table.choices[0].message.audio.transcript);
  assert.equal(b.length, a.length);
  assert.ok(!a.equals(b), 'the cloned voice sounds like the table speaker');
  assert.equal(await clips('encoded'), 1);
  // The same clip again, streamed: its vector is cached, and the chunks are the whole answer's samples.
  const stream = await client.chat.completions.create(speak({ messages, seed: 3, stream: true, audio: { format: 'wav', speaker: { ref_audio: ref } } }));
  const parts = [];
  for await (const chunk of stream) {
    noUnitText(chunk);
    const data = chunk.choices[0]?.delta?.audio?.data;
    if (data) parts.push(Buffer.from(data, 'base64'));
  }
  assert.ok(Buffer.concat(parts).equals(b), 'the streamed cloned voice differs from the whole answer');
  assert.equal(await clips('encoded'), 1);
  assert.ok(await clips('cached') >= 1);
  // is_ref_audio: the voice of the last input_audio part (another clip: encoded once more).
  const other = voiceWav(240);
  const s2s = await client.chat.completions.create(speak({
    is_ref_audio: true,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Answer in my voice.' }, { type: 'input_audio', input_audio: { data: other.toString('base64'), format: 'wav' } }] }],
  }));
  noUnitText(s2s);
  assert.ok(wavPcm(Buffer.from(s2s.choices[0].message.audio.data, 'base64')).length >= 3 * 2 * SAMPLES_PER_UNIT);
  assert.equal(await clips('encoded'), 2);
  // A clip that is not audio is the client's error.
  await assert.rejects(client.chat.completions.create(speak({ messages, audio: { format: 'wav', speaker: { ref_audio: 'data:text/plain;base64,aGVsbG8=' } } })),
    (e) => e.status === 400 && /reference clip/.test(e.message));
});

test('bad audio options get precise 4xx errors, and the stack keeps serving', async () => {
  const fails = async (promise, status, pattern) => {
    await assert.rejects(promise, (e) => {
      assert.equal(e.status, status, e.message);
      assert.match(e.message, pattern);
      return true;
    });
  };
  const messages = [{ role: 'user', content: 'Hi' }];
  await fails(client.chat.completions.create(speak({ messages, audio: { voice: 'alloy', format: 'ogg' } })), 400, /audio\.format/);
  await fails(client.chat.completions.create(speak({ messages, modalities: ['text', 'smell'] })), 400, /modalities/);
  await fails(client.chat.completions.create(speak({ messages, audio: { voice: 'nobody-here', format: 'wav' } })), 400, /nobody-here/);
  await fails(client.chat.completions.create(speak({ messages, max_tokens: 2 })), 400, /max_tokens/);
  const still = await client.chat.completions.create({ model, max_tokens: 2, messages });
  assert.equal(still.object, 'chat.completion');
});

test('SIGTERM stops the stack, the audio decoder with it, with exit code 0', async () => {
  const { code, signal } = await stack.stop();
  assert.equal(signal, null);
  assert.equal(code, 0);
});
