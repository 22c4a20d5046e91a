// A real `omniserve up` for the end-to-end suites: started on an OS-picked
// client port with a data directory of its own, its log kept, and what it
// says about its children read from that log. Waits are fail-fast bounds,
// never performance assertions.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

export const STARTUP_WAIT_MS = 300_000;
export const EXIT_WAIT_MS = 90_000;

let OpenAIClass;
let toFileFn;
try {
  ({ default: OpenAIClass, toFile: toFileFn } = await import('openai'));
} catch (e) {
  throw new Error(`the npm package "openai" is missing (run \`npm ci\` in the repository root): ${e.message}`);
}
export const OpenAI = OpenAIClass;
export const toFile = toFileFn;

export class Stack {
  constructor(binary, args = []) {
    assert.ok(binary, 'set OMNISERVE_BINARY to the omniserve binary');
    assert.ok(existsSync(binary), `no binary at ${binary}`);
    this.binary = binary;
    this.args = args;
    this.log = '';
    this.workDir = mkdtempSync(path.join(tmpdir(), 'omniserve-e2e-'));
  }

  // Starts up and resolves once it names the client port:
  // "the OpenAI API (model M) is served by the ROLE on http://HOST:PORT".
  async start() {
    this.up = spawn(this.binary, ['up', '--port', '0', '--data-dir', this.workDir, ...this.args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    this.exit = new Promise((resolve) => this.up.on('exit', (code, signal) => resolve({ code, signal })));
    const port = await this.withTimeout(new Promise((resolve, reject) => {
      const onData = (buf) => {
        this.log += buf.toString();
        const m = this.log.match(/the OpenAI API \(model [^)]*\) is served by [^\n]*? on http:\/\/127\.0\.0\.1:(\d+)/);
        if (m) resolve(Number(m[1]));
      };
      this.up.stdout.on('data', onData);
      this.up.stderr.on('data', onData);
      this.up.on('error', reject);
      this.exit.then(({ code, signal }) => reject(new Error(`omniserve up exited early (code ${code}, signal ${signal})`)));
    }), STARTUP_WAIT_MS, 'waiting for up to serve');
    this.origin = `http://127.0.0.1:${port}`;
    return this;
  }

  client(options = {}) {
    return new OpenAI({ baseURL: `${this.origin}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000, ...options });
  }

  // The newest PID up reports for a child ("started llm-0 pid=123").
  pidOf(child) {
    const all = [...this.log.matchAll(new RegExp(`started ${child} pid=(\\d+)`, 'g'))];
    assert.ok(all.length > 0, `up has not started ${child}`);
    return Number(all[all.length - 1][1]);
  }

  // Where up says a child serves ("up: gateway on http://127.0.0.1:PORT").
  urlOf(child) {
    const m = this.log.match(new RegExp(`up: ${child} on (http://127\\.0\\.0\\.1:\\d+)`));
    assert.ok(m, `up did not say where ${child} serves`);
    return m[1];
  }

  // Resolves with the client port's /health report (its HTTP status in
  // `http`) once `accept` holds.
  async waitForHealth(accept, what) {
    return this.withTimeout((async () => {
      for (;;) {
        try {
          const r = await fetch(`${this.origin}/health`);
          const report = { ...(await r.json()), http: r.status };
          if (accept(report)) return report;
        } catch {
          // not serving yet
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(), STARTUP_WAIT_MS, what);
  }

  withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms\n--- up's log ---\n${this.log}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  // SIGTERM, and the exit status.
  async stop() {
    this.up.kill('SIGTERM');
    return this.withTimeout(this.exit, EXIT_WAIT_MS, 'waiting for up to exit');
  }

  // For `after`: if up still runs, SIGTERM (so it stops its children: a
  // SIGKILLed up leaves them running, holding the test's output pipes open
  // and the test process with them), SIGKILL only if it does not exit in
  // time; then the data directory removed. With E2E_LOG_DIR set, up's whole
  // log is kept there.
  async dispose() {
    if (this.up && this.up.exitCode === null && this.up.signalCode === null) {
      this.up.kill('SIGTERM');
      const timer = setTimeout(() => this.up.kill('SIGKILL'), EXIT_WAIT_MS);
      await this.exit;
      clearTimeout(timer);
    }
    if (process.env.E2E_LOG_DIR) writeFileSync(path.join(process.env.E2E_LOG_DIR, `up-${process.pid}.log`), this.log);
    rmSync(this.workDir, { recursive: true, force: true });
  }
}
