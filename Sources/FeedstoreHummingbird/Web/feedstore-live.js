// feedstore-live.js: the browser client of Feedstore's live queries (protocol version 1).
// A dependency-free ES module: it connects, subscribes, applies each batch to a sectioned copy
// by the change-batch contract, reconnects and resumes after a dropped connection, and calls the
// page's renderer with what changed. Its API is documented in the Live Queries article.
//
//   import { LiveClient } from "/feedstore-live.js";
//   const client = new LiveClient("ws://127.0.0.1:8080/live", { token, onStatus: (status) => show(status) });
//   const inbox = client.subscribe(
//     { entity: "Message", index: "byFolderDate", sectionBy: 1, mode: "indexes" },
//     (subscription, change) => render(subscription.sections, change));
//   inbox.requestRows(0, 50);          // indexes mode: rows arrive in a "rows" frame
//   inbox.setWindow(100, 50);          // a windowed subscription moves its window

/** Applies one batch to `sections` ([{key, rows}]) in place, by the contract: rows leave at
 *  their old paths (deletes, move sources; from the last), deleted sections go, new sections
 *  come, rows arrive at their new paths (inserts, move destinations; from the first), updated
 *  rows are replaced. In indexes mode a row is `undefined` until a rows frame fills it, and a
 *  row that moved or changed is `undefined` again (its content may have changed). A run of
 *  positions (`count`) leaves or arrives in one step, so a batch costs what its runs cost and
 *  a first batch of ten million positions a few array fills.
 *  Returns the paths [section, row] of rows inserted, moved or updated; none for a first batch or
 *  a reset, whose rows are all new. Throws on a batch the copy cannot take (which the contract
 *  rules out). */
/** The longest run inserted as one spread of arguments. */
const RUN_SPREAD = 4096;

export function applyBatch(sections, batch) {
  const whole = !!(batch.initial || batch.reset);
  if (whole) sections.length = 0;
  const objects = (batch.inserts || []).some((i) => "record" in i) ||
    (batch.moves || []).some((m) => "record" in m) || (batch.updates || []).some((u) => "record" in u);
  // Removals as runs [section, row, count, move source?], last first (the runs are disjoint).
  const removals = (batch.deletes || []).map((d) => [d.at[0], d.at[1], d.count ?? 1, false]);
  for (const m of batch.moves || []) removals.push([m.from[0], m.from[1], 1, true]);
  removals.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  const movedRows = new Map();
  for (const [s, r, count, moved] of removals) {
    if (!sections[s] || r + count > sections[s].rows.length) throw new Error(`no row at [${s}, ${r + count - 1}]`);
    const removed = sections[s].rows.splice(r, count);
    if (moved) movedRows.set(`${s},${r}`, removed[0]);
  }
  for (const s of [...(batch.sectionDeletes || [])].map((d) => d.at).sort((a, b) => b - a)) {
    if (!sections[s] || sections[s].rows.length) throw new Error(`section ${s} deleted while not empty`);
    sections.splice(s, 1);
  }
  for (const insert of batch.sectionInserts || []) {
    if (insert.at > sections.length) throw new Error(`no place for section ${insert.at}`);
    sections.splice(insert.at, 0, { key: insert.key, rows: [] });
  }
  // Arrivals as runs [[section, row], count, row], first first: each lands at its new path.
  const additions = [];
  for (const m of batch.moves || []) {
    additions.push([m.to, 1, objects ? (m.record ?? movedRows.get(`${m.from[0]},${m.from[1]}`)) : undefined]);
  }
  for (const i of batch.inserts || []) additions.push([i.at, "count" in i ? i.count : 1, i.record]);
  additions.sort((a, b) => a[0][0] - b[0][0] || a[0][1] - b[0][1]);
  const changed = [];
  for (const [[s, r], count, row] of additions) {
    const rows = sections[s]?.rows;
    if (!rows || r > rows.length) throw new Error(`no place [${s}, ${r}]`);
    if (count === 1) {
      rows.splice(r, 0, row);
    } else if (count <= RUN_SPREAD) {
      rows.splice(r, 0, ...new Array(count).fill(undefined));
    } else {
      // A long run: the rows after it step aside once, and the run is filled in place (a
      // spread of that many arguments would overflow the stack).
      const after = rows.splice(r);
      rows.length = r + count;
      rows.fill(undefined, r);
      for (const moved of after) rows.push(moved);
    }
    if (!whole) for (let k = 0; k < count; k++) changed.push([s, r + k]);
  }
  for (const u of batch.updates || []) {
    const [s, r] = u.to;
    if (!sections[s] || r >= sections[s].rows.length) throw new Error(`no row to update at [${s}, ${r}]`);
    sections[s].rows[r] = objects ? u.record : undefined;
    if (!whole) changed.push([s, r]);
  }
  return changed;
}

/** Applies one batch to `sections` ([{key, count}]) that keep each section's row count and no
 *  rows: a subscription opened with `{ countsOnly: true }` (an indexes-mode one, for a list's
 *  shape or a badge). Costs what the batch's runs cost, whatever the counts. Throws on a batch
 *  the counts cannot take, as ``applyBatch`` does. */
export function applyCounts(sections, batch) {
  if (batch.initial || batch.reset) sections.length = 0;
  const take = (s, r, count, what) => {
    if (!sections[s] || r + count > sections[s].count) throw new Error(`no ${what} at [${s}, ${r + count - 1}]`);
    sections[s].count -= count;
  };
  // Last first, as rows leave a copy: each run is checked against the rows before it.
  const removals = [...(batch.deletes || []).map((d) => [d.at, d.count ?? 1, "row"]), ...(batch.moves || []).map((m) => [m.from, 1, "moved row"])];
  removals.sort((a, b) => b[0][0] - a[0][0] || b[0][1] - a[0][1]);
  for (const [[s, r], count, what] of removals) take(s, r, count, what);
  for (const s of [...(batch.sectionDeletes || [])].map((d) => d.at).sort((a, b) => b - a)) {
    if (!sections[s] || sections[s].count) throw new Error(`section ${s} deleted while not empty`);
    sections.splice(s, 1);
  }
  for (const insert of batch.sectionInserts || []) {
    if (insert.at > sections.length) throw new Error(`no place for section ${insert.at}`);
    sections.splice(insert.at, 0, { key: insert.key, count: 0 });
  }
  const arrivals = [...(batch.moves || []).map((m) => [m.to, 1]), ...(batch.inserts || []).map((i) => [i.at, i.count ?? 1])];
  arrivals.sort((a, b) => a[0][0] - b[0][0] || a[0][1] - b[0][1]);
  for (const [[s, r], count] of arrivals) {
    if (!sections[s] || r > sections[s].count) throw new Error(`no place [${s}, ${r}]`);
    sections[s].count += count;
  }
  for (const u of batch.updates || []) {
    if (!sections[u.to[0]] || u.to[1] >= sections[u.to[0]].count) throw new Error(`no row to update at [${u.to}]`);
  }
  return [];
}

/** Fills rows of `sections` from a "rows" frame. */
export function applyRows(sections, frame) {
  for (const { at: [s, r], record } of frame.rows) {
    if (sections[s] && r < sections[s].rows.length) sections[s].rows[r] = record;
  }
}

/** The close codes of a connection the server refused before any frame: retrying cannot help. */
const REFUSALS = { 4401: "unauthorized", 4403: "forbiddenOrigin" };
/** Close codes that say the server will not take this client as it is (policy, a frame it cannot
 *  read, one too large): retrying would meet the same. */
const POLICY_CLOSES = new Set([1003, 1007, 1008, 1009, 1010]);
/** Error codes after which the server holds a running subscription no more. */
const ENDING = new Set(["refused", "storeFailed", "unknownEntity", "unknownIndex", "unknownField", "invalidRange", "invalidFilter"]);
/** Batches in a row a subscription may fail to apply (each followed by a new subscription) before
 *  it stops. */
const MAX_FAILED_APPLIES = 3;

/** One subscription: its query, its sectioned copy, and the toSequence of the last batch applied. */
export class Subscription {
  constructor(client, id, query, onChange, options = {}) {
    this.client = client;
    this.id = id;
    this.query = { ...query };
    this.onChange = onChange;
    /** Sections keep their row counts and no rows (`{ countsOnly: true }`). */
    this.countsOnly = !!options.countsOnly;
    this.sections = [];
    /** The window the copy shows ({offset, limit}; the first row is at `offset` of the whole
     *  order), from the last batch: a moved window shows from the batch that carries it. */
    this.shownWindow = query.limit !== undefined ? { offset: query.offset ?? 0, limit: query.limit } : null;
    this.applied = null;
    /** The last error frame of this subscription, or the reason it stopped. */
    this.error = null;
    /** "opening" until its first batch, "live", or "ended" (refused, failed, unsubscribed). */
    this.state = "opening";
    this._failedApplies = 0;
  }

  /** Every row, section after section. */
  get rows() { return this.countsOnly ? [] : this.sections.flatMap((s) => s.rows); }

  /** The number of rows the copy holds. */
  get count() { return this.sections.reduce((n, s) => n + (this.countsOnly ? s.count : s.rows.length), 0); }

  /** Moves the window (a subscription opened with a limit). Offline, the move waits for the
   *  connection (only the last one counts). */
  setWindow(offset, limit) {
    if (this.state === "ended") return;
    this.query.offset = offset;
    this.query.limit = limit;
    this.client._sendNow({ type: "setWindow", id: this.id, offset, limit });
  }

  /** Asks for the rows at positions offset..<offset+limit (indexes mode). Offline, the last
   *  request waits for the connection. */
  requestRows(offset, limit) {
    if (this.state === "ended") return;
    this._pendingRows = { offset, limit };
    if (this.client._sendNow({ type: "rows", id: this.id, offset, limit })) this._pendingRows = undefined;
  }

  unsubscribe() {
    if (this.state === "ended") return;
    this._end(null);
    // Offline, nothing is sent: the resume names only the subscriptions still open.
    this.client._sendNow({ type: "unsubscribe", id: this.id });
  }

  _end(error) {
    this.state = "ended";
    this.error = error;
    this.client.subscriptions.delete(this.id);
  }

  _apply(frame) {
    if (frame.type === "batch") {
      // After a failed batch, the frames of the old subscription that were on their way.
      let changed;
      try {
        changed = (this.countsOnly ? applyCounts : applyBatch)(this.sections, frame);
      } catch (error) {
        this._failedApplies++;
        if (this._failedApplies > MAX_FAILED_APPLIES) {
          this._end({ type: "error", code: "unappliable", message: String(error.message ?? error), id: this.id });
          this.client._sendNow({ type: "unsubscribe", id: this.id });
          this.onChange?.(this, { kind: "error", error: this.error });
        } else {
          this.client._resubscribe(this, error);
        }
        return;
      }
      this._failedApplies = 0;
      this.state = "live";
      const before = this.shownWindow;
      const windowMoved = !!frame.window && (!before || before.offset !== frame.window.offset || before.limit !== frame.window.limit);
      if (frame.window) this.shownWindow = frame.window;
      this.applied = frame.toSequence;
      // `changed`: rows inserted, moved or updated, by new path; with `windowMoved`, inserts
      // include rows that only came into the window. `reset`: the copy was rebuilt.
      this.onChange?.(this, { kind: "batch", batch: frame, changed, windowMoved, reset: !!frame.reset });
    } else if (frame.type === "rows") {
      if (!this.countsOnly) applyRows(this.sections, frame);
      this.onChange?.(this, { kind: "rows", frame });
    } else if (frame.type === "error") {
      this.error = frame;
      if ((this.state === "opening" && frame.code !== "rateLimited") || ENDING.has(frame.code)) this._end(frame);
      this.onChange?.(this, { kind: "error", error: frame });
    }
  }
}

/** A connection to a live-query server that reconnects and resumes by itself. `options`:
 *  `token` (sent as ?token=), `onStatus(status, detail)`, `onError(frame)` for errors of no
 *  subscription, `retryDelays` in milliseconds, `maxErrors` kept in `errors` (50), and
 *  `WebSocket` (the constructor to use; the browser's by default). */
export class LiveClient {
  constructor(url, options = {}) {
    this.baseURL = url;
    this.options = options;
    this.subscriptions = new Map();
    this.session = null;
    this.nextID = 1;
    this.closed = false;
    this.attempt = 0;
    /** The last `maxErrors` error frames that concern no subscription. */
    this.errors = [];
    /** "connecting", "open", "offline", "unauthorized", "forbiddenOrigin", "refused" or "closed". */
    this.status = "connecting";
    this._connect();
  }

  get url() {
    const token = this.options.token;
    return token ? `${this.baseURL}${this.baseURL.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}` : this.baseURL;
  }

  /** Opens a subscription; `onChange(subscription, change)` runs after each frame applied. */
  subscribe(query, onChange, options = {}) {
    const id = `s${this.nextID++}`;
    const subscription = new Subscription(this, id, query, onChange, options);
    this.subscriptions.set(id, subscription);
    // Offline, the subscription opens with the connection (the resume names it).
    this._sendNow({ type: "subscribe", id, ...subscription.query });
    return subscription;
  }

  /** Connects again now, after a refusal or while waiting to retry; `options` may bring a new
   *  `token`. */
  reconnect(options = {}) {
    if (this.closed) return;
    Object.assign(this.options, options);
    clearTimeout(this._retry);
    this.attempt = 0;
    const socket = this.socket;
    this.socket = null;
    if (socket) { socket.onclose = null; socket.close(); }
    this._connect();
  }

  /** Ends the connection for good. */
  close() {
    this.closed = true;
    clearTimeout(this._retry);
    this.socket?.close();
    this._status("closed");
  }

  /** Drops the connection as a lost network would, to reconnect and resume (for tests). */
  drop() {
    this.socket?.close();
  }

  _status(status, detail = {}) {
    const changed = status !== this.status || status === "open";
    this.status = status;
    if (changed) this.options.onStatus?.(status, detail);
  }

  _connect() {
    const Socket = this.options.WebSocket ?? globalThis.WebSocket;
    const socket = new Socket(this.url);
    this.socket = socket;
    this.open = false;
    this._status("connecting", { attempt: this.attempt });
    socket.onopen = () => {
      this.open = true;
      this.attempt = 0;
      const open = [...this.subscriptions.values()];
      if (this.session && open.length) {
        const subscriptions = open.map((s) => ({ id: s.id, ...s.query, applied: s.applied }));
        socket.send(JSON.stringify({ type: "resume", session: this.session, subscriptions }));
      } else {
        for (const s of open) socket.send(JSON.stringify({ type: "subscribe", id: s.id, ...s.query }));
      }
      for (const s of open) {
        if (s._pendingRows) socket.send(JSON.stringify({ type: "rows", id: s.id, ...s._pendingRows }));
        s._pendingRows = undefined;
      }
    };
    socket.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        this._error({ type: "error", code: "malformed", message: "the server sent a frame that is not JSON" });
        return;
      }
      this._receive(frame);
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.open = false;
      if (this.closed) return;
      const refusal = REFUSALS[event.code] ?? (POLICY_CLOSES.has(event.code) ? "refused" : null);
      if (refusal) {
        // Retrying would meet the same refusal: the page decides (reconnect()).
        this._status(refusal, { code: event.code, reason: event.reason });
        return;
      }
      const delays = this.options.retryDelays ?? [100, 250, 500, 1000, 2000, 5000];
      const retryIn = delays[Math.min(this.attempt++, delays.length - 1)];
      this._status("offline", { code: event.code, reason: event.reason, retryIn });
      this._retry = setTimeout(() => this._connect(), retryIn);
    };
  }

  _receive(frame) {
    if (frame.type === "welcome") {
      // A connection that resumes gets a first welcome, then the resume's answer.
      this.session = frame.session;
      this._status("open", { resumed: !!frame.resumed, session: frame.session });
      return;
    }
    const subscription = frame.id !== undefined ? this.subscriptions.get(frame.id) : undefined;
    if (subscription) subscription._apply(frame);
    else if (frame.type === "error" && frame.code !== "unknownSubscription") this._error(frame);
  }

  _error(frame) {
    this.errors.push(frame);
    const most = this.options.maxErrors ?? 50;
    if (this.errors.length > most) this.errors.splice(0, this.errors.length - most);
    this.options.onError?.(frame);
  }

  /** Opens `subscription` again under a new id after a batch its copy could not take; the old
   *  one's frames still on their way are ignored. Reported once, as a change of kind "reset". */
  _resubscribe(subscription, error) {
    const old = subscription.id;
    this.subscriptions.delete(old);
    subscription.id = `s${this.nextID++}`;
    subscription.sections = [];
    subscription.applied = null;
    subscription.state = "opening";
    this.subscriptions.set(subscription.id, subscription);
    this._sendNow({ type: "unsubscribe", id: old });
    this._sendNow({ type: "subscribe", id: subscription.id, ...subscription.query });
    subscription.onChange?.(subscription, { kind: "reset", reason: String(error?.message ?? error) });
  }

  /** Sends `frame` if the connection is open; offline, the connection's opening sends what
   *  the subscriptions are then. Whether it was sent. */
  _sendNow(frame) {
    if (!this.open) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }
}
