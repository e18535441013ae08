// The phone's copy of what it has seen, in IndexedDB: each session's events (by seq) and snapshot,
// and the last overview. It is drawn at start and whenever the relay or the Mac is unreachable.
// Every call degrades to "nothing cached" when storage is unavailable (private mode, quota).

const DB_NAME = "claude-bridge";
const VERSION = 1;
const KEEP_EVENTS = 3000; // per session

let opening = null;

function open() {
  if (opening) return opening;
  opening = new Promise((resolve) => {
    let request;
    try {
      request = indexedDB.open(DB_NAME, VERSION);
    } catch (_) {
      resolve(null);
      return;
    }
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains("events")) db.createObjectStore("events", { keyPath: ["session_id", "seq"] });
      if (!db.objectStoreNames.contains("snapshots")) db.createObjectStore("snapshots", { keyPath: "id" });
      if (!db.objectStoreNames.contains("kv")) db.createObjectStore("kv");
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => resolve(null);
    request.onblocked = () => resolve(null);
  });
  return opening;
}

function done(tx) {
  return new Promise((resolve) => {
    tx.oncomplete = () => resolve(true);
    tx.onerror = () => resolve(false);
    tx.onabort = () => resolve(false);
  });
}

function result(request) {
  return new Promise((resolve) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => resolve(undefined);
  });
}

const range = (sid) => IDBKeyRange.bound([sid, -Infinity], [sid, Infinity]);

/** Every cached event of a session, oldest first. */
export async function loadEvents(sid) {
  const db = await open();
  if (!db) return [];
  const tx = db.transaction("events", "readonly");
  return (await result(tx.objectStore("events").getAll(range(sid)))) || [];
}

export async function saveEvents(events) {
  const db = await open();
  if (!db || !events.length) return;
  const tx = db.transaction("events", "readwrite");
  const store = tx.objectStore("events");
  for (const ev of events) store.put(ev);
  await done(tx);
}

/** Keep only the newest ``KEEP_EVENTS`` events of a session. */
export async function trimEvents(sid) {
  const db = await open();
  if (!db) return;
  const tx = db.transaction("events", "readwrite");
  const store = tx.objectStore("events");
  const count = await result(store.count(range(sid)));
  if (count > KEEP_EVENTS) {
    const keys = (await result(store.getAllKeys(range(sid), count - KEEP_EVENTS))) || [];
    if (keys.length) store.delete(IDBKeyRange.bound(keys[0], keys[keys.length - 1]));
  }
  await done(tx);
}

export async function clearSession(sid) {
  const db = await open();
  if (!db) return;
  const tx = db.transaction(["events", "snapshots"], "readwrite");
  tx.objectStore("events").delete(range(sid));
  tx.objectStore("snapshots").delete(sid);
  await done(tx);
}

export async function loadSnapshot(sid) {
  const db = await open();
  if (!db) return null;
  return (await result(db.transaction("snapshots", "readonly").objectStore("snapshots").get(sid))) || null;
}

export async function saveSnapshot(snapshot) {
  const db = await open();
  if (!db || !snapshot || !snapshot.id) return;
  const tx = db.transaction("snapshots", "readwrite");
  tx.objectStore("snapshots").put(snapshot);
  await done(tx);
}

export async function getItem(key) {
  const db = await open();
  if (!db) return null;
  return (await result(db.transaction("kv", "readonly").objectStore("kv").get(key))) ?? null;
}

export async function setItem(key, value) {
  const db = await open();
  if (!db) return;
  const tx = db.transaction("kv", "readwrite");
  tx.objectStore("kv").put(value, key);
  await done(tx);
}

/** Forget everything (log out): the next person on this phone sees nothing of it. */
export async function wipe() {
  const db = await open();
  if (!db) return;
  const tx = db.transaction(["events", "snapshots", "kv"], "readwrite");
  for (const name of ["events", "snapshots", "kv"]) tx.objectStore(name).clear();
  await done(tx);
}
