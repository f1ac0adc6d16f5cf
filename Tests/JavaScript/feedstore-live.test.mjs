// The browser client's module on its own, under Node's test runner: the contract's apply, and
// the client's connection states, recovery and offline calls, over a scripted WebSocket that
// stands in for the browser's (the browser tests run the module against the real server).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const source = readFileSync(new URL("../../Sources/FeedstoreHummingbird/Web/feedstore-live.js", import.meta.url), "utf8");
const { LiveClient, applyBatch, applyCounts } = await import("data:text/javascript," + encodeURIComponent(source));

/** A WebSocket as the client uses it: `sent` holds what it sent, and the test opens it, gives
 *  it frames and closes it with a code, as a server would. */
class ScriptedSocket {
  static made = [];
  constructor(url) {
    this.url = url;
    this.sent = [];
    ScriptedSocket.made.push(this);
  }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.serverClose(1005, ""); }
  serverOpen() { this.onopen?.(); }
  frame(frame) { this.onmessage?.({ data: JSON.stringify(frame) }); }
  serverClose(code, reason) {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.({ code, reason });
  }
}

function client(options = {}) {
  ScriptedSocket.made = [];
  const statuses = [];
  const made = new LiveClient("ws://server/live", { WebSocket: ScriptedSocket, retryDelays: [0], ...options,
    onStatus: (status, detail) => statuses.push([status, detail]) });
  return { client: made, statuses, socket: () => ScriptedSocket.made.at(-1) };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 5));

function batch(id, members) {
  return { type: "batch", id, fromSequence: 0, toSequence: 1, sectionDeletes: [], sectionInserts: [], deletes: [], inserts: [],
           moves: [], updates: [], ...members };
}

test("applyBatch follows the contract: deletes and move sources at old paths, inserts at new ones", () => {
  const sections = [{ key: [1], rows: ["a", "b", "c"] }];
  applyBatch(sections, batch("s", { deletes: [{ at: [0, 0] }], inserts: [{ at: [0, 2], record: "d" }],
                                    moves: [{ from: [0, 2], to: [0, 0], record: "c" }] }));
  assert.deepEqual(sections[0].rows, ["c", "b", "d"]);
  assert.throws(() => applyBatch(sections, batch("s", { deletes: [{ at: [0, 9] }] })), /no row at \[0, 9\]/);
});

/** A seeded generator (mulberry32), so that a failing run names the seed that reproduces it. */
function generator(seed) {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) % n);
  };
}

/** The batch that takes sectioned ids `before` to `after` ([{key, ids}], ids unique), with
 *  deletes and inserts grouped into runs of consecutive paths as the server sends them in
 *  indexes mode (`withRecords`: one insert per row, carrying its id as the record). */
function difference(before, after, withRecords) {
  const keyOf = (section) => JSON.stringify(section.key);
  const kept = new Set(after.flatMap((s) => s.ids)), had = new Set(before.flatMap((s) => s.ids));
  const afterKeys = new Set(after.map(keyOf)), beforeKeys = new Set(before.map(keyOf));
  const runs = (paths) => {
    const out = [];
    for (const [s, r] of paths) {
      const last = out.at(-1);
      if (last && last.at[0] === s && last.at[1] + last.count === r) last.count++; else out.push({ at: [s, r], count: 1 });
    }
    return out;
  };
  // Plain loops, each section's key looked up once: the seeded test diffs lists of thousands.
  const deleted = [], inserted = [];
  before.forEach((section, s) => {
    const stays = afterKeys.has(keyOf(section));
    section.ids.forEach((id, r) => { if (!stays || !kept.has(id)) deleted.push([s, r]); });
  });
  after.forEach((section, s) => {
    const stayed = beforeKeys.has(keyOf(section));
    section.ids.forEach((id, r) => { if (!stayed || !had.has(id)) inserted.push([s, r, id]); });
  });
  return batch("s", {
    sectionDeletes: before.flatMap((section, s) => (afterKeys.has(keyOf(section)) ? [] : [{ at: s }])),
    sectionInserts: after.flatMap((section, s) => (beforeKeys.has(keyOf(section)) ? [] : [{ at: s, key: section.key }])),
    deletes: runs(deleted),
    inserts: withRecords ? inserted.map(([s, r, id]) => ({ at: [s, r], record: id })) : runs(inserted),
  });
}

test("runs of positions and counts-only copies follow the contract on seeded random batches", () => {
  // Forty seeds in the long suite, ten in the quick one.
  const seeds = process.env.FEEDSTORE_LONG_TESTS ? 40 : 10;
  for (let seed = 1; seed <= seeds; seed++) {
    const random = generator(seed);
    // Sections keep their relative order by key; rows stay in id order inside a section, so
    // kept rows keep their order and the difference needs no moves.
    let shown = [];
    let nextID = 1;
    const objects = [], positions = [], counts = [];
    for (let step = 0; step < 25; step++) {
      const next = [];
      for (let key = 0; key < 6; key++) {
        const old = shown.find((s) => s.key[0] === key);
        if (random(4) === 0) continue;  // the section goes (or stays away)
        const ids = (old?.ids ?? []).filter(() => random(5) !== 0);
        for (let k = random(3) === 0 ? 200 + random(3000) : random(4); k > 0; k--) ids.push(nextID++);
        ids.sort((a, b) => a - b);
        if (ids.length) next.push({ key: [key], ids });
      }
      const context = `seed ${seed} step ${step}`;
      const whole = step === 0 ? { initial: true } : {};
      try {
        applyBatch(objects, { ...difference(shown, next, true), ...whole });
        const runsOnly = difference(shown, next, false);
        applyBatch(positions, { ...runsOnly, ...whole });
        applyCounts(counts, { ...runsOnly, ...whole });
      } catch (error) {
        throw new Error(`${context}: ${error.message}`);
      }
      assert.deepEqual(objects.map((s) => ({ key: s.key, ids: s.rows })), next, context);
      assert.deepEqual(positions.map((s) => [s.key, s.rows.length]), next.map((s) => [s.key, s.ids.length]), context);
      assert.deepEqual(counts, next.map((s) => ({ key: s.key, count: s.ids.length })), context);
      shown = next;
    }
  }
});

test("a first batch of ten million positions and a small batch after it are applied by runs", () => {
  const sections = [], counts = [];
  const first = batch("s", { initial: true, sectionInserts: [{ at: 0, key: [0] }, { at: 1, key: [1] }],
                             inserts: [{ at: [0, 0], count: 6_000_000 }, { at: [1, 0], count: 4_000_000 }] });
  assert.deepEqual(applyBatch(sections, first), [], "a first batch changes nothing the page showed");
  applyCounts(counts, first);
  const next = batch("s", { deletes: [{ at: [0, 5], count: 3 }], inserts: [{ at: [1, 2], count: 2 }], moves: [{ from: [0, 100], to: [1, 0] }] });
  assert.deepEqual(applyBatch(sections, next), [[1, 0], [1, 2], [1, 3]]);
  applyCounts(counts, next);
  assert.deepEqual(sections.map((s) => s.rows.length), [5_999_996, 4_000_003]);
  assert.deepEqual(counts.map((s) => s.count), [5_999_996, 4_000_003]);
  assert.throws(() => applyCounts(counts, batch("s", { deletes: [{ at: [1, 4_000_000], count: 5 }] })), /no row at \[1, 4000004\]/);
});

test("a refused connection reports why and does not retry", async () => {
  for (const [code, status] of [[4401, "unauthorized"], [4403, "forbiddenOrigin"], [1008, "refused"]]) {
    const { client: c, statuses, socket } = client({ token: "t" });
    assert.equal(socket().url, "ws://server/live?token=t");
    socket().serverOpen();
    socket().serverClose(code, "why");
    await turn();
    assert.equal(c.status, status);
    assert.deepEqual(statuses.at(-1), [status, { code, reason: "why" }]);
    assert.equal(ScriptedSocket.made.length, 1, `${status}: no retry`);
    c.reconnect({ token: "new" });
    assert.equal(ScriptedSocket.made.length, 2);
    assert.equal(socket().url, "ws://server/live?token=new");
    c.close();
  }
});

test("a lost connection is offline, retries, and is open again only at the welcome", async () => {
  const { client: c, statuses, socket } = client();
  socket().serverClose(1006, "");
  assert.equal(c.status, "offline");
  assert.equal(statuses.at(-1)[1].retryIn, 0);
  await turn();
  assert.equal(ScriptedSocket.made.length, 2);
  assert.equal(c.status, "connecting");
  socket().serverOpen();
  assert.equal(c.status, "connecting");
  socket().frame({ type: "welcome", session: "k", resumed: false });
  assert.equal(c.status, "open");
  c.close();
  assert.equal(c.status, "closed");
  await turn();
  assert.equal(ScriptedSocket.made.length, 2, "no retry after close()");
});

test("setWindow before the socket opens is in the subscribe that opening sends", () => {
  const { client: c, socket } = client();
  const s = c.subscribe({ entity: "Message", index: "byFolderDate", offset: 0, limit: 50 }, () => {});
  s.setWindow(200, 50);
  assert.deepEqual(socket().sent, []);
  socket().serverOpen();
  assert.deepEqual(socket().sent, [{ type: "subscribe", id: s.id, entity: "Message", index: "byFolderDate", offset: 200, limit: 50 }]);
  socket().frame({ type: "welcome", session: "k" });
  socket().frame(batch(s.id, { initial: true, window: { offset: 200, limit: 50 }, inserts: [{ at: [0, 0], record: { id: 1 } }],
                               sectionInserts: [{ at: 0, key: [] }] }));
  assert.deepEqual(s.shownWindow, { offset: 200, limit: 50 });
  c.close();
});

test("offline calls: an unsubscribe is not sent again after the resume, a moved window and the last rows request are", async () => {
  const { client: c, socket } = client();
  const kept = c.subscribe({ entity: "Message", index: "byFolderDate", mode: "indexes", offset: 0, limit: 10 });
  const dropped = c.subscribe({ entity: "Message", index: "unreadByDate", mode: "indexes" });
  socket().serverOpen();
  socket().frame({ type: "welcome", session: "k" });
  for (const s of [kept, dropped]) socket().frame(batch(s.id, { initial: true }));
  socket().serverClose(1006, "");
  dropped.unsubscribe();
  kept.setWindow(5, 10);
  kept.requestRows(0, 3);
  kept.requestRows(3, 3);
  await turn();
  socket().serverOpen();
  assert.deepEqual(socket().sent, [
    { type: "resume", session: "k", subscriptions: [{ id: kept.id, entity: "Message", index: "byFolderDate", mode: "indexes",
                                                       offset: 5, limit: 10, applied: 1 }] },
    { type: "rows", id: kept.id, offset: 3, limit: 3 },
  ]);
  assert.equal(dropped.state, "ended");
  c.close();
});

test("a batch the copy cannot take opens the subscription again, reported once, and the old one's frames are ignored", () => {
  const { client: c, socket } = client();
  const changes = [];
  const s = c.subscribe({ entity: "Message", index: "byFolderDate", limit: 10 }, (_, change) => changes.push(change));
  const first = s.id;
  socket().serverOpen();
  socket().frame({ type: "welcome", session: "k" });
  socket().frame(batch(first, { initial: true, sectionInserts: [{ at: 0, key: [] }], inserts: [{ at: [0, 0], record: { id: 1 } }] }));
  socket().frame(batch(first, { deletes: [{ at: [0, 5] }] }));
  assert.equal(changes.filter((x) => x.kind === "reset").length, 1);
  assert.notEqual(s.id, first);
  assert.deepEqual(socket().sent.slice(-2), [{ type: "unsubscribe", id: first },
                                            { type: "subscribe", id: s.id, entity: "Message", index: "byFolderDate", limit: 10 }]);
  socket().frame(batch(first, { deletes: [{ at: [0, 7] }] }));
  assert.equal(changes.length, 2, "a frame of the old subscription changes nothing");
  socket().frame(batch(s.id, { initial: true, sectionInserts: [{ at: 0, key: [] }], inserts: [{ at: [0, 0], record: { id: 2 } }] }));
  assert.deepEqual(s.rows, [{ id: 2 }]);
  assert.equal(c.status, "open", "a rebuilt copy is no status of the connection");
  c.close();
});

test("a subscription that keeps failing stops with an error instead of resubscribing forever", () => {
  const { client: c, socket } = client();
  const changes = [];
  const s = c.subscribe({ entity: "Message", index: "byFolderDate", limit: 10 }, (_, change) => changes.push(change.kind));
  socket().serverOpen();
  for (let i = 0; i < 6; i++) socket().frame(batch(s.id, { deletes: [{ at: [3, 3] }] }));
  assert.deepEqual(changes, ["reset", "reset", "reset", "error"]);
  assert.equal(s.state, "ended");
  assert.equal(s.error.code, "unappliable");
  c.close();
});

test("a refused subscription ends and is not resumed; connection errors are bounded", async () => {
  const seen = [];
  const { client: c, socket } = client({ maxErrors: 3, onError: (frame) => seen.push(frame) });
  const s = c.subscribe({ entity: "Message", index: "byFolderDate", limit: 10 });
  socket().serverOpen();
  socket().frame({ type: "welcome", session: "k" });
  socket().frame({ type: "error", id: s.id, code: "refused", message: "no" });
  assert.equal(s.state, "ended");
  assert.equal(c.subscriptions.size, 0);
  for (let i = 0; i < 10; i++) socket().frame({ type: "error", code: "malformed", message: `m${i}` });
  assert.deepEqual(c.errors.map((e) => e.message), ["m7", "m8", "m9"]);
  assert.equal(seen.length, 10);
  socket().serverClose(1006, "");
  await turn();
  socket().serverOpen();
  assert.deepEqual(socket().sent, [], "nothing to resume");
  c.close();
});

test("a resume the server answers with a reset rebuilds the copy, and the status stays open", () => {
  const { client: c, socket } = client();
  const changes = [];
  const s = c.subscribe({ entity: "Message", index: "byFolderDate", limit: 10 }, (_, change) => changes.push(change));
  socket().serverOpen();
  socket().frame({ type: "welcome", session: "k" });
  socket().frame(batch(s.id, { initial: true, sectionInserts: [{ at: 0, key: [] }], inserts: [{ at: [0, 0], record: { id: 1 } }] }));
  socket().frame(batch(s.id, { reset: true, sectionInserts: [{ at: 0, key: [] }], inserts: [{ at: [0, 0], record: { id: 9 } }] }));
  assert.deepEqual(s.rows, [{ id: 9 }]);
  assert.equal(changes.at(-1).reset, true);
  assert.equal(c.status, "open");
  c.close();
});
