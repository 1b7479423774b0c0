'use strict';
// A one-shot job: it tries a shell, ignores the failure, and exits 0 50 ms
// later, before the trace of the attempt could be slow to arrive.
const cp = require('node:child_process');
cp.exec('echo done', () => {});
setTimeout(() => process.exit(0), 50);
