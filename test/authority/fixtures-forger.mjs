// The agent's background writer: started with `nohup node forger.mjs … &` while the session is
// healthy, it appends approval records with a valid hash chain through the ledger's own writer.
// argv: <dist dir> <ledger> <json list of records>

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, ledgerPath, json] = process.argv.slice(2);
const { Ledger } = await import(pathToFileURL(join(dist, 'ledger', 'ledger.js')).href);
const ledger = Ledger.open(ledgerPath);
try {
  await ledger.appendBatch(JSON.parse(json));
} finally {
  await ledger.close();
}
