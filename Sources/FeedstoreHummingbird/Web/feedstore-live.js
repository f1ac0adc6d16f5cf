// feedstore-live.js: the browser client of Feedstore's live queries (protocol version 1).
// A dependency-free ES module: it connects, subscribes, applies each batch to a sectioned copy
// by the change-batch contract, reconnects and resumes after a dropped connection, and calls the
// page's renderer with what changed.
//
//   import { LiveClient } from "/feedstore-live.js";
//   const client = new LiveClient("ws://127.0.0.1:8080/live", { token });
//   const inbox = client.subscribe(
//     { entity: "Message", index: "byFolderDate", sectionBy: 1, mode: "indexes" },
//     (subscription, batch) => render(subscription.sections, batch));
//   inbox.requestRows(0, 50);          // indexes mode: rows arrive in a "rows" frame
//   inbox.setWindow(100, 50);          // a windowed subscription moves its window

/** Applies one batch to `sections` ([{key, rows}]) in place, by the contract: rows leave at
 *  their old paths (deletes, move sources; from the last), deleted sections go, new sections
 *  come, rows arrive at their new paths (inserts, move destinations; from the first), updated
 *  rows are replaced. In indexes mode a row is `undefined` until a rows frame fills it, and a
 *  row that moved or changed is `undefined` again (its content may have changed).
 *  Returns the paths [section, row] of rows inserted, moved or updated. Throws on a batch the
 *  copy cannot take (which the contract rules out). */
export function applyBatch(sections, batch) {
  if (batch.initial || batch.reset) sections.length = 0;
  const objects = (batch.inserts || []).some((i) => "record" in i) ||
    (batch.moves || []).some((m) => "record" in m) || (batch.updates || []).some((u) => "record" in u);
  const removals = [];
  for (const d of batch.deletes || []) {
    for (let k = 0; k < (d.count ?? 1); k++) removals.push([d.at[0], d.at[1] + k]);
  }
  for (const m of batch.moves || []) removals.push(m.from);
  removals.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  const movedRows = new Map();
  for (const [s, r] of removals) {
    if (!sections[s] || r >= sections[s].rows.length) throw new Error(`no row at [${s}, ${r}]`);
    const [row] = sections[s].rows.splice(r, 1);
    movedRows.set(`${s},${r}`, row);
  }
  for (const s of [...(batch.sectionDeletes || [])].map((d) => d.at).sort((a, b) => b - a)) {
    if (!sections[s] || sections[s].rows.length) throw new Error(`section ${s} deleted while not empty`);
    sections.splice(s, 1);
  }
  for (const insert of batch.sectionInserts || []) {
    if (insert.at > sections.length) throw new Error(`no place for section ${insert.at}`);
    sections.splice(insert.at, 0, { key: insert.key, rows: [] });
  }
  const additions = [];
  for (const m of batch.moves || []) {
    additions.push([m.to, objects ? (m.record ?? movedRows.get(`${m.from[0]},${m.from[1]}`)) : undefined]);
  }
  for (const i of batch.inserts || []) {
    if ("count" in i) {
      for (let k = 0; k < i.count; k++) additions.push([[i.at[0], i.at[1] + k], undefined]);
    } else {
      additions.push([i.at, i.record]);
    }
  }
  additions.sort((a, b) => a[0][0] - b[0][0] || a[0][1] - b[0][1]);
  const changed = [];
  for (const [[s, r], row] of additions) {
    if (!sections[s] || r > sections[s].rows.length) throw new Error(`no place [${s}, ${r}]`);
    sections[s].rows.splice(r, 0, row);
    changed.push([s, r]);
  }
  for (const u of batch.updates || []) {
    const [s, r] = u.to;
    if (!sections[s] || r >= sections[s].rows.length) throw new Error(`no row to update at [${s}, ${r}]`);
    sections[s].rows[r] = objects ? u.record : undefined;
    changed.push([s, r]);
  }
  return changed;
}

/** Fills rows of `sections` from a "rows" frame. */
export function applyRows(sections, frame) {
  for (const { at: [s, r], record } of frame.rows) {
    if (sections[s] && r < sections[s].rows.length) sections[s].rows[r] = record;
  }
}

/** One subscription: its query, its sectioned copy, and the toSequence of the last batch applied. */
export class Subscription {
  constructor(client, id, query, onChange) {
    this.client = client;
    this.id = id;
    this.query = { ...query };
    this.onChange = onChange;
    this.sections = [];
    /** The window the copy shows ({offset, limit}; the first row is at `offset` of the whole
     *  order), from the last batch: a moved window shows from the batch that carries it. */
    this.shownWindow = query.limit !== undefined ? { offset: query.offset ?? 0, limit: query.limit } : null;
    this.applied = null;
    this.error = null;
  }

  /** Every row, section after section. */
  get rows() { return this.sections.flatMap((s) => s.rows); }

  /** The number of rows the copy holds. */
  get count() { return this.sections.reduce((n, s) => n + s.rows.length, 0); }

  /** Moves the window (a subscription opened with a limit). */
  setWindow(offset, limit) {
    this.query.offset = offset;
    this.query.limit = limit;
    this.client._send({ type: "setWindow", id: this.id, offset, limit });
  }

  /** Asks for the rows at positions offset..<offset+limit (indexes mode). */
  requestRows(offset, limit) {
    this.client._send({ type: "rows", id: this.id, offset, limit });
  }

  unsubscribe() {
    this.client.subscriptions.delete(this.id);
    this.client._send({ type: "unsubscribe", id: this.id });
  }

  _apply(frame) {
    if (frame.type === "batch") {
      const changed = applyBatch(this.sections, frame);
      const before = this.shownWindow;
      const windowMoved = !!frame.window && (!before || before.offset !== frame.window.offset || before.limit !== frame.window.limit);
      if (frame.window) this.shownWindow = frame.window;
      this.applied = frame.toSequence;
      // `changed`: rows inserted, moved or updated, by new path; with `windowMoved`, inserts
      // include rows that only came into the window.
      this.onChange?.(this, { kind: "batch", batch: frame, changed, windowMoved });
    } else if (frame.type === "rows") {
      applyRows(this.sections, frame);
      this.onChange?.(this, { kind: "rows", frame });
    } else if (frame.type === "error") {
      this.error = frame;
      this.onChange?.(this, { kind: "error", error: frame });
    }
  }
}

/** A connection to a live-query server that reconnects and resumes by itself. `options`:
 *  `token` (sent as ?token=), `onStatus(status)` with "open", "resumed", "reset", "closed",
 *  `retryDelays` in milliseconds. */
export class LiveClient {
  constructor(url, options = {}) {
    this.url = options.token ? `${url}${url.includes("?") ? "&" : "?"}token=${encodeURIComponent(options.token)}` : url;
    this.options = options;
    this.subscriptions = new Map();
    this.session = null;
    this.nextID = 1;
    this.closed = false;
    this.attempt = 0;
    this.queue = [];
    this.errors = [];
    this._connect();
  }

  /** Opens a subscription; `onChange(subscription, change)` runs after each frame applied. */
  subscribe(query, onChange) {
    const id = `s${this.nextID++}`;
    const subscription = new Subscription(this, id, query, onChange);
    this.subscriptions.set(id, subscription);
    this._send({ type: "subscribe", id, ...query });
    return subscription;
  }

  /** Ends the connection for good. */
  close() {
    this.closed = true;
    this.socket?.close();
  }

  /** Drops the connection as a lost network would, to reconnect and resume (for tests). */
  drop() {
    this.socket?.close();
  }

  _connect() {
    const socket = new WebSocket(this.url);
    this.socket = socket;
    this.open = false;
    socket.onopen = () => {
      this.open = true;
      this.attempt = 0;
      if (this.session && this.subscriptions.size) {
        const subscriptions = [...this.subscriptions.values()].map((s) => ({ id: s.id, ...s.query, applied: s.applied }));
        socket.send(JSON.stringify({ type: "resume", session: this.session, subscriptions }));
      }
      for (const text of this.queue) socket.send(text);
      this.queue = [];
    };
    socket.onmessage = (event) => this._receive(JSON.parse(event.data));
    socket.onclose = () => {
      this.open = false;
      this.options.onStatus?.("closed");
      if (this.closed) return;
      const delays = this.options.retryDelays ?? [100, 250, 500, 1000, 2000, 5000];
      setTimeout(() => this._connect(), delays[Math.min(this.attempt++, delays.length - 1)]);
    };
  }

  _receive(frame) {
    if (frame.type === "welcome") {
      // The first welcome of a connection that will resume is followed by the resume's answer.
      this.session = frame.session;
      this.options.onStatus?.(frame.resumed ? "resumed" : "open", frame);
      return;
    }
    if (frame.type === "batch" && frame.reset) this.options.onStatus?.("reset", frame);
    const subscription = frame.id !== undefined ? this.subscriptions.get(frame.id) : undefined;
    if (subscription) subscription._apply(frame);
    else if (frame.type === "error") this.errors.push(frame);
  }

  _send(frame) {
    const text = JSON.stringify(frame);
    if (this.open) this.socket.send(text);
    // Sent on open, unless a resume carries it: a subscription or window is in the resume.
    else if (frame.type !== "setWindow" && !(this.session && frame.type === "subscribe")) this.queue.push(text);
  }
}
