// Speech and video understanding end to end (issue 19): the official OpenAI
// Node client against a real `omniserve up` on the demo models, which now
// runs an audio encoder beside the vision encoder. Audio in as OpenAI's
// input_audio (base64 WAV and MP3) and OmniServe's forms, video by video_url
// and by an image_url holding an mp4 behind a presigned-style URL, the
// Transcriptions API in every response_format, and bad media. Run with
// `tests/node/run.sh BINARY tests/e2e/audio_video.test.mjs` (CTest:
// e2e_audio_video_up). Waits are fail-fast bounds, never performance
// assertions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Stack, toFile } from './stack.mjs';

const DATA = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'data');
const fixture = (name) => readFileSync(path.join(DATA, name));
const model = 'omni-demo';
const NO_THINK = { chat_template_kwargs: { skip_reasoning: true } };

let stack;
let client;
let configDir;
let mediaServer;
let mediaOrigin;

// A mono 16-bit PCM WAV of `seconds` of a 440 Hz tone at `rate` Hz; with
// `claimFrames` the header claims that many frames whatever follows.
function toneWav(seconds, rate = 16000, claimFrames = undefined) {
  const n = Math.round(seconds * rate);
  const frames = claimFrames ?? n;
  const out = Buffer.alloc(44 + 2 * n);
  out.write('RIFF', 0);
  out.writeUInt32LE(Math.min(36 + 2 * frames, 0xffffffff), 4);
  out.write('WAVEfmt ', 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36);
  out.writeUInt32LE(Math.min(2 * frames, 0xffffffff), 40);
  for (let i = 0; i < n; i++) out.writeInt16LE(Math.round(12000 * Math.sin(2 * Math.PI * 440 * i / rate)), 44 + 2 * i);
  return out;
}

before(async () => {
  configDir = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-av-'));
  const config = path.join(configDir, 'up.yaml');
  writeFileSync(config, 'orchestrator:\n  media: {fetch_allow_loopback: true, fetch_timeout_ms: 5000}\n');
  // Media by http URL, whatever the query string (a presigned URL's).
  mediaServer = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url, 'http://x').pathname.slice(1));
    try {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(fixture(name));
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => mediaServer.listen(0, '127.0.0.1', resolve));
  mediaOrigin = `http://127.0.0.1:${mediaServer.address().port}`;
  stack = await new Stack(process.env.OMNISERVE_BINARY, ['--config', config]).start();
  client = stack.client();
});

after(async () => {
  if (stack) await stack.dispose();
  if (mediaServer) { mediaServer.closeAllConnections(); mediaServer.close(); }
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

async function metric(url, sample) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

const SYSTEM = 'You are a patient listening assistant. You answer questions about recordings: who speaks, in which ' +
  'language, and what is said, and you say when you cannot tell.';

const audioPart = (bytes, format) => ({ type: 'input_audio', input_audio: { data: bytes.toString('base64'), format } });

test('audio input (scenario 4): base64 WAV is encoded once, 75 + 75 positions for 3 s; a later turn with the same audio makes no encoder call and hits the prefix cache', async () => {
  const encoder = stack.urlOf('audio-encoder');
  const wav = toneWav(3.0);
  const before = await metric(encoder, 'omni_encoder_encoded_total');
  const messages = [{ role: 'system', content: SYSTEM },
    { role: 'user', content: [audioPart(wav, 'wav'), { type: 'text', text: 'What do you hear?' }] }];
  const first = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, ...NO_THINK });
  assert.equal(first.object, 'chat.completion');
  // 75 discrete ids + 75 continuous rows + the text around them.
  assert.ok(first.usage.prompt_tokens > 150, `prompt_tokens ${first.usage.prompt_tokens}`);
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), before + 1);
  messages.push({ role: 'assistant', content: first.choices[0].message.content || 'A tone.' });
  messages.push({ role: 'user', content: 'How long is it?' });
  const second = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, ...NO_THINK });
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), before + 1, 'no second encoder call');
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 150,
    `cached_tokens ${second.usage.prompt_tokens_details.cached_tokens} of ${second.usage.prompt_tokens}`);
});

test('audio input: an MP3, OmniServe\'s URL forms of input_audio, and a 1 s clip is a shorter prompt than a 3 s one', async () => {
  const mp3 = fixture('media/audio/stereo_44k.mp3');
  const ask = (part) => client.chat.completions.create({
    model, max_tokens: 2, temperature: 0, ...NO_THINK,
    messages: [{ role: 'user', content: [part, { type: 'text', text: 'Transcribe.' }] }],
  });
  const byData = await ask(audioPart(mp3, 'mp3'));
  const url = `${mediaOrigin}/media/audio/stereo_44k.mp3?X-Amz-Signature=00ff`;
  const byUrl = await ask({ type: 'input_audio', input_audio: { data: url, format: 'mp3' } });
  const byB64Url = await ask({ type: 'input_audio', input_audio: { data: Buffer.from(url).toString('base64url'), format: 'mp3' } });
  assert.equal(byUrl.usage.prompt_tokens, byData.usage.prompt_tokens);
  assert.equal(byB64Url.usage.prompt_tokens, byData.usage.prompt_tokens);
  const one = await ask(audioPart(toneWav(1.0), 'wav'));
  const three = await ask(audioPart(toneWav(3.0), 'wav'));
  // 25 ids and 25 rows per second: two more seconds are 100 more positions.
  assert.equal(three.usage.prompt_tokens - one.usage.prompt_tokens, 100);
});

test('video input (scenario 8): a video_url and an image_url holding the mp4 behind a presigned-style URL are encoded once by the vision encoder', async () => {
  const encoder = stack.urlOf('vision-encoder');
  const mp4 = fixture('media/video/clip10s_10fps.mp4');
  const ask = (part) => client.chat.completions.create({
    model, max_tokens: 2, temperature: 0, ...NO_THINK,
    messages: [{ role: 'user', content: [part, { type: 'text', text: 'What happens in this video?' }] }],
  });
  const before = await metric(encoder, 'omni_encoder_encoded_total');
  const byVideoUrl = await ask({ type: 'video_url', video_url: { url: `data:video/mp4;base64,${mp4.toString('base64')}` } });
  // 20 frames at 2 fps of 64x48 -> 392x280 -> grid 10 x 20 x 28 -> 1400 rows.
  assert.ok(byVideoUrl.usage.prompt_tokens > 1400, `prompt_tokens ${byVideoUrl.usage.prompt_tokens}`);
  const presigned = `${mediaOrigin}/media/video/clip10s_10fps.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab12`;
  const byImageUrl = await ask({ type: 'image_url', image_url: { url: presigned } });
  assert.equal(byImageUrl.usage.prompt_tokens, byVideoUrl.usage.prompt_tokens);
  assert.equal(await metric(encoder, 'omni_encoder_encoded_total'), before + 1, 'one encoder call for one video');
});

test('transcriptions: client.audio.transcriptions.create answers in every response_format, the same transcript in each', async () => {
  const wav = toneWav(3.0);
  const create = async (response_format) => client.audio.transcriptions.create({
    model, file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }), response_format, language: 'en',
  });
  const json = await create('json');
  assert.equal(typeof json.text, 'string');
  const text = await create('text');
  assert.equal(String(text).trim(), json.text);
  const verbose = await create('verbose_json');
  assert.equal(verbose.duration, 3);
  assert.equal(verbose.text, json.text);
  assert.equal(verbose.language, 'english');
  const srt = String(await create('srt'));
  const vtt = String(await create('vtt'));
  assert.ok(vtt.startsWith('WEBVTT\n'), vtt);
  if (json.text.length > 0) {
    assert.ok(srt.startsWith('1\n00:00:00,000 --> 00:00:03,000\n'), srt);
    assert.ok(vtt.includes('00:00:00.000 --> 00:00:03.000\n'), vtt);
  } else {
    assert.equal(srt, '');
  }
});

test('bad audio and video get precise 4xx errors naming the part, and the stack keeps serving', async () => {
  const ask = (part) => client.chat.completions.create({
    model, max_tokens: 2, messages: [{ role: 'user', content: [part, { type: 'text', text: 'Hm?' }] }],
  });
  const fails = async (promise, status, pattern) => {
    await assert.rejects(promise, (e) => {
      assert.equal(e.status, status, e.message);
      assert.match(e.message, pattern);
      return true;
    });
  };
  const png = fixture('media/palette.png');
  await fails(ask(audioPart(png, 'wav')), 415, /input_audio part's data is image/);
  await fails(ask(audioPart(Buffer.alloc(0), 'wav')), 400, /empty/);
  await fails(ask(audioPart(toneWav(1.0).subarray(0, 30), 'wav')), 400, /truncated|corrupt/);
  await fails(ask(audioPart(toneWav(0.5, 16000, 16000 * 36000), 'wav')), 413, /36000/);
  await fails(ask(audioPart(Buffer.from('just some text, not audio'), 'wav')), 415, /text/);
  await fails(ask({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav;base64,xx' } }), 400, /format/);
  await fails(ask({ type: 'video_url', video_url: { url: `data:video/mp4;base64,${fixture('media/video/audio_only.mp4').toString('base64')}` } }),
    415, /no video stream|video/);
  await fails(ask(audioPart(fixture('media/audio/unsupported_wavpack.mkv'), 'mkv')), 415, /codec|wavpack/i);
  // A WebM/Opus recording (it sniffs as a video container) is audio in an audio part.
  const webm = await ask(audioPart(fixture('media/audio/stereo_48k_opus.webm'), 'webm'));
  assert.equal(webm.object, 'chat.completion');
  const mp4 = fixture('media/video/clip10s_10fps.mp4');
  await fails(ask({ type: 'video_url', video_url: { url: `data:video/mp4;base64,${mp4.subarray(0, mp4.length >> 1).toString('base64')}` } }),
    400, /truncated|corrupt/);
  await fails(client.audio.transcriptions.create({ model, file: await toFile(png, 'x.png') }), 415, /image/);
  const still = await client.chat.completions.create({ model, max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(still.object, 'chat.completion');
});

test('SIGTERM stops the stack, the audio encoder with it, with exit code 0', async () => {
  const { code, signal } = await stack.stop();
  assert.equal(signal, null, stack.log);
  assert.equal(code, 0, stack.log);
  assert.match(stack.log, /up: stopped/);
});
