'use strict';
// captured before any candidate code runs: the candidate never holds these
const fs = require('fs');
const vm = require('vm');
const crypto = require('crypto');
const util = require('util');
const { readSync, writeSync, readFileSync, unlinkSync } = fs;
const { createContext, runInContext } = vm;
const isProxy = util.types.isProxy;
const { apply, ownKeys, getPrototypeOf, getOwnPropertyDescriptor } = Reflect;
const isArray = Array.isArray;
const stringify = JSON.stringify;
const exit = process.reallyExit.bind(process);
const hostRequire = require;
const builtins = new Set(require('module').builtinModules);
const allowedBuiltins = new Set(['assert', 'buffer', 'crypto', 'events', 'os', 'path',
  'querystring', 'string_decoder', 'url', 'util']);
// the nonce: read unbuffered, kept masked by a random pad
const pad = Buffer.alloc(80);
crypto.randomFillSync(pad);
const masked = Buffer.alloc(80);
let size = 0;
const byte = Buffer.alloc(1);
while (size < 80 && readSync(0, byte, 0, 1, null) === 1 && byte[0] !== 10) {
  masked[size] = byte[0] ^ pad[size];
  size += 1;
}
byte[0] = 0;
const candidateSource = readFileSync('main.js', 'utf8');
const testsSource = readFileSync('tests.js', 'utf8');
unlinkSync('tests.js');  // not readable from the work directory once the candidate runs
const names = new Set(testsSource.match(/[A-Za-z_$][\w$]*/g) || []);  // before it runs too
const write = (fd, text) => { try { writeSync(fd, '' + text); } catch (error) { /* closed */ } };
const noCode = { codeGeneration: { strings: false, wasm: false } };

// what the harness keeps of a realm, taken before any candidate code runs: its Error, its
// decoder of tagged JSON (built from its own JSON.parse) and the prototypes plain data has
const decoderSource = `(text) => JSON.parse(text, function (key, value) {
  if (value && typeof value === 'object' && !Array.isArray(value) && '\\u0000' in value) {
    const [tag, data] = value['\\u0000'];
    if (tag === 'u') return undefined;
    if (tag === 'n') return Number(data);
    if (tag === 'b') return BigInt(data);
    if (tag === 'a') { const out = []; for (let i = 0; i < data.length; i++) out[i] = data[i]; return out; }
    if (tag === 'o') return data;
  }
  return value;
})`;
const realmOf = (context) => ({
  error: runInContext('Error', context),
  decode: runInContext(decoderSource, context),
  prototypes: [runInContext('Array.prototype', context), runInContext('Object.prototype', context)],
});

// the candidate's realm: its own builtins; nothing of ours but closures
const candidate = createContext({}, noCode);
const candidateRealm = realmOf(candidate);
const candidateError = candidateRealm.error;
const candidateGlobals = runInContext(`(write, load) => {
  const text = (args) => args.map((x) => { try { return typeof x === 'string' ? x : JSON.stringify(x) ?? String(x); } catch (e) { return String(x); } }).join(' ');
  const log = (...args) => write(1, text(args) + '\\n');
  const err = (...args) => write(2, text(args) + '\\n');
  const module = { exports: {} };
  return { console: { log, info: log, debug: log, error: err, warn: err, trace: err,
                      assert: (c, ...m) => { if (!c) err('Assertion failed', ...m); } },
           require: (name) => load(String(name)), module, exports: module.exports };
}`, candidate);
const loadForCandidate = (name) => {
  const bare = name.startsWith('node:') ? name.slice(5) : name;
  if (builtins.has(bare) && !allowedBuiltins.has(bare)) {
    throw new candidateError(`require('${bare}') is not offered to a program under test`);
  }
  return hostRequire(name);
};
const given = candidateGlobals((fd, text) => write(fd, text), (name) => {
  try { return loadForCandidate(name); } catch (error) {
    throw new candidateError(String(error && error.message));
  }
});
for (const key of ['console', 'require', 'module', 'exports']) candidate[key] = given[key];

// the tests' realm: pristine builtins, never seen by the candidate
const tests = createContext({}, noCode);
let failures = 0;
const testsRealm = realmOf(tests);
const testsError = testsRealm.error;

class NotPlain extends Error {}
// a value as tagged JSON text, reading only own data properties (no getter, proxy, toJSON
// or prototype method of the value's realm runs)
const encode = (value, prototypes, depth) => {
  if (depth > 100) throw new NotPlain('nested too deeply');
  const kind = typeof value;
  if (value === undefined) return { '\u0000': ['u', 0] };
  if (value === null || kind === 'boolean' || kind === 'string') return value;
  if (kind === 'number') {
    return Number.isFinite(value) && !Object.is(value, -0) ? value : { '\u0000': ['n', String(value)] };
  }
  if (kind === 'bigint') return { '\u0000': ['b', String(value)] };
  if (kind !== 'object' || isProxy(value)) throw new NotPlain(`a ${kind === 'object' ? 'proxy' : kind}`);
  const proto = getPrototypeOf(value);
  const array = isArray(value);
  if (array ? proto !== prototypes[0] : proto !== prototypes[1] && proto !== null) {
    throw new NotPlain('an object that is not a plain object or array');
  }
  const out = array ? [] : {};
  for (const key of ownKeys(value)) {
    if (typeof key !== 'string') throw new NotPlain('a symbol key');
    const descriptor = getOwnPropertyDescriptor(value, key);
    if (!('value' in descriptor)) throw new NotPlain(`an accessor property ${stringify(key)}`);
    if (array && key === 'length') continue;
    if (!descriptor.enumerable) continue;
    out[key] = encode(descriptor.value, prototypes, depth + 1);
  }
  if (array) {
    const items = [];
    const length = getOwnPropertyDescriptor(value, 'length').value;
    if (length > 10000000) throw new NotPlain('an array too long');
    for (let i = 0; i < length; i++) items.push(i in out ? out[i] : { '\u0000': ['u', 0] });
    return { '\u0000': ['a', items] };
  }
  return { '\u0000': ['o', out] };
};

const bridge = (name, fn) => (args) => {
  let inCandidate;
  try {
    inCandidate = candidateRealm.decode(stringify(encode(args, testsRealm.prototypes, 0)));
  } catch (error) {
    throw new testsError(`${name}: arguments that are not plain data cross to the candidate: ${error.message}`);
  }
  let result;
  let threw = false;
  try {
    result = apply(fn, undefined, inCandidate);
  } catch (error) {
    threw = true;
    let message = 'an exception';
    try { message = typeof error === 'object' && error !== null ? String(getOwnPropertyDescriptor(error, 'message')?.value ?? 'an exception') : String(error); } catch (e) { /* its own */ }
    result = message;
  }
  if (threw) throw new testsError(`${name} threw: ${result}`);
  try {
    return testsRealm.decode(stringify(encode(result, candidateRealm.prototypes, 0)));
  } catch (error) {
    if (!(error instanceof NotPlain) && !(error instanceof RangeError)) throw new testsError(`${name}: ${error}`);
    throw new testsError(`${name} returned what is not plain data (${error.message}): the tests compare plain values only`);
  }
};

let loaded = true;
try {
  runInContext(candidateSource, candidate, { filename: 'main.js' });
} catch (error) {
  loaded = false;
  write(2, 'the program under test threw while it loaded\n');
}
const strictAssert = (condition, ...message) => {
  if (!condition) {
    failures += 1;
    throw new testsError('console.assert failed');
  }
};
const hostAssert = require('assert');
const testsGlobals = runInContext(`(check, write, load) => ({
  console: { assert: check, log: (...a) => write(1, a.join(' ') + '\\n'), error: (...a) => write(2, a.join(' ') + '\\n') },
  require: load,
})`, tests)(strictAssert, write, (name) => {
  const bare = name.startsWith('node:') ? name.slice(5) : name;
  if (bare === 'assert' || bare === 'assert/strict') return hostAssert;
  return hostRequire(name);
});
tests.console = testsGlobals.console;
tests.require = testsGlobals.require;
const makeStub = runInContext('(name, call) => ({ [name]: function (...args) { return call(args); } })[name]', tests);
for (const name of names) {
  if (!loaded) break;
  let kind;
  try { kind = runInContext(`typeof ${name}`, candidate); } catch (error) { continue; }
  if (kind !== 'function') continue;
  const fn = runInContext(name, candidate);
  let inTests;
  try { inTests = runInContext(`typeof ${name}`, tests); } catch (error) { continue; }
  if (inTests !== 'undefined') continue;  // a builtin of the tests' realm stays theirs
  tests[name] = makeStub(name, bridge(name, fn));
}
let passed = loaded;
try {
  runInContext(testsSource, tests, { filename: 'tests.js' });
} catch (error) {
  passed = false;
  let message = 'an exception';
  try { message = String(error && error.message); } catch (e) { /* ours */ }
  write(2, `a test failed: ${message}\n`);
}
if (passed && failures === 0 && size > 0) {
  let nonce = '';
  for (let i = 0; i < size; i++) nonce += String.fromCharCode(masked[i] ^ pad[i]);
  write(3, stringify({ harness: nonce }) + '\n');
  exit(0);
}
exit(1);
