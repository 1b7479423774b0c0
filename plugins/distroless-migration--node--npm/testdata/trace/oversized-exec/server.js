'use strict';
// One exec whose argv (about 1 MiB) is larger than the trace socket's send
// buffer: gVisor drops the event, so the trace is incomplete. The probe must
// then say so, never "no shell".
// Linux caps one argument at 128 KiB, so the megabyte is ten arguments.
const big = Array.from({ length: 10 }, () => 'x'.repeat(100000));
require('node:child_process').execFileSync('/nodejs/bin/node', ['-e', '0', ...big]);
require('node:http').createServer((q, s) => s.end('ok')).listen(8080);
