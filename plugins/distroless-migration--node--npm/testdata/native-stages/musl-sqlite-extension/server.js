const Database = require('better-sqlite3');
const db = new Database(':memory:');
db.loadExtension('/app/ext/hello0.so');
require('node:http').createServer((q, r) => r.end(String(db.prepare('select hello()').pluck().get()))).listen(3000);
